/**
 * Prewrite (Percolator Figure 6, lines 32–44): lock every buffered cell of one row at the
 * transaction's start timestamp S, with one conditional mutation for the whole row.
 *
 * The condition is the paper's: abort if any cell of the row has a lock at any timestamp, or a
 * write record at or after S. A rollback record at exactly S (left by someone who rolled this
 * transaction back) is such a write, so a delayed prewrite of a rolled-back transaction fails.
 * Short values travel inside the lock (later inlined into the write record); long ones are
 * written to `data` at S in the same atomic row mutation.
 *
 * A secondary row's observed cells also get their notify cell at S, in the same mutation. Their
 * commit writes it again at the commit timestamp, with the commit record — but a secondary commit
 * can be cut off (its committer killed past the commit point, its store out of reach), and then
 * the change is committed while its row carries only a lock: no notify cell, so no scanner would
 * find it until some reader happened to meet the lock. With the notify cell at S, the run it
 * starts meets the lock and settles it (roll forward, which notifies at the commit timestamp; or
 * back: a spurious notification, which a run finds acknowledged). A run cannot clear it too early:
 * its reads meet our lock (S < its start), and that lock goes only with the row's commit (which
 * notifies) or its rollback. The primary row needs none: its commit is the commit point.
 *
 * Returns: when every cell of the row holds our lock.
 * Throws: KEY_LOCKED (another transaction's lock; `details.lock` and `details.lockTs` let the
 *   caller resolve it), WRITE_CONFLICT (a commit at or after S; `details.commitTs`),
 *   TXN_ABORTED (our own rollback record at S).
 * Idempotent: yes — if our locks are already there (a retried call), it succeeds.
 * Durability: deferred (see below); resolves once the locks are visible to every reader.
 */
import type { Store } from '../../store/store.js';
import type { Mutation } from '../../store/types.js';
import { TxnError, describeCell } from '../errors.js';
import { DATA, LOCK, type LockRecord, encodeLock, prewriteConflictFilter, strongNotifyMutation, valueRefFor } from '../layout.js';
import { readColumnStatus } from './read-column-status.js';
import type { BufferedRow } from './types.js';

/** The parts of a lock that are the same for every cell of a transaction. */
export type LockTemplate = Omit<LockRecord, 'kind' | 'value' | 'notify'>;

export function prewriteMutations(row: BufferedRow, startTs: number, template: LockTemplate): Mutation[] {
  const mutations: Mutation[] = [];
  // A secondary's observed cells are notified now, at S, as well as at their commit: see the header.
  const secondary = row.table !== template.primaryTable || Buffer.compare(row.row, template.primaryRow) !== 0;
  for (const c of row.cells) {
    if (secondary && c.notify) mutations.push(strongNotifyMutation(c.q, startTs));
    const value = valueRefFor(c.kind, c.value);
    mutations.push({
      setCell: {
        familyName: LOCK,
        columnQualifier: c.q,
        timestampMicros: startTs,
        value: encodeLock({ ...template, kind: c.kind, notify: c.notify, value }),
      },
    });
    if (value.mode === 'data' && c.value !== null) {
      mutations.push({ setCell: { familyName: DATA, columnQualifier: c.q, timestampMicros: startTs, value: c.value } });
    }
  }
  return mutations;
}

/** The length of prewriteMutations(row, …) for a row that is (`secondary`) or is not the primary's, without making them. */
export function prewriteMutationCount(row: BufferedRow, secondary: boolean): number {
  let n = 0;
  for (const c of row.cells) n += 1 + (secondary && c.notify ? 1 : 0) + (valueRefFor(c.kind, c.value).mode === 'data' ? 1 : 0);
  return n;
}

export async function prewrite(store: Store, row: BufferedRow, startTs: number, template: LockTemplate): Promise<void> {
  const qualifiers = row.cells.map((c) => c.q);
  const conflicted = await store.checkAndMutateRow(row.table, row.row, {
    predicateFilter: prewriteConflictFilter(qualifiers, startTs),
    falseMutations: prewriteMutations(row, startTs, template),
    // A lock need not be durable on its own: the primary commit is durable and the store's log is
    // ordered, so a commit that survives a crash implies the locks written before it did; a lock
    // lost in a crash belonged to a transaction that had not committed.
    durability: 'deferred',
    // Sent again after a lost reply, it finds our own lock: conflictError tells that apart.
    resendable: true,
  });
  if (!conflicted) return;
  const error = await conflictError(store, row, startTs);
  if (error !== null) throw error;
}

/**
 * Why a conditional write at `startTs` over `row`'s cells was vetoed (the conflict path is rare;
 * clarity over speed), cell by cell: TXN_ABORTED (our rollback record, or we already committed),
 * KEY_LOCKED (another transaction's lock), WRITE_CONFLICT (a commit at or after startTs), or
 * KEY_LOCKED with no lock when the conflict has gone since (retry). Returns null when every cell
 * holds our own lock (a retried prewrite).
 */
export async function conflictError(store: Store, row: BufferedRow, startTs: number): Promise<TxnError | null> {
  let ownLocks = 0;
  for (const c of row.cells) {
    const s = await readColumnStatus(store, row.table, row.row, c.q, startTs);
    const ref = { table: row.table, row: row.row, column: c.column };
    if (s.rolledBack) {
      return new TxnError(
        'TXN_ABORTED',
        `transaction ${startTs} was rolled back by another (found its rollback record at ${describeCell(ref)})`,
        { ...ref, startTs },
      );
    }
    const other = s.otherLocks[0];
    if (other !== undefined) {
      return new TxnError('KEY_LOCKED', `${describeCell(ref)} is locked by transaction ${other[0]}`, {
        ...ref,
        startTs,
        lockTs: other[0],
        lock: other[1],
      });
    }
    if (s.latestCommitTs !== null && s.latestCommitTs >= startTs && s.commitTs === null) {
      return new TxnError(
        'WRITE_CONFLICT',
        `${describeCell(ref)} was written at ${s.latestCommitTs}, after this transaction started at ${startTs}`,
        {
          ...ref,
          startTs,
          commitTs: s.latestCommitTs,
        },
      );
    }
    if (s.ownLock !== null) ownLocks++;
    else if (s.commitTs !== null) {
      return new TxnError(
        'TXN_ABORTED',
        `transaction ${startTs} already committed ${describeCell(ref)} at ${s.commitTs}: prewrite after commit`,
        {
          ...ref,
          startTs,
        },
      );
    }
  }
  if (ownLocks === row.cells.length) return null; // a retried prewrite: our locks are in place
  // The conflict went away between the check and the read (e.g. a lock was resolved): retry.
  return new TxnError('KEY_LOCKED', `write of ${row.table} row raced with a lock that has since been resolved`, {
    table: row.table,
    row: row.row,
    startTs,
  });
}
