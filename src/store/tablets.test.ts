import { describe, expect, it } from 'vitest';
import { Tablets } from './tablets.js';

const b = (s: string) => Buffer.from(s);

describe('Tablets', () => {
  it('finds the tablet of a key and reports cumulative samples ending with the empty key', () => {
    const t = new Tablets();
    t.account(b('a'), 100);
    expect(t.split(0, b('m'), 60, 40)).toBe(true);
    expect(t.find(b('a'))).toBe(0);
    expect(t.find(b('m'))).toBe(1);
    expect(t.find(b('z'))).toBe(1);
    t.account(b('n'), 10);
    expect(t.samples().map((s) => [Buffer.from(s.key).toString(), s.offsetBytes])).toEqual([
      ['m', 60],
      ['', 110],
    ]);
  });

  it('refuses a split point outside the tablet and survives a JSON round trip', () => {
    const t = new Tablets();
    expect(t.split(0, b(''), 1, 1)).toBe(false);
    t.split(0, b('k'), 1, 1);
    expect(t.split(1, b('c'), 1, 1)).toBe(false);
    const again = new Tablets(JSON.parse(JSON.stringify(t.toJSON())));
    expect(again.starts.map((s) => Buffer.from(s).toString())).toEqual(['', 'k']);
  });
});
