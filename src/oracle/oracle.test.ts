/** The in-process oracle: monotonicity, the persistence rule, clocks, restarts, watermark. */
import { describe, expect, it } from 'vitest';
import { isOracleError } from './errors.js';
import { type MarkStore, MemoryMarkStore } from './mark-store.js';
import { Oracle } from './oracle.js';

/** A mark store whose saves become durable one macrotask later; records the durable mark. */
class SlowMarkStore implements MarkStore {
  readonly description = 'slow';
  durable = 0;
  saves = 0;
  failNext = 0;
  constructor(initial = 0) {
    this.durable = initial;
  }
  async load(): Promise<number> {
    return this.durable;
  }
  async save(upper: number): Promise<void> {
    this.saves++;
    await new Promise((r) => setImmediate(r));
    if (this.failNext > 0) {
      this.failNext--;
      throw Object.assign(new Error('disk full'), { code: 'ENOSPC' });
    }
    this.durable = upper;
  }
}

/** A mark store whose saves wait until the test releases them. */
class GatedMarkStore implements MarkStore {
  readonly description = 'gated';
  durable = 0;
  pending: { upper: number; release: () => void }[] = [];
  async load(): Promise<number> {
    return this.durable;
  }
  /** The promise of the newest save (a test may chain on it after the oracle did). */
  lastSave: Promise<void> | null = null;
  save(upper: number): Promise<void> {
    this.lastSave = new Promise((resolve) => {
      this.pending.push({
        upper,
        release: () => {
          this.durable = upper;
          resolve();
        },
      });
    });
    return this.lastSave;
  }
  releaseAll(): void {
    const p = this.pending;
    this.pending = [];
    for (const x of p) x.release();
  }
}

function strictlyIncreasing(xs: readonly number[]): boolean {
  for (let i = 1; i < xs.length; i++) if (!(xs[i] > xs[i - 1])) return false;
  return true;
}

