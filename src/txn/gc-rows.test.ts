import { describe, expect, it } from 'vitest';
import type { Mutation } from '../store/types.js';
import { type DeletionGroup, chunkDeletions } from './gc-rows.js';

/** A group of `n` deletions of column `q` (family write first, then data), removing `versions`. */
function group(q: string, n: number, versions = 1): DeletionGroup {
  const mutations: Mutation[] = [];
  for (let i = 0; i < n; i++) {
    mutations.push({
      deleteFromColumn: {
        familyName: i === 0 ? 'write' : 'data',
        columnQualifier: Buffer.from(q),
        timeRange: { startTimestampMicros: i, endTimestampMicros: i + 1 },
      },
    });
  }
  return { mutations, versions };
}
const names = (chunks: DeletionGroup[]): string[][] =>
  chunks.map((c) =>
    c.mutations.map((m) => {
      const d = (m as Extract<Mutation, { deleteFromColumn: unknown }>).deleteFromColumn;
      return `${Buffer.from(d.columnQualifier).toString()}.${d.familyName}`;
    }),
  );

describe('chunkDeletions', () => {
  it('fills row mutations up to the limit in order, never splitting a group, and counts the versions of each', () => {
    const groups = [group('a', 2), group('b', 1, 3), group('c', 2), group('d', 2, 2), group('e', 1)];
    const chunks = chunkDeletions(groups, 4);
    expect(names(chunks)).toEqual([['a.write', 'a.data', 'b.write'], ['c.write', 'c.data', 'd.write', 'd.data'], ['e.write']]);
    expect(chunks.map((c) => c.versions)).toEqual([4, 3, 1]);
  });

  it('one row mutation when everything fits, none when there is nothing', () => {
    expect(chunkDeletions([group('a', 2), group('b', 2)], 4).length).toBe(1);
    expect(chunkDeletions([], 4)).toEqual([]);
  });

  it('splits a group only when it alone exceeds the limit, write record first, its versions counted once', () => {
    const chunks = chunkDeletions([group('a', 2, 5), group('b', 1)], 1);
    expect(names(chunks)).toEqual([['a.write'], ['a.data'], ['b.write']]);
    expect(chunks.map((c) => c.versions)).toEqual([0, 5, 1]);
  });
});
