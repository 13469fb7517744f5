/**
 * The worker runtime (Percolator §2.4): scanners find notified rows, a bounded run queue feeds
 * `threads` runners, each runner processes one row at a time — every observer of every notified
 * column, each in its own transaction (run-observer.ts) — then clears the notify cells it has
 * covered and releases the row's advisory lock.
 *
 * Failure policy: an observer that throws aborts its transaction and the row is retried with
 * exponential backoff; after `maxFailures` consecutive failures the cell is parked (skipped by
 * this worker, logged, counted in `metrics.parked`) so a poison row never blocks the others.
 * Notify cells of a column are cleared only after all its observers succeeded, and only up to
 * the newest notify timestamp seen before the run: a newer change keeps its notification.
 *
 * stop() is graceful: scanners stop, queued jobs are dropped (their notifications stay), running
 * observer transactions finish (commit or abort) before it resolves.
 */
import { bytesKey } from '../store/bytes.js';
import { NOTIFY, encodeColumn } from '../txn/layout.js';
import { ALL_TABLES, type ObservedColumns } from './observed-columns.js';
import type { LockService } from './lock-service.js';
import type { ObserverFn, ObserverRegistration } from './observer.js';
import { type ObserverHost, runObserver } from './run-observer.js';
import { type Job, NOTIFY_FILTER, type NotifiedCell, type ScannerHost, type ScannerStats, notificationsOf, scanLoop } from './scanner.js';

export interface WorkerOptions {
  /** Concurrent observer runs (rows processed at once). Default 4. */
  readonly threads?: number;
  /** Scanner tasks. Default 2. */
  readonly scanners?: number;
  /** Run queue capacity; scanners pause while it is full. Default 4 × threads. */
  readonly queueSize?: number;
  /** Consecutive failures before a cell is parked. Default 5. */
  readonly maxFailures?: number;
  /** Advisory row lock TTL. Default 30 s. */
  readonly rowLockTtlMs?: number;
  /** Called for parked cells and observer errors (default: console.error). */
  readonly log?: (message: string, error?: unknown) => void;
}

export interface WorkerMetrics {
  runs: number;
  commits: number;
  skipped: number;
  conflicts: number;
  failures: number;
  parked: number;
  cleared: number;
  /** Per-observer run latency (ms): last and total, for status pages. */
  readonly observerMs: Record<string, { runs: number; totalMs: number; lastMs: number }>;
  readonly scanner: ScannerStats;
}

/** What a worker needs from its Percolator instance. */
export interface WorkerHost extends ObserverHost {
  readonly owner: string;
  readonly observed: ObservedColumns;
  readonly lockService: LockService;
  percolatorTables(): Promise<string[]>;
}

let workerSeq = 0;

interface FailureState {
  failures: number;
  nextAttempt: number;
  parked: boolean;
}

export class Worker {
  private readonly observers: ObserverRegistration[] = [];
  private readonly threads: number;
  private readonly scannerCount: number;
  private readonly queueSize: number;
  private readonly maxFailures: number;
  private readonly rowLockTtlMs: number;
  private readonly log: (message: string, error?: unknown) => void;
  private readonly queue: Job[] = [];
  private readonly spaceWaiters: (() => void)[] = [];
  private readonly jobWaiters: (() => void)[] = [];
  private readonly idleWaiters = new Set<() => void>();
  private readonly failuresOf = new Map<string, FailureState>();
  private tasks: Promise<void>[] = [];
  private isRunning = false;
  private active = 0;
  readonly metrics: WorkerMetrics = {
    runs: 0,
    commits: 0,
    skipped: 0,
    conflicts: 0,
    failures: 0,
    parked: 0,
    cleared: 0,
    observerMs: {},
    scanner: { rowsScanned: 0, notificationsFound: 0, jumps: 0, emptyPasses: 0 },
  };

