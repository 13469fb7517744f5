import { describe, expect, it } from 'vitest';
import { FifoSet } from './fifo-set.js';

describe('FifoSet', () => {
  it('forgets the oldest members beyond its capacity, and says when it did', () => {
    const s = new FifoSet<number>(3);
    expect([s.add(1), s.add(2), s.add(3)]).toEqual([false, false, false]);
    expect(s.add(2)).toBe(false); // present: no-op
    expect(s.add(4)).toBe(true); // 1 goes
    expect([1, 2, 3, 4].map((v) => s.has(v))).toEqual([false, true, true, true]);
    expect(s.add(5)).toBe(true); // 2 goes
    expect([2, 3, 4, 5].map((v) => s.has(v))).toEqual([false, true, true, true]);
    expect(s.size).toBe(3);
  });

  it('evicts in insertion order at scale', () => {
    const s = new FifoSet<number>(100_000);
    for (let i = 0; i < 400_000; i++) s.add(i);
    expect(s.size).toBe(100_000);
    expect(s.has(299_999)).toBe(false);
    expect(s.has(300_000)).toBe(true);
  });
});
