/**
 * Commit (Percolator Figure 6, lines 48–59).
 *
 * `commitPrimary` is THE commit point: one conditional mutation on the primary's row that
 * succeeds only while our lock on the primary cell is still there, and then replaces the locks
 * of every buffered cell of that row with write records at commitTs (short values inlined).
 * Once it has succeeded the transaction is committed, whatever happens to this process.
 *
 * `commitSecondary` does the same for another row, conditioned on our lock as TiKV's commit is:
 * after the commit point no one may roll a secondary back (resolvers look at the primary first),
 * and a resolver that rolls it forward writes the very same cells, so racing with one is
 * harmless. A lock that is gone with no commit record of ours would mean the protocol was broken
 * (the cell was rolled back though the primary committed): that is reported (LOCK_NOT_FOUND),
 * never papered over with a write record whose `data` cell the rollback deleted.
 *
 * Returns: commitPrimary → the commit timestamp in effect (ours, or the one of an earlier
 *   successful call of the same transaction).
 * Throws: commitPrimary: TXN_ABORTED when our primary lock is gone and no commit record of ours
 *   exists (we were rolled back). commitSecondary: LOCK_NOT_FOUND (see above).
 * Idempotent: yes, both.
 * Durability: the primary commit is durable when it resolves (it is the commit point) unless the
 *   caller defers it (observer transactions, whose commits nobody outside is told of); secondary
 *   commits are deferred (visible at once, durable with the next group commit).
 */
import type { Store } from '../../store/store.js';
import type { Mutation } from '../../store/types.js';
import { TxnError, describeCell } from '../errors.js';
import { LOCK, type ValueRef, WRITE, type WriteKind, encodeWrite, lockAtFilter, strongNotifyMutation, valueRefFor } from '../layout.js';
import { readColumnStatus } from './read-column-status.js';
import type { BufferedRow } from './types.js';

/**
 * The committed form of one cell at commitTs: its write record — and, for an observed column, its
 * notify cell at commitTs in the same atomic row mutation, so a notification exists exactly for
 * committed changes.
 */
export function committedCellMutations(
  q: Uint8Array,
  kind: WriteKind,
  ref: ValueRef,
  startTs: number,
  commitTs: number,
  notify: boolean,
  out?: Mutation[],
): Mutation[] {
  // The write record carries short values itself, so readers never touch `data` for them.
  const w: Mutation = {
    setCell: { familyName: WRITE, columnQualifier: q, timestampMicros: commitTs, value: encodeWrite({ kind, startTs, value: ref }) },
  };
  const n: Mutation | null = notify ? strongNotifyMutation(q, commitTs) : null;
  // Appended to `out`, or a new array of exactly their number (most rows a commit writes have one cell).
  if (out === undefined) return n === null ? [w] : [w, n];
  out.push(w);
  if (n !== null) out.push(n);
  return out;
}

/** The mutations that turn S's lock on one cell into its committed form at commitTs. */
export function commitCellMutations(
  q: Uint8Array,
  kind: WriteKind,
  ref: ValueRef,
  startTs: number,
  commitTs: number,
  notify: boolean,
): Mutation[] {
  const out = committedCellMutations(q, kind, ref, startTs, commitTs, notify);
  out.push({
    deleteFromColumn: {
      familyName: LOCK,
      columnQualifier: q,
      timeRange: { startTimestampMicros: startTs, endTimestampMicros: startTs + 1 },
    },
  });
  return out;
}

export function commitMutations(row: BufferedRow, startTs: number, commitTs: number): Mutation[] {
  const mutations: Mutation[] = [];
  for (const c of row.cells) mutations.push(...commitCellMutations(c.q, c.kind, valueRefFor(c.kind, c.value), startTs, commitTs, c.notify));
  return mutations;
}

/** The length of commitMutations(row, …), without making them. */
export function commitMutationCount(row: BufferedRow): number {
  let n = 0;
  for (const c of row.cells) n += c.notify ? 3 : 2;
  return n;
}

export async function commitPrimary(
  store: Store,
  row: BufferedRow,
  primaryIndex: number,
  startTs: number,
  commitTs: number,
  durability: 'durable' | 'deferred' = 'durable',
): Promise<number> {
  const primary = row.cells[primaryIndex];
  if (primary === undefined) throw new RangeError('primaryIndex out of range');
  const ok = await store.checkAndMutateRow(row.table, row.row, {
    predicateFilter: lockAtFilter(primary.q, startTs),
    trueMutations: commitMutations(row, startTs, commitTs),
    durability,
    // Sent again after a lost reply, it finds our commit record instead of our lock (read below).
    resendable: true,
  });
  if (ok) return commitTs;
  const s = await readColumnStatus(store, row.table, row.row, primary.q, startTs);
  if (s.commitTs !== null) return s.commitTs;
  const ref = { table: row.table, row: row.row, column: primary.column };
  throw new TxnError(
    'TXN_ABORTED',
    `transaction ${startTs} lost its primary lock on ${describeCell(ref)} before committing: it was rolled back`,
    {
      ...ref,
      startTs,
      commitTs,
      rolledBack: s.rolledBack,
    },
  );
}

export async function commitSecondary(store: Store, row: BufferedRow, startTs: number, commitTs: number): Promise<void> {
  const first = row.cells[0];
  if (first === undefined) return;
  // The row's cells were locked together by one prewrite, and a resolver removes them only after
  // deciding the primary's fate, so the first cell's lock stands for the row.
  const ok = await store.checkAndMutateRow(row.table, row.row, {
    predicateFilter: lockAtFilter(first.q, startTs),
    trueMutations: commitMutations(row, startTs, commitTs),
    durability: 'deferred',
    resendable: true,
  });
  if (ok) return;
  // A resolver got there first (rolled some cells forward): commit what is still locked, cell by
  // cell, and check that every other cell carries our commit record.
  for (const c of row.cells) {
    const done = await store.checkAndMutateRow(row.table, row.row, {
      predicateFilter: lockAtFilter(c.q, startTs),
      trueMutations: commitCellMutations(c.q, c.kind, valueRefFor(c.kind, c.value), startTs, commitTs, c.notify),
      durability: 'deferred',
      resendable: true,
    });
    if (done) continue;
    const s = await readColumnStatus(store, row.table, row.row, c.q, startTs);
    if (s.commitTs !== null) continue;
    const ref = { table: row.table, row: row.row, column: c.column };
    throw new TxnError(
      'LOCK_NOT_FOUND',
      `transaction ${startTs} committed its primary at ${commitTs}, but its lock on ${describeCell(ref)} is gone without a commit record${s.rolledBack ? ' (rolled back)' : ''}`,
      { ...ref, startTs, commitTs, rolledBack: s.rolledBack },
    );
  }
}
