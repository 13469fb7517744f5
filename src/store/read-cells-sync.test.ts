/**
 * `AtomicRowsStore.readCellsSync`, the transaction layer's unfiltered point read: the cells of
 * the locality groups holding the named families, in canonical order, with GC rules applied, on
 * `memory:` and `file:`; and a schema change is seen by the next read (the groups are remembered
 * per families array and table schema).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isStoreError } from './errors.js';
import { openStore } from './open-store.js';
import { type AtomicRowsStore, atomicRowsOf } from './store.js';
import type { Cell, Mutation } from './types.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const b = (s: string) => Buffer.from(s);
const set = (family: string, col: string, value: string, ts: number): Mutation => ({
  setCell: { familyName: family, columnQualifier: b(col), timestampMicros: ts, value: b(value) },
});
const shape = (cells: readonly Cell[]) => cells.map((c) => `${c.family}:${Buffer.from(c.qualifier).toString()}@${c.timestamp}`);

for (const kind of ['memory:', 'file:'] as const) {
  describe(`readCellsSync on ${kind}`, () => {
    const open = async (): Promise<AtomicRowsStore> => {
      let url: string = kind;
      if (kind === 'file:') {
        const dir = await mkdtemp(join(tmpdir(), 'percolator-cells-'));
        dirs.push(dir);
        url = `file:${dir}`;
      }
      const store = atomicRowsOf(await openStore(url, { gcIntervalMs: 0 }));
      if (store === null) throw new Error('embedded stores implement the atomic extension');
      await store.createTable('t', {
        families: { a: { gcRule: { maxNumVersions: 1 } }, b: {}, n: { localityGroup: 'side' } },
      });
      return store;
    };

    it("returns the row's cells of the named families' groups, canonical order, GC applied", async () => {
      const store = await open();
      await store.mutateRow('t', b('r'), [set('a', 'x', '1', 10), set('a', 'x', '2', 20), set('b', 'y', '3', 5), set('b', 'y', '4', 7)]);
      await store.mutateRow('t', b('r'), [set('n', 'z', '5', 9)]);
      const families = ['a'];
      // b shares a's group, so it comes along; n's group is never read; a keeps one version.
      expect(shape(store.readCellsSync('t', b('r'), families))).toEqual(['a:x@20', 'b:y@7', 'b:y@5']);
      expect(shape(store.readCellsSync('t', b('r'), ['n']))).toEqual(['n:z@9']);
      expect(shape(store.readCellsSync('t', b('r'), ['a', 'n']))).toEqual(['a:x@20', 'b:y@7', 'b:y@5', 'n:z@9']);
      expect(store.readCellsSync('t', b('absent'), families)).toEqual([]);
      expect(store.readCellsSync('t', b('r'), ['unknown'])).toEqual([]);
      await store.close();
    });

    it('sees a new family in a new group after a schema change, with the same families array', async () => {
      const store = await open();
      const families = ['c'];
      expect(store.readCellsSync('t', b('r'), families)).toEqual([]);
      await store.modifyColumnFamilies('t', [{ id: 'c', create: { localityGroup: 'third' } }]);
      await store.mutateRow('t', b('r'), [set('c', 'w', '6', 3), set('a', 'x', '1', 10)]);
      expect(shape(store.readCellsSync('t', b('r'), families))).toEqual(['c:w@3']);
      await store.close();
    });

    it('rejects an unknown table and an empty row key with typed errors', async () => {
      const store = await open();
      const codeOf = (f: () => unknown) => {
        try {
          f();
          return null;
        } catch (e) {
          return isStoreError(e) ? e.code : 'untyped';
        }
      };
      expect(codeOf(() => store.readCellsSync('nope', b('r'), ['a']))).toBe('TABLE_NOT_FOUND');
      expect(codeOf(() => store.readCellsSync('t', new Uint8Array(0), ['a']))).toBe('EMPTY_ROW_KEY');
      await store.close();
    });
  });
}
