/** Test fixture for the protocol actions: a memory store with a Percolator table, a liveness view
 * whose answers tests set, and a wall clock tests move. */
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import type { BufferedRow, LockedCell, ResolveContext } from './actions/types.js';
import type { LockTemplate } from './actions/prewrite.js';
import { PERCOLATOR_TABLE_SPEC, decodeLock, encodeColumn, LOCK } from './layout.js';
import type { Transaction } from './transaction.js';

export interface Fixture {
  store: Store;
  alive: Set<string>;
  clock: { ms: number };
  ctx: ResolveContext;
  row(row: string, ...cells: [column: string, value: string | null][]): BufferedRow;
  template(primary: BufferedRow, owner?: string, ttlMs?: number): LockTemplate;
  lockedCell(row: string, column: string): Promise<LockedCell | null>;
}

export async function makeFixture(): Promise<Fixture> {
  const store = await openStore('memory:', { gcIntervalMs: 0 });
  await store.createTable('t', PERCOLATOR_TABLE_SPEC);
  const alive = new Set<string>(['w1']);
  const clock = { ms: 1_000_000 };
  const ctx: ResolveContext = { liveness: { isAlive: async (o) => alive.has(o) }, nowMs: () => clock.ms };
  return {
    store,
    alive,
    clock,
    ctx,
    row: (row, ...cells) => ({
      table: 't',
      row: Buffer.from(row),
      cells: cells.map(([column, value]) => ({
        column,
        q: encodeColumn(column),
        kind: value === null ? 'delete' : 'put',
        value: value === null ? null : Buffer.from(value),
        notify: false,
      })),
    }),
    template: (primary, owner = 'w1', ttlMs = 10_000) => ({
      primaryTable: primary.table,
      primaryRow: primary.row,
      primaryColumn: (primary.cells[0] as { column: string }).column,
      wallTimeMs: clock.ms,
      ttlMs,
      owner,
    }),
    lockedCell: async (row, column) => {
      const q = encodeColumn(column);
      const r = await store.readRow('t', Buffer.from(row), {
        columnRangeFilter: { familyName: LOCK, startQualifierClosed: q, endQualifierClosed: q },
      });
      const c = r?.cells[0];
      if (c === undefined) return null;
      return { table: 't', row: Buffer.from(row), column, q, startTs: c.timestamp, lock: decodeLock(c.value) };
    },
  };
}

/** Commits `tx` and releases it; what the commit returned, or what it threw (tests compare either). */
export async function commitOrError(tx: Transaction & { release(): void }): Promise<unknown> {
  try {
    return await tx.commit();
  } catch (e) {
    return e;
  } finally {
    tx.release();
  }
}
