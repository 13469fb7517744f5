/**
 * The in-process timestamp oracle (Percolator §2.3).
 *
 * Invariants:
 * - Persistence rule: `persisted` is a mark that is durable in the `MarkStore`. A timestamp t is
 *   handed out only if t <= persisted. Raising `persisted` happens only after `markStore.save`
 *   resolved. On open the oracle loads the mark M and hands out nothing <= M: every timestamp of
 *   an earlier incarnation was <= M, so timestamps never repeat or decrease across restarts or
 *   kill -9.
 * - Each allocation hands out [first, first + n) with first = max(next, floor(clock())) and sets
 *   next = first + n: strictly increasing, following the wall clock (µs) when it is ahead and
 *   ignoring it when it goes back.
 * - Ranges are reserved ahead (`reserveMicros`, default 10 s of clock = 10 M numbers) and
 *   re-extended in the background once less than half the reservation is left, so the hot path
 *   (`tryAllocate`) is synchronous and never waits on fsync. Only when the reservation is really
 *   exhausted (a clock jump, or more than ~5 M timestamps/s) do requests queue behind the save.
 * - Requests that must wait are served in FIFO order, and while any is waiting, new requests
 *   queue behind it: allocation order = request order.
 *
 * Concurrency contract: single JS thread; all methods may be called from anywhere. Exactly one
 * `markStore.save` is in flight at a time. `tryAllocate` never awaits.
 *
 * GC watermark: min over (in-process registrations, live remote clients' reported oldest active
 * start timestamps, the next timestamp). With remote clients enabled (`enableRemoteClients`, done
 * by the server) two more terms keep it safe against report lag: the oracle's position at least
 * `holdbackMs` ago (a client reports a newly registered start timestamp within its report
 * interval < holdbackMs), and 0 for the first `leaseMs` after a restart (clients of the previous
 * incarnation have not re-reported yet). Entries expire `leaseMs` after their last report. The
 * returned watermark never decreases.
 */
import { randomInt } from 'node:crypto';
import { OracleError } from './errors.js';
import type { MarkStore } from './mark-store.js';
import { checkOracleOptions } from './oracle-options.js';
import {
  type ActiveRegistration,
  ActiveSet,
  type MicrosClock,
  type MillisClock,
  monotonicMillis,
  type TimestampRange,
  type TimestampSource,
  wallClockMicros,
} from './types.js';

export const DEFAULT_MAX_BATCH = 1 << 20;
export const DEFAULT_RESERVE_MICROS = 10_000_000;
export const DEFAULT_LEASE_MS = 5_000;
export const DEFAULT_HOLDBACK_MS = 3_000;

const MAX_TS = Number.MAX_SAFE_INTEGER;

export interface OracleOptions {
  readonly markStore: MarkStore;
  /** Wall clock in µs (default `Date.now() * 1000`). Tests inject one that goes backwards. */
  readonly clock?: MicrosClock;
  /** Millisecond clock for leases (default monotonic `performance.now()`). */
  readonly millis?: MillisClock;
  /** How far ahead each reservation reaches (default 10 s = 10 000 000). */
  readonly reserveMicros?: number;
  /** Largest batch one request may take (default 2^20). */
  readonly maxBatch?: number;
  /** Remote clients' lease: an entry expires this long after its last report (default 5 s). */
  readonly leaseMs?: number;
  /** Watermark holdback for report lag (default 3 s; must exceed the clients' report interval). */
  readonly holdbackMs?: number;
}

export interface OracleStats {
  readonly next: number;
  readonly persisted: number;
  readonly loadedMark: number;
  readonly saves: number;
  /** Requests that had to wait for a save (the hot path missed). */
  readonly waitedForMark: number;
  readonly handedOut: number;
  readonly remoteClients: number;
}

interface Waiter {
  readonly count: number;
  readonly resolve: (first: number) => void;
  readonly reject: (err: unknown) => void;
}

export class Oracle implements TimestampSource {
  private next: number;
  private persisted: number;
  private readonly loadedMark: number;
  private readonly clock: MicrosClock;
  private readonly millis: MillisClock;
  private readonly markStore: MarkStore;
  private readonly reserveMicros: number;
  private readonly lowWater: number;
  readonly maxBatch: number;
  readonly leaseMs: number;
  readonly holdbackMs: number;
  /**
   * Drawn at random for this object: what its watermarks promise (never lower than one handed
   * out) holds for exactly the answers of one incarnation, which clients tell apart by it.
   */
  readonly incarnation = randomInt(1, 2 ** 48 - 1);

  private saving: Promise<void> | null = null;
  private lastSaveFailedAt = Number.NEGATIVE_INFINITY;
  private waiters: Waiter[] = [];
  private closedError: OracleError | null = null;
  private saves = 0;
  private waitedForMark = 0;
  private handedOut = 0;

  private readonly local = new ActiveSet();
  private remoteEnabled = false;
  private warmupUntil = 0;
  private readonly remote = new Map<number, { oldest: number; expires: number }>();
  private epochCur = { at: 0, pos: 0 };
  private epochPrev = { at: 0, pos: 0 };
  private lastWatermark = 0;

