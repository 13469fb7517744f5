/**
 * The lightweight advisory lock service of Percolator §2.4: scanners take a per-row lock before
 * running observers on a row, so two workers rarely process the same notification at once. It
 * is only advisory — correctness (at most one observer commit per change) comes from the ack
 * column's write-write conflict — so it keeps no durable state and its locks expire (a crashed
 * worker's locks vanish after `ttlMs`).
 *
 * `InProcessLockService` serves the threads of one process; the network service hosted by
 * `percolator serve` implements the same interface for several processes.
 */

export interface LockService {
  /**
   * Takes `key` for `owner` for `ttlMs` unless it is held — by anyone, `owner` included: a scanner
   * that meets a row it has already queued must not queue it twice.
   */
  tryLock(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Releases `key` if `owner` holds it. */
  unlock(key: string, owner: string): Promise<void>;
  close(): Promise<void>;
}

export class InProcessLockService implements LockService {
  private readonly locks = new Map<string, { owner: string; expires: number }>();

  constructor(private readonly nowMs: () => number = () => performance.now()) {}

  async tryLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.tryLockSync(key, owner, ttlMs);
  }

  tryLockSync(key: string, owner: string, ttlMs: number): boolean {
    const now = this.nowMs();
    const held = this.locks.get(key);
    if (held !== undefined && held.expires > now) return false;
    this.locks.set(key, { owner, expires: now + ttlMs });
    if (this.locks.size > 100_000) this.sweep(now);
    return true;
  }

  async unlock(key: string, owner: string): Promise<void> {
    if (this.locks.get(key)?.owner === owner) this.locks.delete(key);
  }

  private sweep(now: number): void {
    for (const [k, v] of this.locks) if (v.expires <= now) this.locks.delete(k);
  }

  get size(): number {
    return this.locks.size;
  }

  async close(): Promise<void> {
    this.locks.clear();
  }
}
