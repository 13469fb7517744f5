/**
 * Bus clumping on the real worker: N workers of one Percolator instance (each one scanner, one
 * runner, a run queue of one — the paper's "scanning thread that runs the observer") share one
 * advisory lock service and observe one column of a table in which a few rows are slow to
 * process (their observer sleeps). A writer changes random rows at a fixed rate (each turn it
 * commits every change due since its last turn in one transaction, so a busy event loop delays
 * changes but does not reduce the offered load).
 *
 * - With anti-clumping: the real scanner (src/notify/scanner.ts) with the real lock service;
 *   meeting a row another scanner holds makes it jump to a random place.
 * - Without: the same scanner, but the lock service is wrapped so that `tryLock` on a held row
 *   waits until the row is free and then takes it instead of failing — the scanner follows the
 *   scanner ahead of it instead of jumping. Nothing in src/notify changes.
 *
 * Invariants: both runs use identical parameters and code paths except the lock service;
 * correctness never depends on it (the ack protocol decides), so both runs process every change;
 * rates are measured over the window after `warmupSeconds`.
 */
import { InProcessLockService, type LockService } from '../notify/lock-service.js';
import type { Worker } from '../notify/worker.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { Percolator } from '../txn/percolator.js';

export interface RealClumpingOptions {
  readonly antiClumping: boolean;
  /** Rows (default 400). */
  readonly rows?: number;
  /** Workers, each one scanner and one runner (default 8). */
  readonly scanners?: number;
  /** Every `slowEvery`-th row is slow (default 4, i.e. 25 % of the rows). */
  readonly slowEvery?: number;
  /** What the observer spends on a slow row (default 50 ms, asynchronous). */
  readonly slowMs?: number;
  /** Changes per second written while measuring (default 100). */
  readonly changesPerSecond?: number;
  /** Measured seconds (default 5). */
  readonly seconds?: number;
  /** Seconds before measuring (default 1). */
  readonly warmupSeconds?: number;
  /**
   * Tablet split threshold of the memory store (default 1 024 bytes: the table splits into dozens
   * of tablets, as a large Bigtable table has many). `null`: the store's default (64 MiB), i.e.
   * one tablet — where the scanner's random origin degenerates (see test/notify-scanner.test.ts).
   */
  readonly tabletSplitBytes?: number | null;
  /**
   * Every store call first yields to the event loop, as a call with real I/O does (default true).
   * Without it the memory store answers in microtasks and one scanner with its runner can walk a
   * long stretch of rows in a single macrotask, starving every timer (slow observers, the writer)
   * for hundreds of milliseconds — an artefact of the memory store, not clumping.
   */
  readonly ioYield?: boolean;
}

export interface RealClumpingResult {
  readonly antiClumping: boolean;
  /** Notified rows the scanners read per second (the real scanner's `rowsScanned`). */
  readonly rowsScannedPerSecond: number;
  /** Observer commits per second. */
  readonly notificationsPerSecond: number;
  readonly changesPerSecond: number;
  /** From a change's commit to the observer run that saw it. */
  readonly medianLatencyMs: number;
  readonly p99LatencyMs: number;
  /** Scanner jumps per second (anti-clumping only). */
  readonly jumpsPerSecond: number;
  /** tryLock calls that had to wait behind another scanner, per second (without anti-clumping only). */
  readonly waitsPerSecond: number;
  /** Observer transactions that lost a conflict and were retried (measured window). */
  readonly observerConflicts: number;
  /** Observer runs that failed (measured window). */
  readonly observerFailures: number;
  /** Cells parked after repeated failures (whole run). */
  readonly parked: number;
  /** Notifications pending when the writer stopped. */
  readonly backlogAtEnd: number;
  /** Tablets of the table when the measurement started. */
  readonly tablets: number;
  readonly seconds: number;
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** `inner`, except that every call first yields to the event loop (see `ioYield`). */
export function yieldingStore(inner: Store): Store {
  const after =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await tick();
      return fn.apply(inner, args);
    };
  return {
    url: inner.url,
    limits: inner.limits,
    createTable: after(inner.createTable),
    deleteTable: after(inner.deleteTable),
    listTables: after(inner.listTables),
    getTable: after(inner.getTable),
    modifyColumnFamilies: after(inner.modifyColumnFamilies),
    dropRowRange: after(inner.dropRowRange),
    readRow: after(inner.readRow),
    async *readRows(...args) {
      await tick();
      yield* inner.readRows(...args);
    },
    mutateRow: after(inner.mutateRow),
    mutateRows: after(inner.mutateRows),
    checkAndMutateRow: after(inner.checkAndMutateRow),
    readModifyWriteRow: after(inner.readModifyWriteRow),
    sampleRowKeys: after(inner.sampleRowKeys),
    close: () => inner.close(),
  };
}

