import { describe, expect, it } from 'vitest';
import { freshIdCandidate, keptClusterIds } from './cluster-ids.js';

/** keptClusterIds over a table of member → [previous id, keys now]. */
function kept(components: string[][], members: Record<string, [string | null, string[]]>) {
  return keptClusterIds(
    components,
    (m) => members[m]?.[0] ?? null,
    (m) => members[m]?.[1] ?? [],
  );
}

describe('keptClusterIds', () => {
  it('keeps a cluster id when a member with a smaller key joins, and leaves new clusters to be named', () => {
    const members: Record<string, [string | null, string[]]> = {
      a: ['fp:9', ['fp:9', 'title:x']],
      b: [null, ['fp:1', 'title:x']],
      c: [null, ['fp:5']],
    };
    expect(kept([['a', 'b'], ['c']], members)).toEqual(['fp:9', null]);
  });

  it('gives a merged cluster the id most of its members had, and the smaller id on a tie', () => {
    const members: Record<string, [string | null, string[]]> = {
      a: ['k:a', ['k:a']],
      b: ['k:b', ['k:b', 'k:x']],
      c: ['k:b', ['k:b']],
      d: ['k:d', ['k:d', 'k:x']],
    };
    expect(kept([['a', 'b', 'c']], members)).toEqual(['k:b']);
    expect(kept([['a', 'd']], members)).toEqual(['k:a']);
  });

  it('leaves a split id with the larger part, or on a tie with the part still carrying it as a key', () => {
    const members: Record<string, [string | null, string[]]> = {
      a: ['fp:1', ['fp:7']], // left, with new content
      b: ['fp:1', ['fp:1']],
      c: ['fp:1', ['fp:3']],
      d: ['fp:1', ['fp:3']],
    };
    expect(kept([['a'], ['b'], ['c', 'd']], members)).toEqual([null, null, 'fp:1']);
    expect(kept([['a'], ['b']], members)).toEqual([null, 'fp:1']);
  });

  it('never gives one id to two components, whatever the order', () => {
    const members: Record<string, [string | null, string[]]> = {};
    const components: string[][] = [];
    for (let i = 0; i < 60; i++) {
      members[`m${i}`] = [i % 7 === 0 ? null : `id${i % 5}`, [`k${i}`]];
      if (i % 3 === 0) components.push([]);
      components[components.length - 1]?.push(`m${i}`);
    }
    const ids = kept(components, members);
    const given = ids.filter((id) => id !== null);
    expect(new Set(given).size).toBe(given.length);
    // Every previous id present in some component is kept by one of them.
    expect([...new Set(given)].sort()).toEqual(['id0', 'id1', 'id2', 'id3', 'id4']);
    expect(kept([...components].reverse(), members)).toEqual([...ids].reverse());
  });
});

describe('freshIdCandidate', () => {
  it('is the smallest key, then the key with the start timestamp, then with a counter', () => {
    expect([0, 1, 2, 3].map((n) => freshIdCandidate('fp:ab', 42, n))).toEqual(['fp:ab', 'fp:ab#42', 'fp:ab#42.1', 'fp:ab#42.2']);
  });
});
