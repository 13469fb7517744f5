import { describe, expect, it } from 'vitest';
import { openStore } from '../../store/open-store.js';
import { atomicRowsOf, type Store } from '../../store/store.js';
import type { MutateRowsEntry } from '../../store/types.js';
import { isTxnError } from '../errors.js';
import { PERCOLATOR_TABLE_SPEC, clearNotifications, encodeColumn } from '../layout.js';
import { makeFixture } from '../txn.fixture.js';
import { commitOnePhase, onePhaseMutations } from './commit-one-phase.js';
import { commitMutationCount, commitMutations } from './commit.js';
import { prewriteMutationCount, prewriteMutations } from './prewrite.js';
import { rollBackMutationCount, rollBackRows } from './roll-back.js';
import { MAX_MUTATIONS_PER_CELL, checkRowLimits } from './row-limits.js';
import type { BufferedCell, BufferedRow } from './types.js';

/** Every shape a cell can take: a short put, a long put (its value in `data`), a delete; observed or not. */
const shapes: BufferedCell[] = (['short', 'long', 'delete'] as const).flatMap((kind, k) =>
  [false, true].map((notify, n) => ({
    column: `c:${k}${n}`,
    q: encodeColumn(`c:${k}${n}`),
    kind: kind === 'delete' ? 'delete' : 'put',
    value: kind === 'delete' ? null : Buffer.from(kind === 'long' ? 'x'.repeat(1000) : 'v'),
    notify,
  })),
);

const rowOf = (key: string, cells: readonly BufferedCell[]): BufferedRow => ({ table: 't', row: Buffer.from(key), cells });

/** What rollBackRows writes for `row`, recorded instead of sent. */
async function rollBackWrites(row: BufferedRow): Promise<number> {
  let n = -1;
  const recorder = {
    mutateRows: async (_table: string, entries: readonly MutateRowsEntry[]) => {
      n = (entries[0] as MutateRowsEntry).mutations.length;
      return entries.map((_, index) => ({ index }));
    },
  } as Partial<Store> as Store;
  await rollBackRows(recorder, [row], 100);
  return n;
}

describe('mutation counts (what checkRowLimits holds a row to)', () => {
  it.each(shapes.map((c) => [`${c.kind} ${c.value === null ? '' : c.value.byteLength} notify=${c.notify}`, c] as const))(
    'are the lengths of what each step writes, and at most MAX_MUTATIONS_PER_CELL a cell: %s',
    async (_, cell) => {
      const f = await makeFixture();
      const primary = rowOf('p', [cell]);
      const secondary = rowOf('s', [cell]);
      const template = f.template(primary);
      expect(prewriteMutationCount(primary, false)).toBe(prewriteMutations(primary, 100, template).length);
      expect(prewriteMutationCount(secondary, true)).toBe(prewriteMutations(secondary, 100, template).length);
      expect(commitMutationCount(primary)).toBe(commitMutations(primary, 100, 110).length);
      expect(rollBackMutationCount(primary)).toBe(await rollBackWrites(primary));
      for (const n of [prewriteMutationCount(secondary, true), commitMutationCount(primary), rollBackMutationCount(primary)]) {
        expect(n).toBeLessThanOrEqual(MAX_MUTATIONS_PER_CELL);
      }
      // A one-phase write never takes more than the rollback the check counts.
      expect(onePhaseMutations(primary, 100, 110).length).toBeLessThanOrEqual(rollBackMutationCount(primary));
      await f.store.close();
    },
  );

  it('add up over a row of every shape', async () => {
    const f = await makeFixture();
    const row = rowOf('s', shapes);
    expect(prewriteMutationCount(row, true)).toBe(prewriteMutations(row, 100, f.template(rowOf('p', shapes))).length);
    expect(commitMutationCount(row)).toBe(commitMutations(row, 100, 110).length);
    expect(rollBackMutationCount(row)).toBe(await rollBackWrites(row));
    await f.store.close();
  });
});

describe('checkRowLimits', () => {
  const limits = { maxRowKeyBytes: 4096, maxQualifierBytes: 16384, maxValueBytes: 1000, maxMutationsPerRow: 20 };

  it('holds an observed column to 4 mutations a cell (its rollback), on the primary as on a secondary', () => {
    const observedCells = (n: number) => Array.from({ length: n }, (_, i) => ({ ...(shapes[1] as BufferedCell), column: `c:${i}` }));
    expect(() => checkRowLimits([rowOf('p', observedCells(5)), rowOf('s', observedCells(5))], limits)).not.toThrow();
    let e: unknown;
    try {
      checkRowLimits([rowOf('p', observedCells(1)), rowOf('s', observedCells(6))], limits);
    } catch (err) {
      e = err;
    }
    expect(isTxnError(e, 'TOO_MANY_MUTATIONS')).toBe(true);
    expect(e).toMatchObject({ details: { table: 't', cells: 6, limit: 20, prewrite: 12, commit: 18, rollBack: 24 } });
  });

  it('refuses a value over maxValueBytes (a long value at the limit passes)', () => {
    const cell = (size: number): BufferedCell => ({ ...(shapes[2] as BufferedCell), value: Buffer.alloc(size) });
    expect(() => checkRowLimits([rowOf('p', [cell(1000)])], limits)).not.toThrow();
    expect(() => checkRowLimits([rowOf('p', [cell(1001)])], limits)).toThrow(expect.objectContaining({ code: 'VALUE_TOO_LARGE' }));
  });
});

describe('commitOnePhase', () => {
  it('refuses a write that its side writes tip over the per-row limit, writing nothing', async () => {
    const store = atomicRowsOf(await openStore('memory:', { gcIntervalMs: 0, limits: { maxMutationsPerRow: 10 } }));
    if (store === null) throw new Error('memory: is embedded');
    try {
      await store.createTable('t', PERCOLATOR_TABLE_SPEC);
      const row = rowOf('r', [shapes[0] as BufferedCell, shapes[4] as BufferedCell]); // 2 write records
      const clears = Array.from({ length: 5 }, (_, i) => ({ table: 't', row: row.row, mutations: clearNotifications(`c:o${i}`, 90) }));
      await expect(commitOnePhase(store, [row], 100, 110, 'durable', clears)).rejects.toMatchObject({
        code: 'TOO_MANY_MUTATIONS',
        details: { table: 't', cells: 2, limit: 10, onePhase: 12 },
      });
      expect(await store.readRow('t', row.row)).toBeNull();
      await commitOnePhase(store, [row], 100, 110, 'durable', clears.slice(1));
      expect(await store.readRow('t', row.row)).not.toBeNull();
    } finally {
      await store.close();
    }
  });
});