/**
 * "No anti-clumping": a lock service whose tryLock waits until the row is free, then takes it.
 * `releaseAll()` makes every waiting and later call fail (so scanners can stop).
 */
export class WaitBehindLockService implements LockService {
  private readonly waiters = new Map<string, Set<() => void>>();
  private released = false;
  waits = 0;

  constructor(private readonly inner: InProcessLockService = new InProcessLockService()) {}

  async tryLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    let waited = false;
    for (;;) {
      if (this.released) return false;
      if (this.inner.tryLockSync(key, owner, ttlMs)) return true;
      if (!waited) this.waits++;
      waited = true;
      await new Promise<void>((resolve) => {
        let set = this.waiters.get(key);
        if (set === undefined) this.waiters.set(key, (set = new Set()));
        const done = (): void => {
          clearTimeout(timer);
          set.delete(done);
          if (set.size === 0 && this.waiters.get(key) === set) this.waiters.delete(key);
          resolve();
        };
        // The holder may also lose the lock by expiry, which sends no unlock: look again now and then.
        const timer = setTimeout(done, Math.max(1, Math.min(ttlMs, 100)));
        set.add(done);
      });
    }
  }

  async unlock(key: string, owner: string): Promise<void> {
    await this.inner.unlock(key, owner);
    for (const w of [...(this.waiters.get(key) ?? [])]) w();
  }

  releaseAll(): void {
    this.released = true;
    for (const set of [...this.waiters.values()]) for (const w of [...set]) w();
  }

  async close(): Promise<void> {
    this.releaseAll();
    await this.inner.close();
  }
}

const TABLE = 'clumping';
const VALUE = 'c:value';
const SEEN = 'c:seen';

/** Waiting is the point here (write pacing, measurement windows). */
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