  constructor(
    private readonly host: WorkerHost,
    options: WorkerOptions = {},
  ) {
    this.threads = Math.max(1, options.threads ?? 4);
    this.scannerCount = Math.max(1, options.scanners ?? 2);
    this.queueSize = Math.max(1, options.queueSize ?? this.threads * 4);
    this.maxFailures = Math.max(1, options.maxFailures ?? 5);
    this.rowLockTtlMs = options.rowLockTtlMs ?? 30_000;
    this.log = options.log ?? ((m, e) => console.error(`percolator worker: ${m}`, e ?? ''));
  }

  /**
   * Registers an observer of `column` (`family:qualifier`) under a unique `name`, in `table` or
   * (default) in every Percolator table. Call before start().
   */
  observe(column: string, name: string, fn: ObserverFn, options: { table?: string } = {}): this {
    encodeColumn(column);
    if (this.isRunning) throw new Error('observe() must be called before start()');
    if (this.observers.some((o) => o.name === name)) throw new Error(`an observer named ${name} is already registered`);
    this.observers.push({ name, column, table: options.table ?? ALL_TABLES, fn });
    return this;
  }

  /** Records the observed columns (so writers start notifying) and starts scanners and runners. */
  async start(): Promise<void> {
    if (this.isRunning) return;
    for (const o of this.observers) await this.host.observed.register(o.table, o.column, o.name);
    this.isRunning = true;
    const scannerHost = this.scannerHost();
    // Each scanner is its own advisory-lock owner, so scanners of one process exclude each other too.
    for (let i = 0; i < this.scannerCount; i++) this.tasks.push(this.guard(scanLoop(scannerHost, `${this.host.owner}/${workerSeq++}/${i}`), 'scanner'));
    for (let i = 0; i < this.threads; i++) this.tasks.push(this.guard(this.runner(), 'runner'));
  }

  async stop(): Promise<void> {
    if (!this.isRunning) return;
    this.isRunning = false;
    for (const w of this.jobWaiters.splice(0)) w();
    for (const w of this.spaceWaiters.splice(0)) w();
    for (const w of this.idleWaiters) w();
    const dropped = this.queue.splice(0);
    for (const job of dropped) await this.host.lockService.unlock(this.lockKey(job.table, job.row), job.lockOwner);
    await Promise.all(this.tasks);
    this.tasks = [];
  }

  /** Hints the scanners that new work may exist (e.g. a local commit wrote a notification). */
  wake(): void {
    for (const w of this.idleWaiters) w();
  }

  /** Cells parked after too many failures: `table/rowhex/column`. */
  parkedCells(): string[] {
    return [...this.failuresOf.entries()].filter(([, s]) => s.parked).map(([k]) => k);
  }

  /** Rows currently queued or running. */
  get busy(): number {
    return this.queue.length + this.active;
  }

  private async guard(p: Promise<void>, what: string): Promise<void> {
    try {
      await p;
    } catch (e) {
      if (this.isRunning) this.log(`${what} stopped by an unexpected error`, e);
    }
  }

  private lockKey(table: string, row: Uint8Array): string {
    return `${table}\u0000${bytesKey(row)}`;
  }

  private observersOf(table: string, column: string): ObserverRegistration[] {
    return this.observers.filter((o) => o.column === column && (o.table === ALL_TABLES || o.table === table));
  }

  private cellKey(table: string, row: Uint8Array, column: string): string {
    return `${table}/${Buffer.from(row).toString('hex')}/${column}`;
  }