  private constructor(options: OracleOptions, mark: number) {
    this.markStore = options.markStore;
    this.clock = options.clock ?? wallClockMicros;
    this.millis = options.millis ?? monotonicMillis;
    this.reserveMicros = Math.max(1, Math.floor(options.reserveMicros ?? DEFAULT_RESERVE_MICROS));
    this.lowWater = Math.floor(this.reserveMicros / 2);
    this.maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.holdbackMs = options.holdbackMs ?? DEFAULT_HOLDBACK_MS;
    this.loadedMark = mark;
    this.next = mark + 1;
    this.persisted = mark;
  }

  /** Loads the mark, persists a first reservation above it, and returns a ready oracle. */
  static async open(options: OracleOptions): Promise<Oracle> {
    checkOracleOptions(options);
    const mark = await options.markStore.load();
    if (!Number.isSafeInteger(mark) || mark < 0) {
      throw new OracleError('ORACLE_MARK_CORRUPTED', `mark store ${options.markStore.description} returned ${mark}`, {
        where: options.markStore.description,
        mark,
      });
    }
    if (mark >= MAX_TS) {
      throw new OracleError('ORACLE_EXHAUSTED', `oracle mark ${mark} leaves no safe integer timestamps`, { mark });
    }
    const oracle = new Oracle(options, mark);
    await oracle.reserve(1);
    // Start at the clock when it is ahead (inside the reservation just made), so that the
    // oracle's position is meaningful for the watermark before the first allocation.
    const now = Math.floor(oracle.clock());
    if (now > oracle.next && now <= oracle.persisted) oracle.next = now;
    return oracle;
  }

  // --- allocation ------------------------------------------------------------------------------

  /**
   * Synchronously allocates `count` consecutive timestamps and returns the first, or -1 when the
   * caller must wait for a reservation to become durable (use `allocate` then). Throws
   * ORACLE_BAD_REQUEST / ORACLE_CLOSED / ORACLE_EXHAUSTED.
   */
  tryAllocate(count: number): number {
    if (this.closedError !== null) throw this.closedError;
    if (!(count >= 1 && count <= this.maxBatch && Number.isInteger(count))) throw this.badCount(count);
    if (this.waiters.length !== 0) return -1;
    let first = this.next;
    const now = this.clock();
    if (now > first) first = Math.floor(now);
    // Compare without computing first + count - 1, which could round above 2^53.
    if (first > this.persisted - count + 1) {
      if (first > MAX_TS - count + 1) throw this.exhausted(first, count);
      return -1;
    }
    this.next = first + count;
    this.handedOut += count;
    if (this.persisted - this.next < this.lowWater && this.saving === null) this.preExtend();
    return first;
  }

  /**
   * Allocates `count` consecutive timestamps, waiting for a durable reservation if needed.
   * `then` (optional) runs synchronously at the moment of allocation, before any other code.
   */
  allocate(count: number): Promise<number>;
  allocate<T>(count: number, then: (first: number) => T): Promise<T>;
  allocate<T>(count: number, then?: (first: number) => T): Promise<T | number> {
    const map = then ?? ((first: number): T | number => first);
    try {
      const first = this.tryAllocate(count);
      if (first >= 0) return Promise.resolve(map(first));
    } catch (e) {
      return Promise.reject(e);
    }
    this.waitedForMark++;
    return new Promise<T | number>((resolve, reject) => {
      this.waiters.push({ count, resolve: (first) => resolve(map(first)), reject });
      if (this.saving === null) this.reserve(count).catch(() => undefined);
    });
  }

  getTimestamp(): Promise<number> {
    return this.allocate(1);
  }

  async getTimestamps(count: number): Promise<TimestampRange> {
    const first = await this.allocate(count);
    return { first, count };
  }

  async getStartTimestamp(): Promise<ActiveRegistration> {
    if (this.closedError !== null) throw this.closedError;
    // Register in the same synchronous step that allocates the timestamp: between the two, the
    // watermark (min of `next` and the registrations) would already be past it, and a GC pass
    // reading it then could collect versions this transaction is about to read.
    const first = this.tryAllocate(1);
    if (first >= 0) return this.local.register(first);
    return this.allocate(1, (ts) => this.local.register(ts));
  }

  tryStartTimestamp(): ActiveRegistration | null {
    if (this.closedError !== null) throw this.closedError;
    const first = this.tryAllocate(1);
    return first >= 0 ? this.local.register(first) : null;
  }

  /** Starts a background extension when the reservation runs low (hot path never waits). */
  private preExtend(): void {
    if (this.millis() - this.lastSaveFailedAt < 100) return; // a failing disk: do not hammer it
    this.reserve(1).catch(() => undefined);
  }