describe('Oracle', () => {
  it('hands out strictly increasing safe integers to many concurrent callers, each <= the durable mark', async () => {
    const marks = new SlowMarkStore();
    // A tiny reservation forces many extensions, some of them while callers wait.
    const oracle = await Oracle.open({ markStore: marks, reserveMicros: 500, clock: () => 1_000_000 });
    const got: number[] = [];
    let beyondMark = 0;
    const caller = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++) {
        const t = await oracle.getTimestamp();
        if (t > marks.durable) beyondMark++;
        got.push(t);
      }
    };
    await Promise.all(Array.from({ length: 50 }, () => caller(200)));
    expect(got.length).toBe(10_000);
    expect(strictlyIncreasing(got)).toBe(true);
    expect(got.every(Number.isSafeInteger)).toBe(true);
    expect(beyondMark).toBe(0);
    expect(marks.saves).toBeGreaterThan(10);
    expect(oracle.stats().waitedForMark).toBeGreaterThan(0);
    await oracle.close();
  });

  it('getTimestamps(n) returns contiguous disjoint ranges in order', async () => {
    const oracle = await Oracle.open({ markStore: new MemoryMarkStore(), clock: () => 5 });
    const a = await oracle.getTimestamps(10);
    const b = await oracle.getTimestamps(3);
    const c = await oracle.getTimestamp();
    expect(a.count).toBe(10);
    expect(b.first).toBe(a.first + 10);
    expect(c).toBe(b.first + 3);
    await oracle.close();
  });

  it('tracks the wall clock in µs when it is ahead and never goes back when it goes back', async () => {
    let now = 1_700_000_000_000_000;
    const oracle = await Oracle.open({ markStore: new MemoryMarkStore(), clock: () => now });
    const t1 = await oracle.getTimestamp();
    expect(t1).toBe(now);
    now += 5_000; // clock moves ahead: timestamps follow it
    const t2 = await oracle.getTimestamp();
    expect(t2).toBe(now);
    now -= 3_600_000_000; // an hour backwards (NTP step, VM migration…)
    const t3 = await oracle.getTimestamp();
    const t4 = await oracle.getTimestamp();
    expect(t3).toBe(t2 + 1);
    expect(t4).toBe(t3 + 1);
    now = Number.NaN; // a broken clock is ignored
    expect(await oracle.getTimestamp()).toBe(t4 + 1);
    now = 1_700_000_000_000_000 + 10_000;
    expect(await oracle.getTimestamp()).toBe(now);
    await oracle.close();
  });

  it('a clock jump far beyond the reservation waits for a durable mark before handing out', async () => {
    let now = 1_000_000;
    const marks = new SlowMarkStore();
    const oracle = await Oracle.open({ markStore: marks, clock: () => now, reserveMicros: 1_000 });
    await oracle.getTimestamp();
    now = 9_000_000_000;
    expect(oracle.tryAllocate(1)).toBe(-1);
    const t = await oracle.getTimestamp();
    expect(t).toBeGreaterThanOrEqual(now);
    expect(t).toBeLessThanOrEqual(marks.durable);
    await oracle.close();
  });

  it('restarts strictly above every timestamp of the previous incarnation, even with the clock behind', async () => {
    const marks = new MemoryMarkStore();
    let now = 2_000_000_000;
    const first = await Oracle.open({ markStore: marks, clock: () => now });
    let last = 0;
    for (let i = 0; i < 1000; i++) last = await first.getTimestamp();
    // Crash: no close(). The new incarnation's clock is far behind.
    now = 10;
    const second = await Oracle.open({ markStore: marks, clock: () => now });
    const t = await second.getTimestamp();
    expect(t).toBeGreaterThan(last);
    expect(t).toBe(second.stats().loadedMark + 1);
    expect(marks.saves.length).toBeGreaterThanOrEqual(2);
    await second.close();
  });

  it('never hands out beyond the durable mark: the hot path does not wait while a pre-extension is pending', async () => {
    const marks = new GatedMarkStore();
    const opening = Oracle.open({ markStore: marks, reserveMicros: 100, clock: () => 0 });
    await new Promise((r) => setImmediate(r));
    marks.releaseAll();
    const oracle = await opening;
    const upper = marks.durable;
    // Under half of the reservation left triggers a background save; allocation continues meanwhile.
    const sync: number[] = [];
    for (;;) {
      const t = oracle.tryAllocate(1);
      if (t < 0) break;
      sync.push(t);
    }
    expect(sync[sync.length - 1]).toBe(upper);
    expect(marks.pending.length).toBe(1); // the pre-extension started long before exhaustion
    const waiting = oracle.getTimestamp();
    let resolved = false;
    void waiting.then(() => {
      resolved = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(resolved).toBe(false); // exhausted: it waits for the save…
    marks.releaseAll();
    expect(await waiting).toBe(upper + 1); // …and gets the next number once durable
    expect(marks.durable).toBeGreaterThan(upper);
    marks.releaseAll();
    await oracle.close();
  });

  it('a failing save rejects waiting callers with the mark error and recovers on the next request', async () => {
    const marks = new SlowMarkStore();
    let now = 1_000;
    const oracle = await Oracle.open({ markStore: marks, clock: () => now, reserveMicros: 10 });
    now = 1_000_000; // beyond the reservation: the next request needs a save
    marks.failNext = 1;
    await expect(oracle.getTimestamp()).rejects.toMatchObject({ code: 'ENOSPC' });
    const t = await oracle.getTimestamp();
    expect(t).toBeGreaterThanOrEqual(now);
    expect(t).toBeLessThanOrEqual(marks.durable);
    await oracle.close();
  });

  it('rejects bad batch sizes, exhaustion and use after close with typed errors', async () => {
    const oracle = await Oracle.open({ markStore: new MemoryMarkStore(), maxBatch: 100 });
    for (const n of [0, -1, 1.5, 101, Number.NaN]) {
      await expect(oracle.getTimestamps(n)).rejects.toMatchObject({ code: 'ORACLE_BAD_REQUEST', details: { count: n } });
    }
    await oracle.close();
    await expect(oracle.getTimestamp()).rejects.toMatchObject({ code: 'ORACLE_CLOSED' });

    const nearEnd = await Oracle.open({ markStore: new MemoryMarkStore(Number.MAX_SAFE_INTEGER - 5) });
    const r = await nearEnd.getTimestamps(5);
    expect(r.first + r.count - 1).toBe(Number.MAX_SAFE_INTEGER);
    const err = await nearEnd.getTimestamp().catch((e: unknown) => e);
    expect(isOracleError(err, 'ORACLE_EXHAUSTED')).toBe(true);
    await nearEnd.close();
    await expect(Oracle.open({ markStore: new MemoryMarkStore(Number.MAX_SAFE_INTEGER) })).rejects.toMatchObject({
      code: 'ORACLE_EXHAUSTED',
    });
  });

  it('close() rejects callers waiting for a save', async () => {
    const marks = new GatedMarkStore();
    let now = 0;
    const opening = Oracle.open({ markStore: marks, clock: () => now, reserveMicros: 10 });
    await new Promise((r) => setImmediate(r));
    marks.releaseAll();
    const oracle = await opening;
    now = 1_000_000;
    const waiting = oracle.getTimestamp();
    const closing = oracle.close();
    await expect(waiting).rejects.toMatchObject({ code: 'ORACLE_CLOSED' });
    marks.releaseAll();
    await closing;
  });
});

