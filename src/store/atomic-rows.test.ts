/**
 * The embedded backends' atomic multi-row extension (`AtomicRowsStore.checkAndMutateRows`), on
 * `memory:` and `file:` (including a reopen: what was written atomically is durable together).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isStoreError } from './errors.js';
import { openStore } from './open-store.js';
import { type AtomicRowsStore, type Store, atomicRowsOf } from './store.js';
import type { Mutation, RowFilter } from './types.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const b = (s: string) => Buffer.from(s);
const set = (col: string, value: string, ts = 1000): Mutation => ({
  setCell: { familyName: 'f', columnQualifier: b(col), timestampMicros: ts, value: b(value) },
});
/** Matches any cell of column `col` (the entry's veto). */
const has = (col: string): RowFilter => ({
  columnRangeFilter: { familyName: 'f', startQualifierClosed: b(col), endQualifierClosed: b(col) },
});

async function value(store: Store, table: string, row: string, col = 'c'): Promise<string | null> {
  const r = await store.readRow(table, b(row), has(col));
  const cell = r?.cells[0];
  return cell === undefined ? null : Buffer.from(cell.value).toString();
}

for (const kind of ['memory:', 'file:'] as const) {
  describe(`checkAndMutateRows on ${kind}`, () => {
    const open = async (): Promise<{ store: AtomicRowsStore; url: string }> => {
      let url: string = kind;
      if (kind === 'file:') {
        const dir = await mkdtemp(join(tmpdir(), 'percolator-atomic-'));
        dirs.push(dir);
        url = `file:${dir}`;
      }
      const store = atomicRowsOf(await openStore(url));
      if (store === null) throw new Error('embedded stores implement the atomic extension');
      await store.createTable('a', { families: { f: {} } });
      await store.createTable('b', { families: { f: {} } });
      return { store, url };
    };

    it('writes every row of every table when no predicate matches', async () => {
      const { store, url } = await open();
      const at = await store.checkAndMutateRows([
        { table: 'a', key: b('r1'), predicateFilter: has('c'), mutations: [set('c', 'one')] },
        { table: 'a', key: b('r2'), predicateFilter: has('c'), mutations: [set('c', 'two')] },
        { table: 'b', key: b('r1'), mutations: [set('c', 'three')] },
      ]);
      expect(at).toBe(-1);
      expect([await value(store, 'a', 'r1'), await value(store, 'a', 'r2'), await value(store, 'b', 'r1')]).toEqual([
        'one',
        'two',
        'three',
      ]);
      if (kind === 'file:') {
        await store.close();
        const again = await openStore(url);
        expect([await value(again, 'a', 'r1'), await value(again, 'a', 'r2'), await value(again, 'b', 'r1')]).toEqual([
          'one',
          'two',
          'three',
        ]);
        await again.close();
      } else {
        await store.close();
      }
    });

    it('writes nothing and names the first vetoing entry when a predicate matches', async () => {
      const { store } = await open();
      await store.mutateRow('a', b('r2'), [set('c', 'old')]);
      const at = await store.checkAndMutateRows([
        { table: 'a', key: b('r1'), predicateFilter: has('c'), mutations: [set('c', 'new1')] },
        { table: 'a', key: b('r2'), predicateFilter: has('c'), mutations: [set('c', 'new2')] },
        { table: 'b', key: b('r3'), predicateFilter: has('c'), mutations: [set('c', 'new3')] },
      ]);
      expect(at).toBe(1);
      expect([await value(store, 'a', 'r1'), await value(store, 'a', 'r2'), await value(store, 'b', 'r3')]).toEqual([null, 'old', null]);
      await store.close();
    });

    it('rejects bad input before writing anything', async () => {
      const { store } = await open();
      const twice = store.checkAndMutateRows([
        { table: 'a', key: b('r'), mutations: [set('c', 'x')] },
        { table: 'a', key: b('r'), mutations: [set('d', 'y')] },
      ]);
      await expect(twice).rejects.toSatisfy((e: unknown) => isStoreError(e, 'INVALID_ARGUMENT'));
      const badFamily = store.checkAndMutateRows([
        { table: 'a', key: b('r'), mutations: [set('c', 'x')] },
        {
          table: 'b',
          key: b('r'),
          mutations: [{ setCell: { familyName: 'nope', columnQualifier: b('c'), timestampMicros: 1, value: b('') } }],
        },
      ]);
      await expect(badFamily).rejects.toSatisfy((e: unknown) => isStoreError(e));
      const noTable = store.checkAndMutateRows([{ table: 'zz', key: b('r'), mutations: [set('c', 'x')] }]);
      await expect(noTable).rejects.toSatisfy((e: unknown) => isStoreError(e, 'TABLE_NOT_FOUND'));
      expect(await value(store, 'a', 'r')).toBeNull();
      await store.close();
    });

    it('serializes with single-row writers: concurrent conditional writers of overlapping rows never both win', async () => {
      const { store } = await open();
      // Each writer claims two of five rows, vetoed by any existing claim: rows must end up claimed
      // by exactly one writer each, and each winner holds both of its rows.
      const writers = Array.from({ length: 40 }, (_, i) => [`r${i % 5}`, `r${(i * 3 + 1) % 5}`] as const).filter(([x, y]) => x !== y);
      const results = await Promise.all(
        writers.map(([x, y], i) =>
          i % 3 === 0
            ? store
                .checkAndMutateRow('a', b(x), { predicateFilter: has('c'), falseMutations: [set('c', `w${i}`)] })
                .then((matched) => (matched ? 0 : -1))
            : store.checkAndMutateRows([
                { table: 'a', key: b(x), predicateFilter: has('c'), mutations: [set('c', `w${i}`)] },
                { table: 'a', key: b(y), predicateFilter: has('c'), mutations: [set('c', `w${i}`)] },
              ]),
        ),
      );
      const owners = await Promise.all([0, 1, 2, 3, 4].map((k) => value(store, 'a', `r${k}`)));
      writers.forEach(([x, y], i) => {
        if (results[i] !== -1) return;
        expect(owners[Number(x.slice(1))]).toBe(`w${i}`);
        if (i % 3 !== 0) expect(owners[Number(y.slice(1))]).toBe(`w${i}`);
      });
      for (const o of owners) {
        if (o === null) continue;
        expect(results[Number(o.slice(1))]).toBe(-1);
      }
      await store.close();
    });

    it('is shared only once marked', async () => {
      const { store } = await open();
      expect(store.shared).toBe(false);
      store.markShared();
      expect(store.shared).toBe(true);
      await store.close();
    });

    it('is shared while any share is held; a release counts once', async () => {
      const { store } = await open();
      const first = store.markShared();
      const second = store.markShared();
      first();
      first(); // idempotent: must not take the second holder's share away
      expect(store.shared).toBe(true);
      second();
      expect(store.shared).toBe(false);
      await store.close();
    });
  });
}

describe('checkAndMutateRows with an in-process veto', () => {
  it("vetoes from the row's cells of the named families, and writes otherwise", async () => {
    const store = atomicRowsOf(await openStore('memory:'));
    if (store === null) throw new Error('embedded stores implement the atomic extension');
    await store.createTable('a', { families: { f: {}, g: { localityGroup: 'other' } } });
    await store.mutateRow('a', b('r'), [set('c', 'old', 5000)]);
    const seen: string[][] = [];
    const veto = (limit: number) => ({
      families: ['f'],
      test: (cells: readonly { family: string; timestamp: number }[]) => {
        seen.push(cells.map((c) => `${c.family}@${c.timestamp}`));
        return cells.some((c) => c.timestamp >= limit);
      },
    });
    expect(await store.checkAndMutateRows([{ table: 'a', key: b('r'), veto: veto(1000), mutations: [set('c', 'new', 6000)] }])).toBe(0);
    expect(await store.checkAndMutateRows([{ table: 'a', key: b('r'), veto: veto(9000), mutations: [set('c', 'new', 6000)] }])).toBe(-1);
    expect(seen).toEqual([['f@5000'], ['f@5000']]);
    expect(await value(store, 'a', 'r')).toBe('new');
    await store.close();
  });
});
