/**
 * Roll back = a transaction undoes its own prewrites, every row at once: for each buffered cell,
 * its lock, data and notify cell at S go and a rollback record at S is written (so a prewrite of
 * S still in flight fails on it). One unconditional `mutateRows` per table, rows in parallel.
 *
 * Unconditional is safe only under its precondition: transaction S can never commit — it never
 * reached its commit point, or its primary is already rolled back (cleanup.ts, which is
 * conditioned on the primary lock, decided it). Then no commit record of S can exist or appear,
 * and the mutations touch nothing but S's own cells. Cleanup cell by cell (a read and a
 * conditional write each, one after another) took ~2 round trips a cell: a 36-posting export cut
 * short by a flaky network left most of its locks behind for readers, one resolution at a time.
 *
 * Returns: nothing.
 * Throws: the first store error of any row (the others are still written; what fails is left for
 *   readers, who roll it back from the primary).
 * Idempotent: yes.
 */
import type { Store } from '../../store/store.js';
import type { Mutation, MutateRowsEntry } from '../../store/types.js';
import { DATA, LOCK, NOTIFY, WRITE, encodeWrite } from '../layout.js';
import type { BufferedRow } from './types.js';

/** S's rollback record on the cell with encoded qualifier `q`. */
export function rollbackRecordMutation(q: Uint8Array, startTs: number): Mutation {
  return {
    setCell: {
      familyName: WRITE,
      columnQualifier: q,
      timestampMicros: startTs,
      value: encodeWrite({ kind: 'rollback', startTs, value: { mode: 'none' } }),
    },
  };
}

/**
 * The rolled-back form of S's cell `q`: its lock and data at S dropped, its rollback record written
 * (cleanup.ts applies them under the lock's condition; rollBackRows, unconditionally).
 */
export function rollBackCellMutations(q: Uint8Array, startTs: number): Mutation[] {
  const atS = { startTimestampMicros: startTs, endTimestampMicros: startTs + 1 };
  return [
    { deleteFromColumn: { familyName: LOCK, columnQualifier: q, timeRange: atS } },
    { deleteFromColumn: { familyName: DATA, columnQualifier: q, timeRange: atS } },
    rollbackRecordMutation(q, startTs),
  ];
}

/** The mutations rollBackRows writes for `row` (one row mutation), without making them. */
export function rollBackMutationCount(row: BufferedRow): number {
  let n = 0;
  for (const c of row.cells) n += c.notify ? 4 : 3;
  return n;
}

export async function rollBackRows(store: Store, rows: readonly BufferedRow[], startTs: number): Promise<void> {
  const atS = { startTimestampMicros: startTs, endTimestampMicros: startTs + 1 };
  const byTable = new Map<string, MutateRowsEntry[]>();
  for (const r of rows) {
    const mutations: Mutation[] = [];
    for (const c of r.cells) {
      mutations.push(...rollBackCellMutations(c.q, startTs));
      // A secondary's prewrite notified the cell at S (prewrite.ts): no change is coming.
      if (c.notify) mutations.push({ deleteFromColumn: { familyName: NOTIFY, columnQualifier: c.q, timeRange: atS } });
    }
    let entries = byTable.get(r.table);
    if (entries === undefined) byTable.set(r.table, (entries = []));
    entries.push({ key: r.row, mutations });
  }
  const results = await Promise.all([...byTable].map(([table, entries]) => store.mutateRows(table, entries, { durability: 'deferred' })));
  for (const rs of results) for (const r of rs) if (r.error) throw r.error;
}
