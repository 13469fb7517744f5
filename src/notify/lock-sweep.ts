/**
 * The lock sweep: finds notifications that exist only inside a lock. A commit writes the notify
 * cell of an observed column with the cell's commit record, in the same row mutation — for a
 * secondary row, after the commit point. When that secondary commit never happens (the committer
 * killed after its commit point, or the store out of reach for it), the change is committed but
 * its row carries only a lock, and no notify cell: scanners look for notify cells, so nothing
 * would run until some reader happened to meet the lock and roll it forward. The sweep is that
 * reader. It walks a table's lock group and resolves (resolve-lock.ts) every lock of an observed
 * column (`notify` in its record) that has not moved for `minAgeMs`: a committed transaction's is
 * rolled forward, notify cell and all; an abandoned one's rolled back; a live one's left alone.
 *
 * `countNotifyingLocks` is the same walk for quiescence: such a lock is work that is not done.
 *
 * Invariant: the sweep decides nothing by itself — resolveLock asks the primary, as any reader.
 * Concurrency: any number of sweeps, readers and committers may race on a lock (resolveLock is
 * idempotent, and exclusive with the commit point).
 */
import type { Store } from '../store/store.js';
import type { LockedCell, ResolveContext } from '../txn/actions/types.js';
import { resolveLock } from '../txn/actions/resolve-lock.js';
import { LOCK, decodeColumn, decodeLock } from '../txn/layout.js';

const LOCK_FILTER = { familyNameRegexFilter: LOCK } as const;

/** Locks of observed columns in `table`, each with its cell. */
async function* notifyingLocks(store: Store, table: string): AsyncGenerator<LockedCell> {
  for await (const r of store.readRows(table, { filter: LOCK_FILTER })) {
    for (const c of r.cells) {
      const lock = decodeLock(c.value);
      if (!lock.notify) continue;
      yield { table, row: r.key, column: decodeColumn(c.qualifier), q: c.qualifier, startTs: c.timestamp, lock };
    }
  }
}

export interface SweepResult {
  /** Locks rolled forward (their notifications now exist). */
  readonly committed: number;
  readonly rolledBack: number;
  /** Locks of live transactions, or too young to look at. */
  readonly left: number;
}

/**
 * Resolves the locks of observed columns in `table` whose wall time is `minAgeMs` old or more.
 * Returns: what became of them. Throws: store errors. Idempotent: yes.
 */
export async function sweepLocks(store: Store, table: string, ctx: ResolveContext, minAgeMs: number): Promise<SweepResult> {
  let committed = 0;
  let rolledBack = 0;
  let left = 0;
  for await (const cell of notifyingLocks(store, table)) {
    if (ctx.nowMs() - cell.lock.wallTimeMs < minAgeMs) {
      left++;
      continue;
    }
    const r = await resolveLock(store, cell, ctx);
    if (r === 'committed') committed++;
    else if (r === 'rolledBack') rolledBack++;
    else left++;
  }
  return { committed, rolledBack, left };
}

/**
 * How many locks of observed columns `table` holds. The walk is never left early: a remote
 * store's stream cut short is a reset stream, which a server rate-limits (bigtable-store.ts).
 * Throws: store errors.
 */
export async function countNotifyingLocks(store: Store, table: string): Promise<number> {
  let n = 0;
  for await (const _ of notifyingLocks(store, table)) n++;
  return n;
}