  private scannerHost(): ScannerHost {
    const tablesCache = { at: 0, tables: [] as string[] };
    return {
      store: this.host.store,
      rowLockTtlMs: this.rowLockTtlMs,
      stats: this.metrics.scanner,
      running: () => this.isRunning,
      tables: async () => {
        if (Date.now() - tablesCache.at > 1000) {
          const all = await this.host.percolatorTables();
          const wanted = new Set(this.observers.map((o) => o.table));
          tablesCache.tables = wanted.has(ALL_TABLES) ? all : all.filter((t) => wanted.has(t));
          tablesCache.at = Date.now();
        }
        return tablesCache.tables;
      },
      observes: (table, column) => this.observersOf(table, column).length > 0,
      tryLockRow: (table, row, lockOwner) => this.host.lockService.tryLock(this.lockKey(table, row), lockOwner, this.rowLockTtlMs),
      skip: (table, row, now) => {
        const prefix = `${table}/${Buffer.from(row).toString('hex')}/`;
        for (const [k, s] of this.failuresOf) if (k.startsWith(prefix) && (s.parked || s.nextAttempt > now)) return true;
        return false;
      },
      enqueue: async (job) => {
        while (this.isRunning && this.queue.length >= this.queueSize) await new Promise<void>((r) => this.spaceWaiters.push(r));
        if (!this.isRunning) {
          await this.host.lockService.unlock(this.lockKey(job.table, job.row), job.lockOwner);
          return;
        }
        this.queue.push(job);
        this.jobWaiters.shift()?.();
      },
      idle: (ms) =>
        new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            this.idleWaiters.delete(done);
            resolve();
          };
          const timer = setTimeout(done, ms);
          this.idleWaiters.add(done);
        }),
    };
  }

  private async runner(): Promise<void> {
    while (this.isRunning) {
      const job = this.queue.shift();
      if (job === undefined) {
        await new Promise<void>((r) => this.jobWaiters.push(r));
        continue;
      }
      this.spaceWaiters.shift()?.();
      this.active++;
      try {
        await this.process(job);
      } finally {
        this.active--;
        await this.host.lockService.unlock(this.lockKey(job.table, job.row), job.lockOwner);
      }
    }
  }

  private async process(job: Job): Promise<void> {
    // Re-read the row's notifications now that we hold its lock: the scan may have been stale
    // (another runner may have processed and cleared them meanwhile).
    const fresh = await this.host.store.readRow(job.table, job.row, NOTIFY_FILTER);
    if (fresh === null) return;
    const current = new Map(notificationsOf(fresh.cells).map((c) => [c.column, c]));
    const cells = job.cells.map((c) => current.get(c.column)).filter((c): c is NotifiedCell => c !== undefined);
    const clears: { column: string; maxTs: number }[] = [];
    for (const cell of cells) {
      const key = this.cellKey(job.table, job.row, cell.column);
      let ok = true;
      for (const obs of this.observersOf(job.table, cell.column)) {
        const t0 = performance.now();
        try {
          const r = await runObserver(this.host, obs, job.table, job.row, cell.weak);
          this.metrics.conflicts += r.conflicts;
          if (r.ran) {
            this.metrics.runs++;
            this.metrics.commits++;
            const m = (this.metrics.observerMs[obs.name] ??= { runs: 0, totalMs: 0, lastMs: 0 });
            m.runs++;
            m.lastMs = performance.now() - t0;
            m.totalMs += m.lastMs;
          } else this.metrics.skipped++;
        } catch (e) {
          ok = false;
          this.fail(key, e);
          break;
        }
      }
      if (ok) {
        this.failuresOf.delete(key);
        clears.push({ column: cell.column, maxTs: cell.maxTs });
      }
    }
    if (clears.length === 0) return;
    await this.host.store.mutateRow(
      job.table,
      job.row,
      clears.map((c) => ({
        deleteFromColumn: { familyName: NOTIFY, columnQualifier: encodeColumn(c.column), timeRange: { startTimestampMicros: 0, endTimestampMicros: c.maxTs + 1 } },
      })),
    );
    this.metrics.cleared += clears.length;
  }

  private fail(key: string, error: unknown): void {
    this.metrics.failures++;
    const s = this.failuresOf.get(key) ?? { failures: 0, nextAttempt: 0, parked: false };
    s.failures++;
    if (s.failures >= this.maxFailures) {
      if (!s.parked) {
        s.parked = true;
        this.metrics.parked++;
        this.log(`parked ${key} after ${s.failures} failures`, error);
      }
    } else {
      s.nextAttempt = Date.now() + Math.min(30_000, 10 * 2 ** s.failures);
    }
    this.failuresOf.set(key, s);
  }
}