  /**
   * Persists a new mark covering at least `count` more timestamps beyond max(next, now), then
   * serves queued waiters. One save at a time; a caller arriving during a save rides on it.
   */
  private reserve(count: number): Promise<void> {
    if (this.saving !== null) return this.saving;
    const now = this.clock();
    const base = now > this.next ? Math.floor(now) : this.next;
    let need = count;
    for (const w of this.waiters) need += w.count;
    let target = base + Math.max(this.reserveMicros, 2 * need);
    if (target > MAX_TS) target = MAX_TS;
    if (target <= this.persisted) {
      // Nothing to extend (at the very end of the safe range): fail whoever cannot be served.
      this.drain(false);
      return Promise.resolve();
    }
    this.saves++;
    const saving = this.markStore.save(target).then(
      () => {
        this.saving = null;
        if (target > this.persisted) this.persisted = target;
        this.drain();
      },
      (err: unknown) => {
        this.saving = null;
        this.lastSaveFailedAt = this.millis();
        const failed = this.waiters;
        this.waiters = [];
        for (const w of failed) w.reject(err);
        throw err;
      },
    );
    this.saving = saving;
    return saving;
  }

  /** Serves queued waiters in order; starts another reservation if the new one is too short. */
  private drain(extend = true): void {
    const waiters = this.waiters;
    let i = 0;
    for (; i < waiters.length; i++) {
      if (this.closedError !== null) break;
      const w = waiters[i];
      let first = this.next;
      const now = this.clock();
      if (now > first) first = Math.floor(now);
      if (first > MAX_TS - w.count + 1) {
        w.reject(this.exhausted(first, w.count));
        continue;
      }
      if (first > this.persisted - w.count + 1) break;
      this.next = first + w.count;
      this.handedOut += w.count;
      w.resolve(first);
    }
    this.waiters = i === waiters.length ? [] : waiters.slice(i);
    if (!extend || this.closedError !== null) return;
    if (this.waiters.length !== 0) this.reserve(0).catch(() => undefined);
    else if (this.persisted - this.next < this.lowWater && this.saving === null) {
      this.preExtend();
    }
  }

  // --- GC watermark ----------------------------------------------------------------------------

  registerActive(startTs: number): ActiveRegistration {
    return this.local.register(startTs);
  }

  /**
   * Turns on remote leases (the server calls this once). After a restart (a non-zero mark was
   * loaded) the watermark stays at its floor for `leaseMs`, until every live client re-reported.
   */
  enableRemoteClients(): void {
    if (this.remoteEnabled) return;
    this.remoteEnabled = true;
    const now = this.millis();
    this.warmupUntil = this.loadedMark > 0 ? now + this.leaseMs : now;
    this.epochCur = { at: now, pos: this.next };
    this.epochPrev = { at: now, pos: this.next };
  }

  /**
   * A remote client's report: its oldest active start timestamp (+Infinity for none). Renews its
   * lease. Returns the current watermark.
   */
  reportRemote(clientId: number, oldest: number): number {
    this.remote.set(clientId, { oldest, expires: this.millis() + this.leaseMs });
    return this.watermarkNow();
  }

  /** Drops a remote client's lease at once (a clean disconnect with nothing active). */
  forgetRemote(clientId: number): void {
    this.remote.delete(clientId);
  }

  /** The GC watermark (see the header); never decreases. */
  watermarkNow(): number {
    let w = this.next;
    const localMin = this.local.min();
    if (localMin < w) w = localMin;
    if (this.remoteEnabled) {
      const now = this.millis();
      if (now < this.warmupUntil) w = 0;
      if (now - this.epochCur.at >= this.holdbackMs) {
        this.epochPrev = this.epochCur;
        this.epochCur = { at: now, pos: this.next };
      }
      // Every timestamp handed out in the last holdbackMs is >= epochPrev.pos.
      if (this.holdbackMs > 0 && this.epochPrev.pos < w) w = this.epochPrev.pos;
      for (const [id, entry] of this.remote) {
        if (entry.expires <= now) this.remote.delete(id);
        else if (entry.oldest < w) w = entry.oldest;
      }
    }
    if (w > this.lastWatermark) this.lastWatermark = w;
    return this.lastWatermark;
  }

  async getWatermark(): Promise<number> {
    if (this.closedError !== null) throw this.closedError;
    return this.watermarkNow();
  }

  // --- lifecycle -------------------------------------------------------------------------------

  stats(): OracleStats {
    return {
      next: this.next,
      persisted: this.persisted,
      loadedMark: this.loadedMark,
      saves: this.saves,
      waitedForMark: this.waitedForMark,
      handedOut: this.handedOut,
      remoteClients: this.remote.size,
    };
  }

  get closed(): boolean {
    return this.closedError !== null;
  }

  async close(): Promise<void> {
    if (this.closedError !== null) return;
    this.closedError = new OracleError('ORACLE_CLOSED', 'the oracle is closed', {});
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(this.closedError);
    if (this.saving !== null) await this.saving.catch(() => undefined);
    await this.markStore.close?.();
  }

  private badCount(count: number): OracleError {
    return new OracleError('ORACLE_BAD_REQUEST', `batch size must be an integer in [1, ${this.maxBatch}], got ${count}`, {
      count,
      maxBatch: this.maxBatch,
    });
  }

  private exhausted(first: number, count: number): OracleError {
    return new OracleError('ORACLE_EXHAUSTED', `timestamps beyond 2^53 - 1 requested (first ${first}, count ${count})`, {
      first,
      count,
    });
  }
}
