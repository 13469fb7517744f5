/**
 * The lightweight advisory lock service of Percolator §2.4: scanners take a per-row lock before
 * running observers on a row, so two workers rarely process the same notification at once. It
 * is only advisory — correctness (at most one observer commit per change) comes from the ack
 * column's write-write conflict — so it keeps no durable state and its locks expire (a crashed
 * worker's locks vanish after `ttlMs`).
 *
 * `InProcessLockService` serves the threads of one process; the network service hosted by
 * `percolator serve` implements the same interface for several processes. There a lock's holder
 * may die without letting go: given `ownerGone`, a lock held for RECLAIM_AFTER_MS or more by an
 * owner it says is gone (the process's liveness lease lapsed — Chubby ending a dead client's
 * session) is taken over at once by `tryLockOrReclaim` instead of blocking the row until its TTL.
 * Only the speed of a takeover depends on it: the lock is advisory.
 */

import { TxnError } from '../txn/errors.js';
import { describeType } from '../util/describe-type.js';
import { MAX_TIMER_MS } from '../util/timer-ms.js';

/**
 * A LockService call's arguments from a JavaScript caller (both implementations check them alike):
 * `key` and `owner` strings, `ttlMs` (for tryLock) a number of ms above 0. Unchecked, a NaN TTL
 * made a lock no one held that the sweep never removed, a string one (`now + '5000'`, a
 * concatenation) a lock held for ages, and a key of another type another key than its string.
 * INVALID_ARGUMENT. Type tests only: the worker takes a lock per row.
 */
export function checkLockArguments(key: unknown, owner: unknown, ttlMs?: unknown): void {
  if (typeof key !== 'string') throw new TxnError('INVALID_ARGUMENT', `a lock key must be a string, not ${describeType(key)}`, {});
  if (typeof owner !== 'string')
    throw new TxnError('INVALID_ARGUMENT', `a lock owner must be a string, not ${describeType(owner)}`, { key });
  if (arguments.length > 2 && !(typeof ttlMs === 'number' && ttlMs > 0 && ttlMs <= MAX_TIMER_MS)) {
    throw new TxnError('INVALID_ARGUMENT', `a lock's ttlMs must be a number of ms above 0, at most ${MAX_TIMER_MS}, not ${String(ttlMs)}`, {
      key,
      ttlMs,
    });
  }
}

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

/** A lock held at least this long may be taken from an owner that is gone (younger ones are a run in progress). */
export const RECLAIM_AFTER_MS = 1_000;

export class InProcessLockService implements LockService {
  private readonly locks = new Map<string, { owner: string; expires: number; since: number }>();

  /**
   * `ownerGone(owner)`: whether the holder `owner` is known to be gone for good (rejections and
   * false keep the lock); without it locks end only at their TTL.
   */
  constructor(
    private readonly nowMs: () => number = () => performance.now(),
    private readonly ownerGone?: (owner: string) => Promise<boolean>,
  ) {}

  async tryLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    checkLockArguments(key, owner, ttlMs);
    return this.tryLockSync(key, owner, ttlMs);
  }

  tryLockSync(key: string, owner: string, ttlMs: number): boolean {
    const now = this.nowMs();
    const held = this.locks.get(key);
    if (held !== undefined && held.expires > now) return false;
    this.locks.set(key, { owner, expires: now + ttlMs, since: now });
    if (this.locks.size > 100_000) this.sweep(now);
    return true;
  }

  /** tryLock, taking over a lock held RECLAIM_AFTER_MS or more by an owner `ownerGone` says is gone. */
  async tryLockOrReclaim(key: string, owner: string, ttlMs: number): Promise<boolean> {
    if (this.tryLockSync(key, owner, ttlMs)) return true;
    const held = this.locks.get(key);
    if (this.ownerGone === undefined || held === undefined || held.owner === owner || this.nowMs() - held.since < RECLAIM_AFTER_MS)
      return false;
    if (!(await this.ownerGone(held.owner).catch(() => false))) return false;
    // Dropped unless it was released or taken over meanwhile; then the ordinary rule decides.
    if (this.locks.get(key) === held) this.locks.delete(key);
    return this.tryLockSync(key, owner, ttlMs);
  }

  async unlock(key: string, owner: string): Promise<void> {
    checkLockArguments(key, owner);
    if (this.locks.get(key)?.owner === owner) this.locks.delete(key);
  }

  private sweep(now: number): void {
    for (const [k, v] of this.locks) if (v.expires <= now) this.locks.delete(k);
  }

  /**
   * Locks held now. Expired ones are dropped first: kept until their key is asked for again (or
   * 100 000 pile up), a killed worker's rows counted as held on `percolator serve`'s status page
   * and `percolator_locks_held` long after their TTL (2026-12-01: 1 held on an idle server).
   */
  get size(): number {
    this.sweep(this.nowMs());
    return this.locks.size;
  }

  async close(): Promise<void> {
    this.locks.clear();
  }
}
