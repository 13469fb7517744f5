import { describe, expect, it } from 'vitest';
import { type Posting, repost } from './repost.js';

/** The postings a cluster's rows hold after applying `r` to `before` (term → bucket). */
function apply(before: Map<string, number>, r: ReturnType<typeof repost>): Map<string, number> {
  const after = new Map(before);
  for (const [t, b] of r.set) after.set(t, b);
  for (const t of r.del) after.delete(t);
  return after;
}

describe('repost', () => {
  it('writes new terms and changed buckets, keeps the terms that left as stale, and deletes nothing', () => {
    const r = repost(
      [
        ['apple', 2],
        ['fruit', 3],
      ],
      [],
      [
        ['banana', 2],
        ['fruit', 4],
      ],
    );
    expect(r.set).toEqual([
      ['banana', 2],
      ['fruit', 4],
    ]);
    expect(r.del).toEqual([]);
    expect(r.stale).toEqual([['apple', 2]]);
  });

  it('makes a stale posting live again without a write when its bucket is unchanged, and rewrites it when not', () => {
    const stale: Posting[] = [
      ['apple', 2],
      ['orchard', 1],
    ];
    const r = repost([['banana', 2]], stale, [
      ['apple', 2],
      ['orchard', 3],
    ]);
    expect(r.set).toEqual([['orchard', 3]]);
    expect(r.stale).toEqual([['banana', 2]]);
  });

  it('bounds the stale list, deleting the oldest first', () => {
    const r = repost(
      [
        ['c', 1],
        ['d', 1],
      ],
      [
        ['a', 1],
        ['b', 1],
      ],
      [['e', 1]],
      3,
    );
    expect(r.del).toEqual(['a']);
    expect(r.stale).toEqual([
      ['b', 1],
      ['c', 1],
      ['d', 1],
    ]);
  });

  it('keeps the rows equal to the live and stale lists over random changes', () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    let rows = new Map<string, number>();
    let live: Posting[] = [];
    let stale: Posting[] = [];
    for (let step = 0; step < 500; step++) {
      const next = new Map<string, number>();
      for (let i = rand(8); i > 0; i--) next.set(`t${rand(20)}`, 1 + rand(3));
      const r = repost(live, stale, [...next], 5);
      rows = apply(rows, r);
      live = [...next];
      stale = [...r.stale];
      expect(stale.length).toBeLessThanOrEqual(5);
      expect(stale.some(([t]) => next.has(t))).toBe(false);
      expect(rows).toEqual(new Map([...stale, ...live]));
    }
  });
});
