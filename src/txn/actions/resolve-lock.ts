/**
 * Resolves a lock met by a reader or a writer (Percolator Figure 6, lines 15–20 and the
 * cleanup discussion of §2.2): ask the primary what became of the lock's transaction, then make
 * this cell agree — roll forward a committed secondary (write its record at the primary's commit
 * timestamp, drop the lock), roll back an aborted one (rollback record, drop the lock).
 *
 * Returns: 'committed' | 'rolledBack' when the lock is gone, 'locked' when its owner is alive
 *   and within its TTL (the caller backs off and retries).
 * Throws: nothing of its own.
 * Idempotent: yes; any number of resolvers may race on one lock.
 */
import type { Store } from '../../store/store.js';
import type { TxnError } from '../errors.js';
import { type LockRecord, encodeColumn, lockAtFilter } from '../layout.js';
import { checkTxnStatus } from './check-txn-status.js';
import { cleanup } from './cleanup.js';
import { commitCellMutations } from './commit.js';
import type { LockedCell, ResolveContext } from './types.js';

export async function resolveLock(store: Store, cell: LockedCell, ctx: ResolveContext): Promise<'committed' | 'rolledBack' | 'locked'> {
  const { lock, startTs } = cell;
  const primary = { table: lock.primaryTable, row: lock.primaryRow, q: encodeColumn(lock.primaryColumn) };
  const status = await checkTxnStatus(store, primary, startTs, ctx);
  const isPrimary =
    cell.table === lock.primaryTable && cell.column === lock.primaryColumn && Buffer.compare(cell.row, lock.primaryRow) === 0;
  if (status.state === 'locked') return 'locked';
  if (isPrimary) return status.state;
  if (status.state === 'committed') {
    // Roll forward: the same mutations the committer would have applied to this cell.
    await store.checkAndMutateRow(cell.table, cell.row, {
      predicateFilter: lockAtFilter(cell.q, startTs),
      trueMutations: commitCellMutations(cell.q, lock.kind, lock.value, startTs, status.commitTs, lock.notify),
      // Either way the cell ends committed: by this write or an earlier send of it (or a racer's).
      resendable: true,
    });
    return 'committed';
  }
  await cleanup(store, cell.table, cell.row, cell.q, startTs);
  return 'rolledBack';
}

/**
 * Resolves the lock a KEY_LOCKED error names (`details`: table, row, column, lockTs, lock) — what
 * a writer does after its commit met another transaction's lock, before it retries. A reader
 * resolves the locks it meets as it reads; a writer retrying a transaction that writes the cell
 * without reading it would otherwise meet the same abandoned lock on every attempt, for as long as
 * no reader comes by.
 *
 * Returns: resolveLock's answer, or 'unknown' when the error names no lock (its conflict was gone
 *   by the time it was described) or resolving it failed (the retry meets the lock again).
 * Throws: nothing.
 * Idempotent: yes.
 */
export async function resolveConflictLock(
  store: Store,
  error: TxnError,
  ctx: ResolveContext,
): Promise<'committed' | 'rolledBack' | 'locked' | 'unknown'> {
  const d = error.details as { table?: string; row?: Uint8Array; column?: string; lockTs?: number; lock?: LockRecord };
  if (d.table === undefined || d.row === undefined || d.column === undefined || d.lockTs === undefined || d.lock === undefined)
    return 'unknown';
  const cell: LockedCell = { table: d.table, row: d.row, column: d.column, q: encodeColumn(d.column), startTs: d.lockTs, lock: d.lock };
  return resolveLock(store, cell, ctx).catch(() => 'unknown' as const);
}
