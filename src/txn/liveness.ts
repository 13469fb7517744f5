/**
 * Worker liveness registry — the paper's Chubby token (§2.2): each process that writes locks
 * holds a lease, a row in the `_percolator_workers` table whose `l:expires` cell is the wall time
 * (ms) until which it promises to be alive. It renews the lease every `leaseMs / 3`. A lock whose
 * owner has no live lease may be rolled back by anyone.
 *
 * Safety never depends on liveness: a worker wrongly declared dead (a long GC pause) only has
 * its transaction rolled back, and its commit then fails at the primary (the commit point is
 * conditioned on the lock). Liveness only decides how fast abandoned locks are cleaned.
 * Wall clocks of the processes sharing a store are assumed roughly synchronized (same machine,
 * or NTP); the lock TTL is the backstop.
 *
 * A process killed without closing leaves its row behind; each process that registers removes the
 * rows expired for more than SWEEP_AFTER_MS (a missing row reads as an expired lease, and a row
 * renewed since it was read is kept: the delete is conditioned on the value read), so the table
 * does not grow by one row per crash for the life of a deployment.
 */
import { randomBytes } from 'node:crypto';
import { ensureTable } from '../store/ensure-table.js';
import type { Store } from '../store/store.js';
import type { LivenessView } from './actions/types.js';

export const WORKERS_TABLE = '_percolator_workers';
const FAMILY = 'l';
const EXPIRES = Buffer.from('expires');

/** A lease row expired this long ago (ms, by the sweeping process's clock) is removed by the next process to register. */
export const SWEEP_AFTER_MS = 5 * 60_000;

export interface LivenessOptions {
  readonly leaseMs?: number;
  readonly nowMs?: () => number;
}

export async function ensureWorkersTable(store: Store): Promise<void> {
  await ensureTable(store, WORKERS_TABLE, { families: { [FAMILY]: { gcRule: { maxNumVersions: 1 } } } });
}

export class Liveness implements LivenessView {
  readonly leaseMs: number;
  private readonly nowMs: () => number;
  /** owner → [alive, checkedAtMs]; answers are reused for a fraction of a lease. */
  private readonly cache = new Map<string, [boolean, number]>();
  private timer: NodeJS.Timeout | null = null;
  private renewal: Promise<void> | null = null;
  id: string | null = null;

  constructor(
    private readonly store: Store,
    options: LivenessOptions = {},
  ) {
    this.leaseMs = options.leaseMs ?? 10_000;
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** Takes a lease for this process; returns its owner id. */
  async register(): Promise<string> {
    await ensureWorkersTable(this.store);
    const id = randomBytes(12).toString('hex');
    this.id = id;
    await this.renew();
    // Best effort: a store that cannot answer now is no reason to refuse the lease.
    await this.sweepExpired().catch(() => 0);
    this.timer = setInterval(
      () => {
        if (this.renewal === null)
          this.renewal = this.renew()
            .catch(() => undefined)
            .finally(() => (this.renewal = null));
      },
      Math.max(10, Math.floor(this.leaseMs / 3)),
    );
    this.timer.unref();
    return id;
  }

  private async renew(): Promise<void> {
    if (this.id === null) return;
    const value = Buffer.alloc(8);
    value.writeDoubleBE(this.nowMs() + this.leaseMs);
    await this.store.mutateRow(WORKERS_TABLE, Buffer.from(this.id), [
      { setCell: { familyName: FAMILY, columnQualifier: EXPIRES, timestampMicros: 0, value } },
    ]);
  }

  /**
   * Removes the lease rows expired more than SWEEP_AFTER_MS ago.
   * Returns: how many were removed. Idempotent; a row renewed after it was read is not removed.
   * Throws: the store's errors.
   */
  async sweepExpired(): Promise<number> {
    const before = this.nowMs() - SWEEP_AFTER_MS;
    const stale: { key: Uint8Array; value: Uint8Array }[] = [];
    // Collected first, deleted after: no write runs under the scan.
    for await (const row of this.store.readRows(WORKERS_TABLE, {})) {
      const cell = row.cells[0];
      if (cell !== undefined && cell.value.byteLength === 8 && Buffer.from(cell.value).readDoubleBE(0) < before)
        stale.push({ key: row.key, value: cell.value });
    }
    let removed = 0;
    for (const { key, value } of stale) {
      const unchanged = await this.store.checkAndMutateRow(WORKERS_TABLE, key, {
        predicateFilter: {
          chain: [
            { familyNameRegexFilter: FAMILY },
            { columnQualifierRegexFilter: EXPIRES },
            { valueRangeFilter: { startValueClosed: value, endValueClosed: value } },
          ],
        },
        trueMutations: [{ deleteFromRow: {} }],
      });
      if (unchanged) removed++;
    }
    return removed;
  }

  async isAlive(owner: string): Promise<boolean> {
    if (owner === this.id) return true;
    const now = this.nowMs();
    const hit = this.cache.get(owner);
    if (hit !== undefined && now - hit[1] < this.leaseMs / 10) return hit[0];
    const row = await this.store.readRow(WORKERS_TABLE, Buffer.from(owner.length > 0 ? owner : '-'));
    const cell = row?.cells[0];
    const alive = cell !== undefined && cell.value.byteLength === 8 && Buffer.from(cell.value).readDoubleBE(0) > now;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(owner, [alive, now]);
    return alive;
  }

  /** Gives the lease up: this process's remaining locks become resolvable at once. */
  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.renewal;
    const id = this.id;
    this.id = null;
    if (id !== null) await this.store.mutateRow(WORKERS_TABLE, Buffer.from(id), [{ deleteFromRow: {} }]).catch(() => undefined);
  }
}
