/**
 * `AtomicRowsStore.readCellsSync`, the transaction layer's unfiltered point read: the cells of
 * the locality groups holding the named families, in canonical order, with GC rules applied, on
 * `memory:` and `file:`; and a schema change is seen by the next read (the groups are remembered
 * per families array and table schema). And `readDerivedSync`: a function of those cells, kept
 * with the cached row until the row changes.
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

    describe('readDerivedSync', () => {
      /** A counting derive: the cells' shape, in a fresh object per call. */
      const counting = () => {
        const d = Object.assign(
          (cells: readonly Cell[]) => {
            d.calls++;
            return { shape: shape(cells) };
          },
          { calls: 0 },
        );
        return d;
      };
      const openPlain = async (options: { cacheBytes?: number } = {}): Promise<AtomicRowsStore> => {
        let url: string = kind;
        if (kind === 'file:') {
          const dir = await mkdtemp(join(tmpdir(), 'percolator-derived-'));
          dirs.push(dir);
          url = `file:${dir}`;
        }
        const store = atomicRowsOf(await openStore(url, { gcIntervalMs: 0, ...options }));
        if (store === null) throw new Error('embedded stores implement the atomic extension');
        // No GC rule: what a read returns depends on the cells alone.
        await store.createTable('p', { families: { x: {}, y: {}, s: { localityGroup: 'side' } } });
        return store;
      };

      it('derives once per cached version of the row, and again after each change', async () => {
        const store = await openPlain();
        const d = counting();
        const fams = ['x'];
        await store.mutateRow('p', b('r'), [set('x', 'q', '1', 10), set('y', 'q', '2', 11)]);
        const first = store.readDerivedSync('p', b('r'), fams, d);
        expect(first).toEqual({ shape: ['x:q@10', 'y:q@11'] });
        expect(store.readDerivedSync('p', b('r'), fams, d)).toBe(first);
        expect(d.calls).toBe(1);
        await store.mutateRow('p', b('r'), [set('x', 'q', '3', 12)]);
        expect(store.readDerivedSync('p', b('r'), fams, d)).toEqual({ shape: ['x:q@12', 'x:q@10', 'y:q@11'] });
        await store.mutateRow('p', b('r'), [{ deleteFromColumn: { familyName: 'x', columnQualifier: b('q') } }]);
        expect(store.readDerivedSync('p', b('r'), fams, d)).toEqual({ shape: ['y:q@11'] });
        await store.mutateRow('p', b('r'), [{ deleteFromRow: {} }]);
        expect(store.readDerivedSync('p', b('r'), fams, d)).toEqual({ shape: [] });
        expect(store.readDerivedSync('p', b('r'), fams, d)).toEqual({ shape: [] }); // absent rows are cached too
        expect(d.calls).toBe(4);
        // A write to another locality group leaves this group's entry (and its derived value) alone.
        await store.mutateRow('p', b('r'), [set('s', 'q', '4', 13)]);
        store.readDerivedSync('p', b('r'), fams, d);
        expect(d.calls).toBe(4);
        await store.close();
      });

      it('keeps one derived value per row: another function replaces it', async () => {
        const store = await openPlain();
        const d1 = counting();
        const d2 = counting();
        await store.mutateRow('p', b('r'), [set('x', 'q', '1', 10)]);
        for (let i = 0; i < 3; i++) {
          store.readDerivedSync('p', b('r'), ['x'], d1);
          store.readDerivedSync('p', b('r'), ['x'], d2);
        }
        expect([d1.calls, d2.calls]).toEqual([3, 3]);
        await store.close();
      });

      it('derives on every read when the row is not kept: GC rules, several groups, no cache', async () => {
        const ruled = await open(); // family a has a GC rule
        const d = counting();
        await ruled.mutateRow('t', b('r'), [set('a', 'x', '1', 10), set('a', 'x', '2', 20)]);
        expect(ruled.readDerivedSync('t', b('r'), ['a'], d)).toEqual({ shape: ['a:x@20'] });
        ruled.readDerivedSync('t', b('r'), ['a'], d);
        expect(d.calls).toBe(2);
        await ruled.close();

        const plain = await openPlain();
        const both = ['x', 's'];
        await plain.mutateRow('p', b('r'), [set('x', 'q', '1', 10), set('s', 'q', '2', 11)]);
        expect(plain.readDerivedSync('p', b('r'), both, d)).toEqual({ shape: ['s:q@11', 'x:q@10'] });
        plain.readDerivedSync('p', b('r'), both, d);
        expect(d.calls).toBe(4);
        await plain.close();

        const uncached = await openPlain({ cacheBytes: 0 });
        await uncached.mutateRow('p', b('r'), [set('x', 'q', '1', 10)]);
        expect(uncached.readDerivedSync('p', b('r'), ['x'], d)).toEqual({ shape: ['x:q@10'] });
        uncached.readDerivedSync('p', b('r'), ['x'], d);
        expect(d.calls).toBe(6);
        await uncached.close();
      });

      it('takes the row as its bytesKey too: the same cached entry as the bytes, from the engine on a miss', async () => {
        const store = await openPlain();
        const d = counting();
        const row = Uint8Array.of(0x72, 0xe9, 0x00, 0xff); // not ASCII, not UTF-8: a latin1 key still names it
        const key = Buffer.from(row).toString('latin1');
        await store.mutateRow('p', row, [set('x', 'q', '1', 10)]);
        const first = store.readDerivedSync('p', key, ['x'], d);
        expect(first).toEqual({ shape: ['x:q@10'] });
        expect(store.readDerivedSync('p', row, ['x'], d)).toBe(first);
        expect(d.calls).toBe(1);
        // Several groups (no cached derived value): the key is turned into bytes for the read.
        await store.mutateRow('p', row, [set('s', 'q', '2', 11)]);
        expect(store.readDerivedSync('p', key, ['x', 's'], d)).toEqual({ shape: ['s:q@11', 'x:q@10'] });
        await store.close();
        if (kind === 'file:') {
          // A row not in the cache is loaded from the engine by its key.
          const url = `file:${dirs[dirs.length - 1] as string}`;
          const reopened = atomicRowsOf(await openStore(url, { gcIntervalMs: 0 }));
          if (reopened === null) throw new Error('embedded stores implement the atomic extension');
          expect(reopened.readDerivedSync('p', key, ['x'], counting())).toEqual({ shape: ['x:q@10'] });
          expect(reopened.readDerivedSync('p', 'absent', ['x'], counting())).toEqual({ shape: [] });
          await reopened.close();
        }
      });

      it('passes on what derive throws and keeps nothing from it', async () => {
        const store = await openPlain();
        await store.mutateRow('p', b('r'), [set('x', 'q', '1', 10)]);
        let fail = true;
        const d = (cells: readonly Cell[]) => {
          if (fail) throw new Error('boom');
          return { n: cells.length };
        };
        expect(() => store.readDerivedSync('p', b('r'), ['x'], d)).toThrow('boom');
        fail = false;
        expect(store.readDerivedSync('p', b('r'), ['x'], d)).toEqual({ n: 1 });
        await store.close();
      });
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
      const d = () => ({});
      expect(codeOf(() => store.readDerivedSync('nope', b('r'), ['a'], d))).toBe('TABLE_NOT_FOUND');
      expect(codeOf(() => store.readDerivedSync('t', new Uint8Array(0), ['a'], d))).toBe('EMPTY_ROW_KEY');
      // The same checks for a row given as its bytesKey.
      expect(codeOf(() => store.readDerivedSync('nope', 'r', ['a'], d))).toBe('TABLE_NOT_FOUND');
      expect(codeOf(() => store.readDerivedSync('t', '', ['a'], d))).toBe('EMPTY_ROW_KEY');
      expect(codeOf(() => store.readDerivedSync('t', 'r'.repeat(4097), ['a'], d))).toBe('ROW_KEY_TOO_LARGE');
      expect(codeOf(() => store.readDerivedSync('t', 'r'.repeat(4096), ['a'], d))).toBeNull();
      await store.close();
    });
  });
}
