/**
 * Cleanup = roll back one cell of transaction S (Percolator Figure 6's "BackoffAndMaybeCleanupLock"
 * roll-back half; TiKV's `cleanup`/`rollback`).
 *
 * One conditional mutation, exclusive with the commit point because both are conditioned on the
 * same lock cell: if S's lock is there, delete it (and S's data) and write a rollback record at S;
 * if it is not, still write the rollback record at S, so a prewrite of S arriving late finds a
 * write at its own start timestamp and fails. A rollback record can never overwrite a commit
 * record: commit timestamps are distinct from every start timestamp (one oracle), and S's own
 * commit record is at commitTs > S — harmless if it already exists, and then we report it.
 *
 * Returns: 'rolledBack', or { committed: commitTs } if S had already committed this cell.
 * Throws: nothing of its own (store errors pass through).
 * Idempotent: yes.
 */
import type { Store } from '../../store/store.js';
import { lockAtFilter } from '../layout.js';
import { readColumnStatus } from './read-column-status.js';
import { rollBackCellMutations, rollbackRecordMutation } from './roll-back.js';

export type CleanupResult = 'rolledBack' | { readonly committed: number };

export async function cleanup(store: Store, table: string, row: Uint8Array, q: Uint8Array, startTs: number): Promise<CleanupResult> {
  const before = await readColumnStatus(store, table, row, q, startTs);
  if (before.commitTs !== null) return { committed: before.commitTs };
  if (before.rolledBack && before.ownLock === null) return 'rolledBack';
  const hadLock = await store.checkAndMutateRow(table, row, {
    predicateFilter: lockAtFilter(q, startTs),
    trueMutations: rollBackCellMutations(q, startTs),
    falseMutations: [rollbackRecordMutation(q, startTs)],
    // Sent again after a lost reply, it finds no lock and writes the same rollback record again.
    resendable: true,
  });
  if (hadLock) return 'rolledBack';
  // No lock: S either never locked this cell, or committed it between our read and now.
  const after = await readColumnStatus(store, table, row, q, startTs);
  return after.commitTs !== null ? { committed: after.commitTs } : 'rolledBack';
}