export async function runRealClumping(o: RealClumpingOptions): Promise<RealClumpingResult> {
  const rows = o.rows ?? 400;
  const n = o.scanners ?? 8;
  const slowEvery = o.slowEvery ?? 4;
  const slowMs = o.slowMs ?? 50;
  const rate = o.changesPerSecond ?? 100;
  const seconds = o.seconds ?? 5;
  const warmup = o.warmupSeconds ?? 1;
  const lockService: LockService = o.antiClumping ? new InProcessLockService() : new WaitBehindLockService();
  const split = o.tabletSplitBytes === undefined ? 1024 : o.tabletSplitBytes;
  const memory = await openStore('memory:', split === null ? {} : { tabletSplitBytes: split });
  const store = o.ioYield === false ? memory : yieldingStore(memory);
  const db = await Percolator.open({ store, lockService, leaseMs: 5_000 }).catch(async (e: unknown) => {
    await store.close();
    throw e;
  });
  const workers: Worker[] = [];
  try {
    await db.createTable(TABLE);
    const key = (i: number): string => `r${String(i).padStart(5, '0')}`;
    let measuring = false;
    const latencies: number[] = [];
    for (let w = 0; w < n; w++) {
      const worker = db.worker({ scanners: 1, threads: 1, queueSize: 1, log: () => undefined });
      worker.observe(
        VALUE,
        'clumping',
        async (tx, row) => {
          const v = await tx.getString(TABLE, row, VALUE);
          const i = Number(Buffer.from(row).toString('latin1').slice(1));
          if (i % slowEvery === 0) await sleep(slowMs);
          if (measuring && v !== null) latencies.push(Date.now() - Number(v));
          tx.set(TABLE, row, SEEN, v ?? '');
        },
        { table: TABLE },
      );
      workers.push(worker);
    }
    // Observers are registered (start) before the first write, as the registry contract asks.
    for (const w of workers) await w.start();
    // Every row written once (which also splits the table into tablets) and processed, then a
    // steady stream of changes: the measurement sees the steady state, not the initial backlog.
    await db.transaction(async (tx) => {
      for (let i = 0; i < rows; i++) tx.set(TABLE, key(i), VALUE, String(Date.now()));
    });
    await db.waitForQuiescence({ timeoutMs: 60_000 });
    let writing = true;
    let written = 0;
    const writer = (async () => {
      const t0 = performance.now();
      while (writing) {
        // Every change due since the last turn, in one transaction: the offered load stays the same
        // however often the writer gets the event loop (busy scanners must not throttle it).
        const due = Math.floor(((performance.now() - t0) / 1000) * rate);
        if (due > written) {
          const n = due - written;
          await db.transaction(async (tx) => {
            for (let i = 0; i < n; i++) tx.set(TABLE, key(Math.floor(Math.random() * rows)), VALUE, String(Date.now()));
          });
          written += n;
        }
        await sleep(2);
      }
    })();
    const totals = () => {
      let scanned = 0;
      let commits = 0;
      let jumps = 0;
      let conflicts = 0;
      let failures = 0;
      let parked = 0;
      for (const w of workers) {
        scanned += w.metrics.scanner.rowsScanned;
        commits += w.metrics.commits;
        jumps += w.metrics.scanner.jumps;
        conflicts += w.metrics.conflicts;
        failures += w.metrics.failures;
        parked += w.metrics.parked;
      }
      return {
        scanned,
        commits,
        jumps,
        conflicts,
        failures,
        parked,
        written,
        waits: lockService instanceof WaitBehindLockService ? lockService.waits : 0,
      };
    };
    await sleep(warmup * 1000);
    measuring = true;
    const tablets = (await store.sampleRowKeys(TABLE)).length;
    const a = totals();
    const start = performance.now();
    await sleep(seconds * 1000);
    const b = totals();
    const elapsed = (performance.now() - start) / 1000;
    measuring = false;
    writing = false;
    await writer;
    const backlogAtEnd = await db.pendingNotifications();
    const stopping = workers.map((w) => w.stop());
    if (lockService instanceof WaitBehindLockService) lockService.releaseAll();
    await Promise.all(stopping);
    latencies.sort((x, y) => x - y);
    const per = (x: number): number => Math.round(x / elapsed);
    return {
      antiClumping: o.antiClumping,
      rowsScannedPerSecond: per(b.scanned - a.scanned),
      notificationsPerSecond: per(b.commits - a.commits),
      changesPerSecond: per(b.written - a.written),
      medianLatencyMs: Math.round(percentile(latencies, 0.5) * 10) / 10,
      p99LatencyMs: Math.round(percentile(latencies, 0.99) * 10) / 10,
      jumpsPerSecond: per(b.jumps - a.jumps),
      waitsPerSecond: per(b.waits - a.waits),
      observerConflicts: b.conflicts - a.conflicts,
      observerFailures: b.failures - a.failures,
      parked: b.parked,
      backlogAtEnd,
      tablets,
      seconds: Math.round(elapsed * 100) / 100,
    };
  } finally {
    await db.close();
    await lockService.close();
    await memory.close();
  }
}
