/**
 * Decides the fate of transaction S by looking at its primary cell (Percolator §2.2: the primary
 * is the single point of truth), rolling it back when it is abandoned.
 *
 * - A commit record of S on the primary → committed.
 * - A rollback record of S, or neither lock nor record → rolled back (writing the rollback record
 *   if missing, so a late prewrite of the primary fails and S can never commit).
 * - S's lock is still on the primary: if its owner is dead (liveness registry), its wall time
 *   is older than its TTL, or S is a transaction of this very process whose commit has ended
 *   (`ctx.finishedHere`: its commit failed and left it), roll it back — exclusive with the owner's
 *   commit point, so exactly one of the two wins — else report it as locked so the caller backs off.
 *
 * Returns: the transaction's status.
 * Throws: nothing of its own.
 * Idempotent: yes; safe when many resolvers race on one primary.
 */
import type { Store } from '../../store/store.js';
import { cleanup } from './cleanup.js';
import { readColumnStatus } from './read-column-status.js';
import type { ResolveContext, TxnStatus } from './types.js';

export async function checkTxnStatus(
  store: Store,
  primary: { readonly table: string; readonly row: Uint8Array; readonly q: Uint8Array },
  startTs: number,
  ctx: ResolveContext,
): Promise<TxnStatus> {
  const s = await readColumnStatus(store, primary.table, primary.row, primary.q, startTs);
  if (s.commitTs !== null) return { state: 'committed', commitTs: s.commitTs };
  if (s.ownLock !== null) {
    const lock = s.ownLock;
    const expired = ctx.nowMs() > lock.wallTimeMs + lock.ttlMs;
    const abandoned = expired || ctx.finishedHere?.(lock.owner, startTs) === true;
    if (!abandoned && (await ctx.liveness.isAlive(lock.owner))) return { state: 'locked', lock };
  }
  const r = await cleanup(store, primary.table, primary.row, primary.q, startTs);
  return r === 'rolledBack' ? { state: 'rolledBack' } : { state: 'committed', commitTs: r.committed };
}