describe('Oracle GC watermark', () => {
  it('is the oldest registered start timestamp, else the next timestamp; it never decreases', async () => {
    const oracle = await Oracle.open({ markStore: new MemoryMarkStore(), clock: () => 0 });
    const a = await oracle.getStartTimestamp();
    const b = await oracle.getStartTimestamp();
    await oracle.getTimestamp();
    expect(await oracle.getWatermark()).toBe(a.timestamp);
    a.release();
    a.release(); // idempotent
    expect(await oracle.getWatermark()).toBe(b.timestamp);
    b.release();
    const next = oracle.stats().next;
    expect(await oracle.getWatermark()).toBe(next);
    // A registration below the published watermark cannot pull it back (its lease was lost).
    const late = oracle.registerActive(b.timestamp - 1);
    expect(await oracle.getWatermark()).toBe(next);
    late.release();
    await oracle.close();
  });

  it('a start timestamp that waited for a reservation is registered the moment it is allocated', async () => {
    let now = 0;
    const marks = new GatedMarkStore();
    const opening = Oracle.open({ markStore: marks, clock: () => now, reserveMicros: 1_000 });
    await new Promise((r) => setImmediate(r));
    marks.releaseAll();
    const oracle = await opening;
    now = 10_000_000; // the clock ran past the reservation: the next start ts waits for a save
    const started = oracle.getStartTimestamp();
    expect(marks.pending.length).toBe(1);
    // Chained after the oracle's own handler: runs right after the waiter was served, before the
    // caller's continuation. A GC pass reading the watermark here must not pass the new start ts.
    let seen = -1;
    const saved = (marks.lastSave as Promise<void>).then(() => {
      seen = oracle.watermarkNow();
    });
    marks.releaseAll();
    await saved;
    const reg = await started;
    expect(reg.timestamp).toBeGreaterThanOrEqual(now);
    expect(seen).toBeLessThanOrEqual(reg.timestamp);
    reg.release();
    await oracle.close();
  });

  it('remote leases: min over live clients, expiry, holdback for report lag, warm-up after restart', async () => {
    let ms = 0;
    const marks = new MemoryMarkStore();
    const opts = { markStore: marks, clock: () => 0, millis: () => ms, leaseMs: 5000, holdbackMs: 3000 };
    const first = await Oracle.open(opts);
    first.enableRemoteClients();
    // Fresh deployment (mark was 0): no warm-up, but the holdback keeps the watermark at the
    // oracle's position of >= 3 s ago, since clients report new start timestamps with a lag.
    const pos0 = first.stats().next;
    for (let i = 0; i < 100; i++) await first.getTimestamp();
    expect(first.watermarkNow()).toBe(pos0);
    ms = 1000;
    first.reportRemote(1, pos0 + 10); // client 1 runs a transaction that started at pos0 + 10
    first.reportRemote(2, Number.POSITIVE_INFINITY); // client 2 has nothing active
    ms = 3000;
    const pos3000 = first.stats().next;
    expect(first.watermarkNow()).toBe(pos0); // the epoch rotates here
    for (let i = 0; i < 100; i++) await first.getTimestamp();
    ms = 5000;
    first.reportRemote(1, pos0 + 10); // renewal: lease until 10 000
    ms = 6000;
    expect(pos3000).toBeGreaterThan(pos0 + 10);
    expect(first.watermarkNow()).toBe(pos0 + 10); // the live client's oldest dominates
    ms = 9000;
    const pos6000 = first.stats().next; // (no allocation since 6000)
    expect(first.watermarkNow()).toBe(pos0 + 10);
    ms = 10_001; // client 1 went silent: expired; client 2 expired at 6000
    const after = first.watermarkNow();
    expect(after).toBe(pos6000);
    expect(first.stats().remoteClients).toBe(0);

    // Restart: until every live client could re-report (one lease), the watermark stays at 0.
    const second = await Oracle.open(opts);
    second.enableRemoteClients();
    expect(second.watermarkNow()).toBe(0);
    ms += 4999;
    expect(second.watermarkNow()).toBe(0);
    ms += 2;
    expect(second.watermarkNow()).toBeGreaterThan(after);
    await first.close();
    await second.close();
  });
});
