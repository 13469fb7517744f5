import { describe, expect, it } from 'vitest';
import { differingKeys } from './batch.js';

describe('differingKeys', () => {
  it('is empty for JSON-equal parts, whatever their key order', () => {
    expect(differingKeys({ a: [1, 2], b: { x: 'y' } }, { b: { x: 'y' }, a: [1, 2] })).toEqual([]);
  });

  it("names changed entries and got's extra keys in got's order, then want's extra keys", () => {
    const got = { a: 1, b: 2, c: 3 };
    const want = { d: 4, c: 3, b: 5 };
    expect(differingKeys(got, want)).toEqual(['a', 'b', 'd']);
  });

  it('counts a key as present only when the object itself has it, not its prototype', () => {
    expect(differingKeys({ constructor: 1 }, {})).toEqual(['constructor']);
    expect(differingKeys({}, { toString: 'x' })).toEqual(['toString']);
    expect(differingKeys(Object.fromEntries([['__proto__', 1]]), {})).toEqual(['__proto__']);
  });
});
