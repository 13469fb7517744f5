/**
 * The interface the transaction layer takes: either the in-process `Oracle` or the network
 * `OracleClient` implements it.
 *
 * Guarantees every implementation gives:
 * - Timestamps are safe integers (< 2^53), "microseconds-ish": they follow the wall clock in µs
 *   while the clock is ahead (max(last + 1, nowMicros)) and never decrease when it goes back.
 * - Strictly increasing for every caller in the deployment, across oracle restarts and crashes:
 *   any timestamp obtained after another one resolved is larger; no timestamp is ever handed out
 *   twice. Concurrent callers get distinct timestamps (in no promised order among themselves).
 * - `getTimestamps(n)` returns a contiguous range `[first, first + count)`, `count === n`.
 *
 * GC watermark contract: a transaction takes its start timestamp with `getStartTimestamp()` (or
 * registers it with `registerActive` in the same tick it receives it, before any await) and
 * releases the registration when it ends. `getWatermark()`
 * returns a timestamp W such that every still-registered start timestamp, and every start
 * timestamp obtained in the future, is >= W: versions that are shadowed by a newer version at or
 * below W can be collected. The watermark never decreases.
 */

/** A contiguous range of timestamps `[first, first + count)`. */
export interface TimestampRange {
  readonly first: number;
  readonly count: number;
}

/** A registered active start timestamp; `release()` is idempotent. */
export interface ActiveRegistration {
  readonly timestamp: number;
  release(): void;
  /**
   * Whether the oracle still counts this registration, so that no watermark above `timestamp`
   * can have been handed out (and no GC pass can have collected what it reads): `true` or
   * `false` when this process knows, otherwise a promise settled by a fresh report to the oracle
   * (rejected when the oracle cannot be reached). Absent where a registration cannot lapse (the
   * in-process oracle's). See oracle.md › Leases.
   */
  held?(): boolean | Promise<boolean>;
}

export interface TimestampSource {
  /** One timestamp, larger than every timestamp resolved before this call was made. */
  getTimestamp(): Promise<number>;
  /** `count` consecutive timestamps (1 <= count <= the batch cap). */
  getTimestamps(count: number): Promise<TimestampRange>;
  /**
   * A start timestamp, already registered as active (the registration happens in the same tick
   * the timestamp is received, so no watermark can pass it). Release it when the transaction ends.
   */
  getStartTimestamp(): Promise<ActiveRegistration>;
  /**
   * An in-process oracle's synchronous form of getStartTimestamp: the registration, or null when
   * the caller must use getStartTimestamp (no reservation at hand). Optional.
   */
  tryStartTimestamp?(): ActiveRegistration | null;
  /** Holds the GC watermark at or below `startTs` until released. Prefer `getStartTimestamp`. */
  registerActive(startTs: number): ActiveRegistration;
  /** The oldest start timestamp still in use by any live client (or the next timestamp if none). */
  getWatermark(): Promise<number>;
  /** Releases resources; pending and further calls reject with ORACLE_CLOSED. Idempotent. */
  close(): Promise<void>;
}

/** A clock in microseconds since the epoch. Tests inject one to move time backwards. */
export type MicrosClock = () => number;

/** The default clock: the wall clock in µs (millisecond resolution is enough: see oracle.ts). */
export const wallClockMicros: MicrosClock = () => Date.now() * 1000;

/** A clock in milliseconds for leases and timeouts (monotonic by default). Tests inject one. */
export type MillisClock = () => number;

export const monotonicMillis: MillisClock = () => performance.now();

/** Local multiset of active start timestamps with O(1) register/release and lazy min. */
export class ActiveSet {
  /**
   * Registrations in the order they were made (start timestamps mostly increase), released ones
   * included until the next compaction. A registration costs an object and a push, a release a
   * flag: a Map keyed by timestamps (heap numbers above 2^31) cost more than the read it guarded.
   */
  private entries: { readonly ts: number; live: boolean }[] = [];
  private live = 0;

  register(ts: number): ActiveRegistration {
    const e = { ts, live: true };
    this.entries.push(e);
    this.live++;
    // Mostly-released histories are compacted as they grow, so memory follows the live count.
    if (this.entries.length > 1024 && this.entries.length > 4 * this.live) this.compact();
    return {
      timestamp: ts,
      release: () => {
        if (!e.live) return;
        e.live = false;
        this.live--;
      },
    };
  }

  private compact(): void {
    this.entries = this.entries.filter((e) => e.live);
  }

  /** The smallest registered timestamp, or +Infinity when none. */
  min(): number {
    this.compact();
    let m = Number.POSITIVE_INFINITY;
    for (const e of this.entries) if (e.ts < m) m = e.ts;
    return m;
  }

  /** Live registrations. */
  get size(): number {
    return this.live;
  }
}
