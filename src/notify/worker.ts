/**
 * The worker runtime (Percolator §2.4): scanners find notified rows, a bounded run queue feeds
 * `threads` runners, each runner processes one row at a time — every observer of every notified
 * column, each in its own transaction (run-observer.ts) — then clears the notify cells it has
 * covered and releases the row's advisory lock.
 *
 * Failure policy: an observer that throws aborts its transaction and the row is retried with
 * exponential backoff; after `maxFailures` consecutive failures the cell is parked (skipped by
 * this worker, logged, counted in `metrics.parked`) so a poison row never blocks the others.
 * Failed runs are logged too, bounded: the first of each kind (error code) at once, then at most
 * once a minute per kind with a count (`fail`), so a worker that cannot run anything (its oracle
 * out of reach) says so at once without flooding its log. Runs that succeed log nothing.
 * Notify cells of a column are cleared only after all its observers succeeded, and only up to
 * the newest notify timestamp seen before the run: a newer change keeps its notification.
 *
 * Local dispatch: a commit made by this worker's own observers (or by anyone else through the same
 * Percolator: `notified()`, or announced with `hint()`, as the web index's loader does) that
 * notifies a column this worker observes hands the row straight to a runner, without waiting for
 * a scanner to find it — the scanners remain the safety net for everything else (other processes'
 * commits, rows that were busy, crashes). A hint is only a
 * proposal, exactly like a scanned row: the runner takes the row's advisory lock, reads its notify
 * cells afresh, and the ack protocol decides. A hint for a row this worker already holds (queued
 * or running) is remembered and re-issued when the row is released, so a notification written
 * while its row runs is picked up at once too.
 *
 * Weak rows wait: a row whose notifications are all weak (hinted by a weak notification, or
 * scanned with no strong one among its cells) runs before its time only when the worker is
 * nearly idle — nothing queued, the event loop not busy (its utilization, smoothed over ~300 ms,
 * under busyUtilization) and fewer than a quarter of the runners (at least one) busy — or on every runner
 * once no other work has been taken for IDLE_AFTER_MS (the drain after a burst); otherwise it
 * waits weakDelayMs, then takes its turn after the hints older than it. What arrives for it
 * meanwhile collapses into its one run; a strong hint moves it to the ordinary queue
 * (docs/observers.md › Weak notifications).
 *
 * Brief waits: a row a local commit changed in a column whose observers all have `collapseMs`
 * waits up to that long while the event loop is busy, so that the changes arriving meanwhile
 * collapse into one run; with the loop not busy it runs at once (docs/observers.md › Brief
 * waits). Rows found by scanners and rows hinted with hint() do not wait.
 *
 * Stopping: stop() ends dispatching at once — scanners stop, queued jobs are dropped (their
 * notifications stay) — and fires the observers' signal (ObserverContext.signal), then waits for
 * the running observer transactions to finish (commit or abort) for up to a grace period
 * (`stopGraceMs`, or stop's `graceMs`). Runs still going then are abandoned (RunControl): their
 * transactions are aborted, so none of them commits afterwards; their rows' advisory locks are let
 * go, so their notifications — never cleared — are run again by another worker or the next start;
 * stop() resolves with how many it abandoned (and logs them). Each start has its own Epoch: a
 * loop of an earlier start that wakes up late (an abandoned run returning) ends, and touches
 * nothing of the worker's present state.
 */
import { performance } from 'node:perf_hooks';
import { bytesKey } from '../store/bytes.js';
import { isStoreError } from '../store/errors.js';
import { clearNotifications, encodeColumn } from '../txn/layout.js';
import { TxnError, describeRow } from '../txn/errors.js';
import type { NotifiedWrite } from '../txn/transaction.js';
import { ALL_TABLES, type ObservedColumns } from './observed-columns.js';
import type { LockService } from './lock-service.js';
import type { ObserverFn, ObserverRegistration } from './observer.js';
import { ObserverFailure, type ObserverHost, RunControl, codeOrName, runObserver } from './run-observer.js';
import { defaultWorkerLog } from './worker-log.js';
import { type Job, NOTIFY_FILTER, type ScannerHost, type ScannerStats, notificationsOf, scanLoop } from './scanner.js';
import { Queue } from '../util/queue.js';
import { MAX_TIMER_MS, isTimerMs } from '../util/timer-ms.js';
import { describeType } from '../util/describe-type.js';
import { unknownOption } from '../util/options.js';

export interface WorkerOptions {
  /** Concurrent observer runs (rows processed at once). Default 4. */
  readonly threads?: number;
  /** Scanner tasks. Default 2. */
  readonly scanners?: number;
  /** Run queue capacity; scanners pause while it is full. Default 4 × threads. */
  readonly queueSize?: number;
  /** Consecutive failures before a cell is parked. Default 5. */
  readonly maxFailures?: number;
  /** Advisory row lock TTL (a waiting row's: see weakDelayMs). Default 30 s. */
  readonly rowLockTtlMs?: number;
  /**
   * How long a row with weak notifications only waits at least while other rows are queued; then
   * it takes its turn after the hints older than it. What arrives for it meanwhile collapses into
   * its one run. Default 10 s. A waiting row's advisory lock lasts three times this (at least
   * rowLockTtlMs), so the wait never lets it lapse.
   */
  readonly weakDelayMs?: number;
  /**
   * The event loop utilization (0–1, smoothed over ~300 ms) from which the worker counts as busy:
   * then brief and weak rows wait instead of running early (see the header). Default 0.85 (a
   * saturated web index: 0.95–0.97). 0: always busy; above 1: never.
   */
  readonly busyUtilization?: number;
  /**
   * How long stop() (and the database's close()) waits for running observers before abandoning
   * them (see stop). An integer of ms from 0. Default 10 000: within a container's usual 30 s
   * between SIGTERM and SIGKILL, and less than the default lock TTL.
   */
  readonly stopGraceMs?: number;
  /**
   * Called for parked cells, failed runs (the first of each kind at once, then at most once a
   * minute per kind with a count: see `Worker.fail`), loops restarted and abandoned runs
   * (default: console.error, one line for a typed error: `worker-log.ts`). What it throws is dropped: a broken logger does not change what the worker does.
   */
  readonly log?: (message: string, error?: unknown) => void;
}

export interface WorkerMetrics {
  runs: number;
  /** Runs that committed (a run whose observer wrote nothing does not commit). */
  commits: number;
  /** Rows handed to runners by local commits (not found by scanning). */
  hinted: number;
  skipped: number;
  /** Commit conflicts (write-write, or a live lock), each followed by a retry. */
  conflicts: number;
  /** Runs retried at once because the observer found its snapshot stale before writing. */
  staleRetries: number;
  failures: number;
  parked: number;
  cleared: number;
  /** Scanner and runner loops started again after an unexpected error (a store or lock service unreachable). */
  restarts: number;
  /** Rows whose observer runs a stop() abandoned after its grace period (they did not commit). */
  abandoned: number;
  /** Per observer: runs, their latency (ms: last, and total with retries), commits and conflicts retried. */
  readonly observerMs: Record<string, { runs: number; totalMs: number; lastMs: number; commits: number; conflicts: number }>;
  readonly scanner: ScannerStats;
}

export interface StopOptions {
  /** How long to wait for running observers before abandoning them (ms, an integer from 0). Default: the worker's stopGraceMs. */
  readonly graceMs?: number;
}

export interface StopResult {
  /** Rows whose observer runs were still going after the grace period: abandoned, not committed. */
  readonly abandoned: number;
}

/** What a worker needs from its Percolator instance. */
export interface WorkerHost extends ObserverHost {
  /**
   * What its advisory locks are named after: the process's liveness id, so a lock service that
   * reads the leases of this store takes a dead process's rows over (server.ts › ownerGoneIn), or
   * a name no lock service takes for a lease (Percolator's LEASE_ELSEWHERE) where it cannot read them.
   */
  readonly owner: string;
  readonly observed: ObservedColumns;
  readonly lockService: LockService;
  percolatorTables(): Promise<string[]>;
  /** Resolves if `table` is a Percolator table; else the store's TABLE_NOT_FOUND, or NOT_A_PERCOLATOR_TABLE. */
  checkTable(table: string): Promise<void>;
}

let workerSeq = 0;

/** Local hints queued at most (beyond it, hints are dropped: the scanners find those rows). */
const MAX_HINTED = 100_000;

/**
 * How long a row with weak notifications only waits at least while other work is queued. See
 * docs/observers.md for what it bought on the web index.
 */
const WEAK_DELAY_MS = 10_000;

/**
 * No strong work taken for this long: the worker is idle, not between two of a backlog's jobs, and
 * waiting rows run on every runner instead of idleRunners (see nextJob).
 */
const IDLE_AFTER_MS = 200;

/** How often (at most) the worker measures how busy the event loop has been (loopBusy). */
const BUSY_SAMPLE_MS = 100;
/** Time constant of the smoothed utilization: sustained load is seen after a few of these. */
const BUSY_TAU_MS = 300;
/** busyUtilization's default. */
const BUSY_UTILIZATION = 0.85;

/** stopGraceMs's default. */
export const DEFAULT_STOP_GRACE_MS = 10_000;

/** The most runners (and scanners) a worker starts: far more than any store serves at once. */
const MAX_THREADS = 4096;

/** A bad worker or observer option or argument: a TxnError INVALID_ARGUMENT, the evidence in `details`. */
function invalidOption(message: string, details: Record<string, unknown> = {}): TxnError {
  return new TxnError('INVALID_ARGUMENT', message, details);
}

const WORKER_OPTIONS: ReadonlySet<string> = new Set([
  'threads',
  'scanners',
  'queueSize',
  'maxFailures',
  'rowLockTtlMs',
  'weakDelayMs',
  'busyUtilization',
  'stopGraceMs',
  'log',
]);
const OBSERVE_OPTIONS: ReadonlySet<string> = new Set(['table', 'collapseMs']);
const STOP_OPTIONS: ReadonlySet<string> = new Set(['graceMs']);

/** A misspelt option is an error, not the default (util/options.ts). */
function checkKnown(what: string, options: object, known: ReadonlySet<string>): void {
  const unknown = unknownOption(what, options, known);
  if (unknown !== undefined) throw invalidOption(unknown.message, { option: unknown.option });
}

/** How a local commit notified a row: a weak notification, a change whose observers all collapse (briefly), or any other change. */
type HintKind = 'weak' | 'brief' | 'strong';
const RANK: Readonly<Record<HintKind | 'no', number>> = { no: 0, weak: 1, brief: 2, strong: 3 };

/** A row this worker holds the advisory lock of (queued or running); see `Worker.held`. */
interface Held {
  started: boolean;
  /** Hinted again while running: re-hinted on release as the strongest such hint (`briefMs` for 'brief'). */
  again: 'no' | HintKind;
  /** Queued in `waiting` (notified only weakly so far), in `brief` (changes that collapse), or not waiting. */
  waits: 'no' | 'brief' | 'long';
  /** A brief wait's length (ms). */
  briefMs: number;
  /** The queued job, once the lock is taken (so that another hint can move a waiting row ahead). */
  job: Job | null;
}

/** A row in `waiting` (`at`: when it started to wait) or in `brief` (`at`: when its wait ends). */
interface WaitEntry {
  readonly held: Held;
  readonly at: number;
}

interface FailureState {
  failures: number;
  nextAttempt: number;
  parked: boolean;
}

/** Failed runs of one kind (`failureKind`) since its last log line. */
interface FailureTally {
  /** When its last line was logged (Date.now()). */
  loggedAt: number;
  /** Failures since then, the latest one's cell and error. */
  unlogged: number;
  lastCell: string;
  lastError: unknown;
}

/** A kind of failed run is told at most this often after its first (which is told at once). */
export const FAILURE_LOG_INTERVAL_MS = 60_000;

/** Kinds tallied apart at most (an observer throwing ever new codes must not grow the map): the rest are one kind. */
const MAX_FAILURE_KINDS = 100;

/**
 * The kind a failed run is tallied under: its error's code (ORACLE_UNAVAILABLE, IO_ERROR,
 * RETRIES_EXHAUSTED…), or for an observer that threw, the observer and what it threw.
 */
function failureKind(e: unknown): string {
  return e instanceof ObserverFailure ? `observer ${e.observer} threw ${codeOrName(e.cause)}` : codeOrName(e);
}

const DEFERRED = { durability: 'deferred' } as const;

/**
 * An observer ended because the worker stops: it threw the stop signal's reason, or an error
 * caused by it. Node's own signal-aware calls (`timers/promises`, `events.once`, streams) reject
 * with an AbortError whose `cause` is the reason; those were counted and logged as failures.
 */
function endedByStop(thrown: unknown, reason: unknown): boolean {
  for (let e = thrown, depth = 0; depth < 8 && typeof e === 'object' && e !== null; depth++) {
    if (e === reason) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * One start() to stop() of a worker: its loops, the rows its runners are on, and the control of
 * its observer runs. `stopped` ends its loops; nothing of it is reused by a later start.
 */
class Epoch {
  readonly control = new RunControl();
  readonly tasks: Promise<void>[] = [];
  readonly inFlight = new Set<Job>();
  stopped = false;
}

/** A grace period (ms) a timer can wait: an integer from 0 to MAX_TIMER_MS. */
function checkGraceMs(name: string, value: number): void {
  if (!isTimerMs(value, 0, true))
    throw invalidOption(`${name} must be an integer of ms from 0 to ${MAX_TIMER_MS}, not ${String(value)}`, { option: name, value });
}

/** A scanner or runner loop stopped by an error starts again after this pause, doubled while errors go on… */
const RESTART_MIN_PAUSE_MS = 50;
/** …up to this. */
const RESTART_MAX_PAUSE_MS = 5_000;

export class Worker {
  private readonly observers: ObserverRegistration[] = [];
  private readonly threads: number;
  private readonly scannerCount: number;
  private readonly queueSize: number;
  private readonly maxFailures: number;
  private readonly rowLockTtlMs: number;
  private readonly weakDelayMs: number;
  /**
   * The advisory lock TTL of a waiting row: three times its wait, at least rowLockTtlMs. Apart from
   * rowLockTtlMs so that a long wait does not also keep the strong rows a crashed process held
   * from other processes' scanners for as long.
   */
  private readonly waitLockTtlMs: number;
  /** Below this many rows running, a waiting row may run before its weakDelayMs (nextJob). */
  private readonly idleRunners: number;
  private readonly log: (message: string, error?: unknown) => void;
  private readonly queue: Job[] = [];
  /** Rows handed over by local commits (unbounded up to MAX_HINTED: a runner must never wait on it). */
  private readonly hinted = new Queue<{ readonly job: Job; readonly at: number }>();
  /**
   * Rows notified only weakly. They run when the worker is nearly idle (idleRunners), or once they have waited
   * weakDelayMs and no hint is older: a weak notification says "recompute when convenient", and
   * every notification of the row that arrives while it waits is covered by the same run
   * (Percolator's message collapsing). Entries whose row a strong hint moved ahead are skipped.
   */
  private readonly waiting = new Queue<WaitEntry>();
  /**
   * Rows changed by local commits whose observers all collapse (`collapseMs`): they run at `at`, or
   * before when the worker is nearly idle, and the changes that arrive meanwhile collapse into
   * that run. Entries whose row moved ahead (a strong hint) or was taken are skipped.
   */
  private readonly brief = new Queue<WaitEntry>();
  /**
   * Rows this worker holds the advisory lock of (queued or running). A hint for a queued row is
   * absorbed (its runner reads the notify cells when it starts; a hint that may not wait moves a
   * waiting row to `hinted`); one for a running row sets `again`, and the row is handed over again
   * when released.
   */
  private readonly held = new Map<string, Held>();
  private readonly hintOwner: string;
  private readonly spaceWaiters: (() => void)[] = [];
  private readonly jobWaiters: (() => void)[] = [];
  private readonly idleWaiters = new Set<() => void>();
  private readonly sleepers = new Set<() => void>();
  private readonly failuresOf = new Map<string, FailureState>();
  /** Failed runs per kind, for their rate-limited log lines (fail, tellUnloggedFailures). */
  private readonly failureTallies = new Map<string, FailureTally>();
  private isRunning = false;
  /** The present (or last) start's loops and runs; null before the first start. */
  private epoch: Epoch | null = null;
  private readonly stopGraceMs: number;
  /** A start in progress (start()), and whether a stop() came during it. */
  private starting: Promise<void> | null = null;
  private stopAsked = false;
  /** The start in progress waits for a stop that was called before it (see stop). */
  private startAfterStop = false;
  /** A stop in progress: concurrent stop() calls share it, and a start() waits for it. */
  private stopping: Promise<StopResult> | null = null;
  private active = 0;
  /** When a runner last took a job that was not a waiting row (Date.now()). */
  private lastStrongAt = 0;
  private wakeTimer: ReturnType<typeof setTimeout> | null = null;
  private wakeTimerAt = 0;
  private readonly busyUtilization: number;
  /** The last utilization sample (null: none yet), when it was taken, and the smoothed load. */
  private loopSample: ReturnType<typeof performance.eventLoopUtilization> | null = null;
  private loopSampledAt = 0;
  private loopLoad = 0;
  readonly metrics: WorkerMetrics = {
    runs: 0,
    commits: 0,
    hinted: 0,
    skipped: 0,
    conflicts: 0,
    staleRetries: 0,
    failures: 0,
    parked: 0,
    cleared: 0,
    restarts: 0,
    abandoned: 0,
    observerMs: {},
    scanner: { rowsScanned: 0, notificationsFound: 0, jumps: 0, emptyPasses: 0 },
  };

  constructor(
    private readonly host: WorkerHost,
    options: WorkerOptions = {},
  ) {
    if (options === null || typeof options !== 'object')
      throw invalidOption(`worker options must be an object, not ${describeType(options)}`);
    checkKnown('a worker', options, WORKER_OPTIONS);
    for (const [name, value, max] of [
      ['threads', options.threads, MAX_THREADS],
      ['scanners', options.scanners, MAX_THREADS],
      ['queueSize', options.queueSize, MAX_THREADS * 1024],
      ['maxFailures', options.maxFailures, Number.MAX_SAFE_INTEGER],
    ] as const) {
      // Each runner and scanner is a loop started at once: a typo of 1e9 would exhaust memory, not fail.
      if (value !== undefined && !(Number.isInteger(value) && value >= 1 && value <= max))
        throw invalidOption(`${name} must be an integer from 1 to ${max}, not ${String(value)}`, { option: name, value });
    }
    // Taken as they were, NaN or a string made every row's lock lapse at once, or wait forever.
    if (options.rowLockTtlMs !== undefined && !isTimerMs(options.rowLockTtlMs, 1, true)) {
      throw invalidOption(`rowLockTtlMs must be an integer of ms from 1 to ${MAX_TIMER_MS}, not ${String(options.rowLockTtlMs)}`, {
        option: 'rowLockTtlMs',
        value: options.rowLockTtlMs,
      });
    }
    if (options.weakDelayMs !== undefined && !isTimerMs(options.weakDelayMs)) {
      throw invalidOption(`weakDelayMs must be a number of ms from 0 to ${MAX_TIMER_MS}, not ${String(options.weakDelayMs)}`, {
        option: 'weakDelayMs',
        value: options.weakDelayMs,
      });
    }
    // Anything else was called inside the try below, and every log line was lost without a word.
    if (options.log !== undefined && typeof options.log !== 'function')
      throw invalidOption(`log must be a function (message, error) => void, not ${describeType(options.log)}`, { option: 'log' });
    this.threads = options.threads ?? 4;
    this.idleRunners = Math.max(1, Math.floor(this.threads / 4));
    this.scannerCount = options.scanners ?? 2;
    this.queueSize = options.queueSize ?? this.threads * 4;
    this.maxFailures = options.maxFailures ?? 5;
    this.rowLockTtlMs = options.rowLockTtlMs ?? 30_000;
    this.weakDelayMs = options.weakDelayMs ?? WEAK_DELAY_MS;
    this.busyUtilization = options.busyUtilization ?? BUSY_UTILIZATION;
    if (!Number.isFinite(this.busyUtilization) || this.busyUtilization < 0) {
      throw invalidOption(`busyUtilization must be a number from 0, not ${String(this.busyUtilization)}`, {
        option: 'busyUtilization',
        value: this.busyUtilization,
      });
    }
    this.waitLockTtlMs = Math.max(this.rowLockTtlMs, 3 * this.weakDelayMs);
    this.stopGraceMs = options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
    checkGraceMs('stopGraceMs', this.stopGraceMs);
    const log = options.log ?? defaultWorkerLog;
    // A logger that throws must not change what the worker does (a stop that rejected after
    // abandoning its runs, a loop restarted for a log line).
    this.log = (m, e) => {
      try {
        log(m, e);
      } catch {
        /* the log line is lost, not the worker's work */
      }
    };
    this.hintOwner = `${host.owner}/${workerSeq++}/hint`;
  }

  /**
   * Registers an observer of `column` (`family:qualifier`) under a unique `name`, in `table` or
   * (default) in every Percolator table. Call before start(), which refuses a `table` that exists
   * without Percolator's families (it would observe nothing, without a word); a table not there yet
   * is observed once created.
   */
  observe(column: string, name: string, fn: ObserverFn, options: { table?: string; collapseMs?: number } = {}): this {
    encodeColumn(column);
    // JavaScript callers pass anything: a name or body of the wrong type would fail only at the first run.
    if (typeof name !== 'string' || name === '')
      throw invalidOption(`an observer's name must be a non-empty string, not ${describeType(name)}`, { column, name });
    if (typeof fn !== 'function')
      throw invalidOption(`observer ${name}'s body must be a function (tx, row, column, table, context) => Promise`, { column, name });
    if (options === null || typeof options !== 'object')
      throw invalidOption(`observer ${name}'s options must be an object`, { column, name });
    // A misspelt `table` observed every table.
    checkKnown(`observer ${name}`, options, OBSERVE_OPTIONS);
    if (options.table !== undefined && (typeof options.table !== 'string' || options.table === ''))
      throw invalidOption(`observer ${name}'s table must be a table name or '*', not ${String(options.table)}`, {
        column,
        name,
        option: 'table',
      });
    if (this.isRunning || this.starting !== null)
      throw new TxnError('WORKER_STARTED', `observer ${name} must be registered before start(): the worker runs`, { column, name });
    if (this.observers.some((o) => o.name === name))
      throw invalidOption(`an observer named ${name} is already registered`, { column, name });
    const collapseMs = options.collapseMs ?? 0;
    if (!Number.isFinite(collapseMs) || collapseMs < 0 || collapseMs > this.rowLockTtlMs / 3) {
      throw invalidOption(`collapseMs must be a number of ms from 0 to a third of rowLockTtlMs (${this.rowLockTtlMs}), not ${collapseMs}`, {
        column,
        name,
        option: 'collapseMs',
        value: collapseMs,
      });
    }
    this.observers.push({ name, column, table: options.table ?? ALL_TABLES, fn, collapseMs });
    return this;
  }

  /**
   * Records the observed columns (so writers start notifying), then starts the scanners and runners. Concurrent calls share
   * one start; a `stop()` (or the database's close) during it waits for it and leaves nothing running. A start during a
   * stop begins once the stop has ended. Rejects, with nothing started or registered, when an observer's `table` exists but is no
   * Percolator table (NOT_A_PERCOLATOR_TABLE); one that does not exist yet is no error.
   */
  start(): Promise<void> {
    if (this.isRunning) return Promise.resolve();
    const stopping = this.stopping;
    if (this.starting === null) this.startAfterStop = stopping !== null;
    this.starting ??= (stopping === null ? this.begin() : stopping.then(() => this.begin())).finally(() => {
      this.starting = null;
      this.startAfterStop = false;
    });
    return this.starting;
  }

  private async begin(): Promise<void> {
    this.stopAsked = false;
    // Before anything is registered: NOT_A_PERCOLATOR_TABLE for a table its observers could never
    // see a change of. A table not there yet is observed once created (a worker may start before
    // the process that creates its tables).
    for (const t of new Set(this.observers.map((o) => o.table))) {
      if (t !== ALL_TABLES)
        await this.host.checkTable(t).catch((e: unknown) => (isStoreError(e, 'TABLE_NOT_FOUND') ? undefined : Promise.reject(e)));
    }
    for (const o of this.observers) await this.host.observed.register(o.table, o.column, o.name);
    if (this.stopAsked) return;
    this.isRunning = true;
    // Each start tells the first failure of each kind afresh (stop told the rest).
    this.failureTallies.clear();
    // And tries every cell afresh: a cell parked (or backing off) under the last start stayed
    // parked for good, though its notification is pending again once the worker stops
    // (waitForQuiescence) — after stop() and start(), quiescence excluded it once more and its
    // changes were never run, even by an observer that no longer failed.
    this.failuresOf.clear();
    const epoch = (this.epoch = new Epoch());
    const scannerHost = this.scannerHost(epoch);
    // Each scanner is its own advisory-lock owner, so scanners of one process exclude each other too.
    // Owners start with the process's liveness id (unless the lock service cannot read its lease:
    // WorkerHost.owner): a server's lock service takes the locks of a process whose lease lapsed
    // over by it (server.ts, ownerGoneIn).
    for (let i = 0; i < this.scannerCount; i++) {
      const owner = `${this.host.owner}/${workerSeq++}/${i}`;
      epoch.tasks.push(this.guard(epoch, () => scanLoop(scannerHost, owner), 'scanner'));
    }
    for (let i = 0; i < this.threads; i++) epoch.tasks.push(this.guard(epoch, () => this.runner(epoch), 'runner'));
  }

  /**
   * Stops dispatching at once and fires the observers' signal, then waits for the running observer
   * runs for up to `graceMs` (default: the worker's stopGraceMs); those still going then are
   * abandoned — they never commit, their notifications stay. Resolves with how many rows' runs it
   * abandoned. A stop() during another shares it (and its grace period) — unless a start() came
   * in between: then it stops that start once it has begun.
   * Throws: INVALID_ARGUMENT for a graceMs that is not an integer from 0 to 2^31 − 1.
   */
  stop(options: StopOptions = {}): Promise<StopResult> {
    if (options === null || typeof options !== 'object') return Promise.reject(invalidOption('stop options must be an object'));
    const graceMs = options.graceMs ?? this.stopGraceMs;
    try {
      checkKnown('stop', options, STOP_OPTIONS);
      checkGraceMs('graceMs', graceMs);
    } catch (e) {
      return Promise.reject(e);
    }
    // A start() queued behind the stop in progress (it waits for that stop to end) was called
    // before this stop: sharing the stop would leave the worker running once that start begins.
    if (this.stopping !== null && this.startAfterStop) return this.stopping.then(() => this.stop(options));
    this.stopping ??= this.halt(graceMs).finally(() => {
      this.stopping = null;
    });
    return this.stopping;
  }

  private async halt(graceMs: number): Promise<StopResult> {
    if (this.starting !== null) {
      this.stopAsked = true;
      await this.starting.catch(() => undefined);
    }
    const epoch = this.epoch;
    if (!this.isRunning || epoch === null) return { abandoned: 0 };
    this.isRunning = false;
    epoch.stopped = true;
    // The grace period counts from here: a stop must end within it whatever hangs.
    let graceTimer: ReturnType<typeof setTimeout> | undefined;
    const graceOver = new Promise<false>((resolve) => {
      graceTimer = setTimeout(() => resolve(false), graceMs);
    });
    epoch.control.requestStop();
    if (this.wakeTimer !== null) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    for (const w of this.jobWaiters.splice(0)) w();
    for (const w of this.spaceWaiters.splice(0)) w();
    for (const w of this.idleWaiters) w();
    for (const w of this.sleepers) w();
    const waited: Job[] = [];
    for (const w of this.waiting.drain()) if (w.held.waits === 'long' && w.held.job !== null) waited.push(w.held.job);
    for (const w of this.brief.drain()) if (w.held.waits === 'brief' && w.held.job !== null) waited.push(w.held.job);
    const dropped = [...this.queue.splice(0), ...this.hinted.drain().map((h) => h.job), ...waited];
    this.held.clear();
    const unlocks = (async () => {
      for (const job of dropped) await this.host.lockService.unlock(this.lockKey(job.table, job.row), job.lockOwner).catch(() => undefined);
    })();
    const ended = await Promise.race([Promise.all([unlocks, ...epoch.tasks]).then(() => true), graceOver]);
    clearTimeout(graceTimer);
    this.tellUnloggedFailures();
    if (ended) return { abandoned: 0 };
    return { abandoned: this.abandon(epoch, graceMs) };
  }

  /**
   * The grace period is over: the runs still going are abandoned (none of them commits from now
   * on) and their rows let go, so that another worker, or the next start, runs their
   * notifications. Returns how many rows were abandoned.
   */
  private abandon(epoch: Epoch, graceMs: number): number {
    epoch.control.abandon();
    const rows = [...epoch.inFlight];
    epoch.inFlight.clear();
    // Its runners will not count themselves out (they end without touching the worker's state).
    this.active -= rows.length;
    this.metrics.abandoned += rows.length;
    // Not waited for: a lock service out of reach must not hold the stop past its grace period
    // (a lock not let go lapses at its TTL).
    for (const job of rows) void this.host.lockService.unlock(this.lockKey(job.table, job.row), job.lockOwner).catch(() => undefined);
    const keys = rows.map((j) => describeRow(j.table, j.row));
    this.log(
      rows.length > 0
        ? `stop: ${rows.length} row(s) still running after ${graceMs} ms abandoned (${keys.slice(0, 10).join(', ')}${rows.length > 10 ? ', …' : ''}): they will not commit; their notifications stay`
        : `stop: a scanner or runner still busy after ${graceMs} ms (no observer run) left behind`,
    );
    return rows.length;
  }

  /**
   * A commit of this process that is not one of this worker's observer runs (those hand over what
   * their commits notified themselves, with their brief waits) notified `cells`: the rows this
   * worker observes are offered as a scanner would find them — a strong change at once, a weakly
   * notified row to wait. Waking the scanners instead made every such commit start a pass over the
   * notify group (docs/observers.md › Local dispatch).
   */
  notified(cells: readonly NotifiedWrite[]): void {
    this.offerNotified(cells, false);
  }

  /** Ends the scanners' idle waits (not their waits after a jump or under a backlog). */
  private wakeScanners(): void {
    for (const w of this.idleWaiters) w();
  }

  /**
   * A commit notified `row` of `table` (or may have): hands the row to a runner at once if this
   * worker observes something in `table`, instead of waiting for a scanner to find it. Safe to
   * call for any row at any time — a hint is a proposal, the runner checks the notify cells.
   * With `mayWait`, the row waits as rows with weak notifications only do (see the header).
   * Throws INVALID_ARGUMENT for a table that is not a string, a row that is not a non-empty
   * string or Uint8Array, or a `mayWait` that is not a boolean: what the worker could not run is
   * refused, not dropped.
   */
  hint(table: string, row: Uint8Array | string, mayWait = false): void {
    // Type tests only (a loader hints every row it writes). A table of another type matched no
    // observer and the hint was dropped without a word; a row of another type was a TypeError
    // from Buffer.from; an empty one was queued for a run that must fail.
    if (typeof table !== 'string') throw invalidOption(`hint needs a table name, not ${describeType(table)}`, { table: String(table) });
    if (typeof row === 'string' ? row.length === 0 : !(row instanceof Uint8Array) || row.byteLength === 0) {
      const what = typeof row === 'string' || row instanceof Uint8Array ? 'an empty one' : describeType(row);
      throw invalidOption(`hint needs a non-empty row key (a string or a Uint8Array), not ${what}`, { table });
    }
    if (typeof mayWait !== 'boolean') throw invalidOption(`hint's mayWait must be a boolean, not ${describeType(mayWait)}`, { table });
    this.offer(table, row, mayWait ? 'weak' : 'strong', 0);
  }

  /** hint() of a row a commit notified as `kind` (a 'brief' one waits briefMs under load). */
  private offer(table: string, row: Uint8Array | string, kind: HintKind, briefMs: number): void {
    if (!this.isRunning || !this.observers.some((o) => o.table === ALL_TABLES || o.table === table)) return;
    let key = typeof row === 'string' ? Buffer.from(row, 'utf8') : row;
    // A row that may wait keeps its key for as long as it waits: an exact-size copy, not a view
    // into a larger buffer (Buffer.from of a short string is a slice of a shared 8 KiB pool slab,
    // which the view would keep alive whole).
    if (kind !== 'strong' && key.byteLength !== key.buffer.byteLength) key = new Uint8Array(key);
    const lockKey = this.lockKey(table, key);
    const held = this.held.get(lockKey);
    if (held !== undefined) {
      if (held.started) {
        if (RANK[kind] > RANK[held.again]) {
          held.again = kind;
          held.briefMs = briefMs;
        }
      } else if (kind === 'strong' && held.waits !== 'no') {
        held.waits = 'no';
        if (held.job !== null) this.queueHint(held.job);
      } else if (kind === 'brief' && held.waits === 'long') {
        // Its entry in `waiting` is skipped from now on.
        held.waits = 'brief';
        held.briefMs = briefMs;
        if (held.job !== null) this.queueBrief(held);
      }
      return;
    }
    // Not skipped for a parked or backing-off cell of the row: the runner skips those cells, and
    // runs the row's others (skipping the row kept them from running for as long as it was parked).
    if (this.rowsQueued() >= MAX_HINTED) return;
    const job: Job = { table, row: key, lockOwner: this.hintOwner };
    // Held before the lock is even asked for: a second hint meanwhile only marks it again.
    const waits = kind === 'weak' ? 'long' : kind === 'brief' ? 'brief' : 'no';
    const mine: Held = { started: false, again: 'no', waits, briefMs, job: null };
    this.held.set(lockKey, mine);
    void this.host.lockService.tryLock(lockKey, this.hintOwner, waits === 'long' ? this.waitLockTtlMs : this.rowLockTtlMs).then(
      (ok) => {
        if (ok && this.isRunning) {
          this.metrics.hinted++;
          mine.job = job;
          if (mine.waits === 'long') this.queueWaiting(mine);
          else if (mine.waits === 'brief') this.queueBrief(mine);
          else this.queueHint(job);
          return;
        }
        // Held by a scanner, another worker or another process (which will see the notification,
        // or leave it to the scanners), or stopping. The row may still be ours to run once its
        // holder lets go: idle scanners pass again now, and keep passing while it is held.
        if (this.held.get(lockKey) === mine) this.held.delete(lockKey);
        if (ok) void this.host.lockService.unlock(lockKey, this.hintOwner);
        else this.wakeScanners();
      },
      () => {
        if (this.held.get(lockKey) === mine) this.held.delete(lockKey);
      },
    );
  }

  private queueHint(job: Job): void {
    this.hinted.push({ job, at: Date.now() });
    this.jobWaiters.shift()?.();
  }

  /** Rows queued by hints and waits (bounded by MAX_HINTED): hinted, waiting and brief. */
  private rowsQueued(): number {
    return this.hinted.size + this.waiting.size + this.brief.size;
  }

  private queueWaiting(held: Held): void {
    this.waiting.push({ held, at: Date.now() });
    this.jobWaiters.shift()?.(); // a runner may take it at once if the worker is nearly idle
  }

  private queueBrief(held: Held): void {
    this.brief.push({ held, at: Date.now() + held.briefMs });
    this.jobWaiters.shift()?.(); // a runner may take it at once if the worker is nearly idle
  }

  /**
   * Offers the rows of `notified` this worker observes: weakly notified ones to wait, changed ones
   * at once — or, with `collapse` (what this worker's own observer runs notified), after the brief
   * wait of the column's observers when every one of them collapses (the shortest wait).
   */
  private offerNotified(notified: readonly NotifiedWrite[], collapse: boolean): void {
    for (const w of notified) {
      const observers = this.observersOf(w.table, w.column);
      if (observers.length === 0) continue;
      if (w.weak) {
        this.offer(w.table, w.row, 'weak', 0);
        continue;
      }
      let briefMs = collapse ? Number.POSITIVE_INFINITY : 0;
      for (const o of observers) briefMs = Math.min(briefMs, o.collapseMs);
      this.offer(w.table, w.row, briefMs > 0 ? 'brief' : 'strong', briefMs);
    }
  }

  /**
   * The next job: a brief row whose wait is over; a waiting row that has waited weakDelayMs and is
   * older than every hint; else hints and scanned rows in turn (they share the runners); else,
   * with the event loop not busy, a brief row, or a waiting row when fewer than idleRunners rows
   * run; else, once idle, a waiting row on every runner. Not "whenever nothing is queued": under
   * saturation the queues are empty most of the time (free runners take every hint at once) while
   * the backlog sits upstream, so weak rows ran almost as soon as they were notified and collapsed
   * little (the web index: 1.64 export runs a document at 15 000 documents instead of 0.69).
   */
  private nextJob(): Job | undefined {
    const now = Date.now();
    if (this.brief.size > 0) {
      const due = this.nextBrief(now);
      if (due !== undefined) {
        this.lastStrongAt = now;
        if ((this.brief.peek()?.at ?? Infinity) <= now) this.jobWaiters.shift()?.(); // the next is due too
        return due;
      }
    }
    if (this.waiting.size > 0) {
      const oldestHint = this.hinted.peek()?.at ?? Infinity;
      const due = this.nextWaiting(Math.min(now - this.weakDelayMs, oldestHint));
      if (due !== undefined) return due;
    }
    if (this.hinted.size > 0 && (this.queue.length === 0 || this.preferHint)) {
      this.preferHint = false;
      this.lastStrongAt = now;
      return this.hinted.shift()?.job;
    }
    this.preferHint = true;
    const job = this.queue.shift();
    if (job !== undefined) {
      this.spaceWaiters.shift()?.();
      this.lastStrongAt = now;
      return job;
    }
    // Idle (nothing else taken for IDLE_AFTER_MS, e.g. the end of a burst): every runner drains.
    // Not on the first signal alone: under saturation the queues are empty between jobs, and
    // draining with every runner then is running weak rows at once.
    const idle = now - this.lastStrongAt >= IDLE_AFTER_MS;
    // Rows run before their time only with the JS thread mostly free, or the worker idle: when the
    // thread is the bottleneck, runners are few (each run is busy on it), so their count alone
    // says nothing, and a row that waits then collapses what follows it for free.
    const busy = !idle && this.loopBusy(now);
    if (!busy) {
      // A brief row is strong work: before waiting rows, whatever the runners, and it counts as such.
      const brief = this.nextBrief(Infinity);
      if (brief !== undefined) {
        this.lastStrongAt = now;
        if (this.brief.size + this.waiting.size > 0) this.jobWaiters.shift()?.();
        return brief;
      }
      if (this.active < (idle ? this.threads : this.idleRunners)) {
        const early = this.nextWaiting(Infinity);
        // Another sleeping runner may take the next one: drain with up to idleRunners at a time,
        // or every runner once idle.
        if (early !== undefined) {
          if (this.waiting.size > 0) this.jobWaiters.shift()?.();
          return early;
        }
      }
    }
    // Nothing else may call for a job when a brief wait ends, the loop is no longer busy or the
    // worker becomes idle: a timer wakes a runner then.
    let at = this.brief.peek()?.at ?? Infinity;
    if (busy && this.brief.size > 0) at = Math.min(at, now + BUSY_SAMPLE_MS);
    if (!idle && this.waiting.size > 0) at = Math.min(at, this.lastStrongAt + IDLE_AFTER_MS);
    if (at !== Infinity) this.wakeAt(at);
    return undefined;
  }

  /**
   * The event loop is busy: its utilization, sampled every BUSY_SAMPLE_MS or more (when asked) and
   * smoothed exponentially (BUSY_TAU_MS), is busyUtilization or more. Sampling starts at the first
   * question, so whatever kept the loop busy before (opening a store) does not count.
   */
  private loopBusy(now: number): boolean {
    if (this.loopSample === null) {
      this.loopSample = performance.eventLoopUtilization();
      this.loopSampledAt = now;
    } else if (now - this.loopSampledAt >= BUSY_SAMPLE_MS) {
      const current = performance.eventLoopUtilization();
      const u = performance.eventLoopUtilization(current, this.loopSample).utilization;
      const dt = now - this.loopSampledAt;
      this.loopLoad += (dt / (dt + BUSY_TAU_MS)) * (u - this.loopLoad);
      this.loopSample = current;
      this.loopSampledAt = now;
    }
    return this.loopLoad >= this.busyUtilization;
  }

  /** Wakes one sleeping runner at `at` (ms), unless a wake-up is set for then or sooner. */
  private wakeAt(at: number): void {
    if (this.wakeTimer !== null) {
      if (this.wakeTimerAt <= at) return;
      clearTimeout(this.wakeTimer);
    }
    this.wakeTimerAt = at;
    this.wakeTimer = setTimeout(
      () => {
        this.wakeTimer = null;
        this.jobWaiters.shift()?.();
      },
      Math.max(1, at - Date.now()),
    );
  }

  /** The oldest brief row whose wait ends at or before `before` (ms), taken. */
  private nextBrief(before: number): Job | undefined {
    return this.takeWaiting(this.brief, 'brief', before);
  }

  /** The oldest waiting row queued at or before `before` (ms) and not moved ahead since, taken. */
  private nextWaiting(before: number): Job | undefined {
    return this.takeWaiting(this.waiting, 'long', before);
  }

  /** The oldest entry of `queue` at or before `before` whose row still waits there (`waits`), taken. */
  private takeWaiting(queue: Queue<WaitEntry>, waits: 'brief' | 'long', before: number): Job | undefined {
    for (;;) {
      const head = queue.peek();
      if (head === undefined || head.at > before) return undefined;
      queue.shift();
      if (head.held.waits === waits && head.held.job !== null) {
        head.held.waits = 'no';
        return head.held.job;
      }
    }
  }

  private preferHint = true;

  /** Whether the worker runs (started, not stopped). */
  get running(): boolean {
    return this.isRunning;
  }

  /** Cells parked after too many failures since the last start(): `table/rowhex/column`. */
  parkedCells(): string[] {
    return [...this.failuresOf.entries()].filter(([, s]) => s.parked).map(([k]) => k);
  }

  /** Rows currently queued or running. */
  get busy(): number {
    return this.queue.length + this.active;
  }

  /**
   * Runs a scanner's or a runner's loop for as long as the worker runs. A loop stopped by an error
   * (a store or lock service out of reach for a while, a bug) is logged and started again after a
   * pause that doubles while the errors go on: a worker whose remote store blinked must not be
   * left with fewer runners, or no scanner, for good. (The row a runner was on keeps its
   * notification — nothing cleared it — and its advisory lock was let go or lapses.)
   */
  private async guard(epoch: Epoch, loop: () => Promise<void>, what: string): Promise<void> {
    let pauseMs = RESTART_MIN_PAUSE_MS;
    while (!epoch.stopped) {
      const started = Date.now();
      try {
        await loop();
        return;
      } catch (e) {
        if (epoch.stopped) return;
        // A loop that ran well for a while before failing starts the pauses over.
        if (Date.now() - started > 2 * RESTART_MAX_PAUSE_MS) pauseMs = RESTART_MIN_PAUSE_MS;
        this.metrics.restarts++;
        // The whole error once a streak; then one line each (an outage stops every loop, again and again).
        if (pauseMs === RESTART_MIN_PAUSE_MS) this.log(`${what} stopped by an unexpected error; starting it again in ${pauseMs} ms`, e);
        else this.log(`${what} stopped again (${e instanceof Error ? e.message : String(e)}); starting it again in ${pauseMs} ms`);
        await this.sleep(pauseMs);
        pauseMs = Math.min(2 * pauseMs, RESTART_MAX_PAUSE_MS);
      }
    }
  }

  /** Waits `ms`, or until stop(). */
  private sleep(ms: number): Promise<void> {
    return this.waitIn(this.sleepers, ms);
  }

  /** Waits `ms`, or until one of `waiters` is called (stop() calls them all). */
  private waitIn(waiters: Set<() => void>, ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  }

  private lockKey(table: string, row: Uint8Array): string {
    return `${table}\u0000${bytesKey(row)}`;
  }

  private registrationIndex(table: string, column: string): number {
    return this.observers.findIndex((o) => o.column === column && (o.table === ALL_TABLES || o.table === table));
  }

  private observersOf(table: string, column: string): ObserverRegistration[] {
    return this.observers.filter((o) => o.column === column && (o.table === ALL_TABLES || o.table === table));
  }

  private cellKey(table: string, row: Uint8Array, column: string): string {
    return `${table}/${Buffer.from(row).toString('hex')}/${column}`;
  }

  private scannerHost(epoch: Epoch): ScannerHost {
    const tablesCache = { at: 0, tables: [] as string[] };
    const live = () => !epoch.stopped;
    return {
      store: this.host.store,
      rowLockTtlMs: this.rowLockTtlMs,
      stats: this.metrics.scanner,
      running: live,
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
      tryLockRow: async (table, row, lockOwner) => {
        const key = this.lockKey(table, row);
        const ok = await this.host.lockService.tryLock(key, lockOwner, this.rowLockTtlMs);
        if (ok) this.held.set(key, { started: false, again: 'no', waits: 'no', briefMs: 0, job: null });
        return ok;
      },
      skip: (table, row, column, now) => this.isBackingOff(this.cellKey(table, row, column), now),
      // As many rows queued (hinted, waiting weak, brief, scanned) as there are runners: a pass
      // would meet them held. A saturated web index keeps hundreds waiting and few hinted.
      backlogged: () => this.rowsQueued() + this.queue.length >= this.threads,
      enqueue: async (job) => {
        // A row notified only weakly waits, as a weakly hinted one does.
        const lockKey = this.lockKey(job.table, job.row);
        const held = this.held.get(lockKey);
        if (
          live() &&
          held !== undefined &&
          job.cells !== undefined &&
          job.cells.every((c) => !c.strong) &&
          this.rowsQueued() < MAX_HINTED
        ) {
          held.waits = 'long'; // from here a strong hint (hint()) clears it
          if (this.waitLockTtlMs > this.rowLockTtlMs) {
            // Scanned rows were locked for rowLockTtlMs: lock this one again for its wait. Another
            // process may take the row in between; then it is theirs to run.
            await this.host.lockService.unlock(lockKey, job.lockOwner);
            const ok = await this.host.lockService.tryLock(lockKey, job.lockOwner, this.waitLockTtlMs);
            if (!ok || !live()) {
              if (this.held.get(lockKey) === held) this.held.delete(lockKey);
              if (ok) await this.host.lockService.unlock(lockKey, job.lockOwner);
              return;
            }
          }
          if (held.waits === 'long') {
            held.job = job;
            this.queueWaiting(held);
            return;
          }
        }
        while (live() && this.queue.length >= this.queueSize) await new Promise<void>((r) => this.spaceWaiters.push(r));
        if (!live()) {
          if (this.held.get(lockKey) === held) this.held.delete(lockKey);
          await this.host.lockService.unlock(lockKey, job.lockOwner);
          return;
        }
        this.queue.push(job);
        this.jobWaiters.shift()?.();
      },
      // stop() wakes every waiter, wakeable or not.
      idle: (ms, wakeable = true) => this.waitIn(wakeable ? this.idleWaiters : this.sleepers, ms),
    };
  }

  private async runner(epoch: Epoch): Promise<void> {
    while (!epoch.stopped) {
      // Yield to timers and I/O between rows. With a store that answers in microtasks (memory:,
      // cached rows) runners fed by local hints would otherwise never leave the microtask queue:
      // timers (lock-wait backoff, conflict retries, the loaders' pacing) then fire seconds late.
      await new Promise<void>((r) => setImmediate(r));
      if (epoch.stopped) break;
      const job = this.nextJob();
      if (job === undefined) {
        await new Promise<void>((r) => this.jobWaiters.push(r));
        continue;
      }
      this.active++;
      epoch.inFlight.add(job);
      const lockKey = this.lockKey(job.table, job.row);
      const entry = this.held.get(lockKey);
      if (entry !== undefined) entry.started = true;
      let failure: { readonly error: unknown } | null = null;
      try {
        await this.process(job, epoch);
      } catch (error) {
        failure = { error };
      }
      if (epoch.control.abandoned) {
        // stop() gave up on this row while it ran, let its lock go and counted it out: what the
        // run did afterwards is only told (its transaction could not commit).
        this.log(`a run abandoned by stop() ended on ${describeRow(job.table, job.row)}`, failure?.error);
        return;
      }
      epoch.inFlight.delete(job);
      this.active--;
      // Unreachable lock service: the lock lapses at its TTL; this runner goes on.
      await this.host.lockService.unlock(lockKey, job.lockOwner).catch((e: unknown) => this.log(`unlock of a row failed`, e));
      // Stopped: `held` was cleared, and may be a later start's by now.
      if (!epoch.stopped) {
        const held = this.held.get(lockKey);
        this.held.delete(lockKey);
        // A local commit notified this row while it ran (e.g. an observer of the row wrote a
        // column another observer of the row watches): run it again now.
        if (held !== undefined && held.again !== 'no') this.offer(job.table, job.row, held.again, held.briefMs);
      }
      if (failure !== null) throw failure.error;
    }
  }

  /**
   * Runs the observers of `job`'s notified cells, then clears what they covered. Once its worker
   * stops, it starts no further observer; once the stop abandons it, it does nothing more at all.
   */
  private async process(job: Job, epoch: Epoch): Promise<void> {
    // Re-read the row's notifications now that we hold its lock: the scan may have been stale
    // (another runner may have processed and cleared them meanwhile).
    let fresh: Awaited<ReturnType<typeof this.host.store.readRow>>;
    try {
      fresh = await this.host.store.readRow(job.table, job.row, NOTIFY_FILTER);
    } catch (e) {
      // A hint for a row that cannot hold notifications (a table dropped meanwhile, a key no
      // table takes) has nothing to run: dropped, instead of stopping this runner for a backoff.
      if (isStoreError(e, 'TABLE_NOT_FOUND') || isStoreError(e, 'EMPTY_ROW_KEY') || isStoreError(e, 'ROW_KEY_TOO_LARGE')) return;
      throw e;
    }
    if (fresh === null || epoch.stopped) return;
    // Every observed column notified now (not only those the scanner saw): newer notifications
    // are as good, and each cell's clearing bound (maxTs) comes from this read.
    const now = Date.now();
    // In the order the observers were registered (not the columns' order): an application may
    // rely on it, e.g. to let an earlier observer do a later one's work in its own transaction.
    const cells = notificationsOf(fresh.cells)
      .filter(
        (c) => this.observersOf(job.table, c.column).length > 0 && !this.isBackingOff(this.cellKey(job.table, job.row, c.column), now),
      )
      .sort((a, b) => this.registrationIndex(job.table, a.column) - this.registrationIndex(job.table, b.column));
    const clears: { column: string; maxTs: number }[] = [];
    for (const cell of cells) {
      // Stopping: the cells not begun keep their notifications.
      if (epoch.stopped) break;
      const key = this.cellKey(job.table, job.row, cell.column);
      let ok = true;
      let cleared = false;
      const observers = this.observersOf(job.table, cell.column);
      for (const obs of observers) {
        if (epoch.stopped) {
          ok = false;
          break;
        }
        const t0 = performance.now();
        try {
          // The cell's only observer may clear its notifications with its own commit.
          const clearUpTo = observers.length === 1 ? cell.maxTs : undefined;
          const r = await runObserver(this.host, obs, job.table, job.row, cell.weak, { clearUpTo, control: epoch.control });
          // Abandoned meanwhile (its commit was in flight): the row is no longer this runner's.
          if (epoch.control.abandoned) return;
          cleared = r.cleared;
          this.metrics.conflicts += r.conflicts - r.staleRetries;
          this.metrics.staleRetries += r.staleRetries;
          const m = (this.metrics.observerMs[obs.name] ??= { runs: 0, totalMs: 0, lastMs: 0, commits: 0, conflicts: 0 });
          m.conflicts += r.conflicts - r.staleRetries;
          if (r.ran) {
            this.metrics.runs++;
            if (r.committed) {
              this.metrics.commits++;
              m.commits++;
              this.offerNotified(r.notified, true);
            }
            m.runs++;
            m.lastMs = performance.now() - t0;
            m.totalMs += m.lastMs;
          } else this.metrics.skipped++;
        } catch (e) {
          if (epoch.control.abandoned) throw e;
          ok = false;
          // An observer that ended because the worker stops (it threw its signal's reason) did not fail.
          if (!(epoch.stopped && e instanceof ObserverFailure && endedByStop(e.cause, epoch.control.stopping.reason))) this.fail(key, e);
          break;
        }
      }
      if (ok) {
        this.failuresOf.delete(key);
        if (cleared) this.metrics.cleared++;
        else clears.push({ column: cell.column, maxTs: cell.maxTs });
      }
    }
    if (clears.length === 0) return;
    await this.host.store.mutateRow(
      job.table,
      job.row,
      clears.flatMap((c) => clearNotifications(c.column, c.maxTs)),
      // Deferred: a clearing lost in a crash only costs a run that finds the change acked already.
      DEFERRED,
    );
    this.metrics.cleared += clears.length;
  }

  private isBackingOff(cellKey: string, now: number): boolean {
    if (this.failuresOf.size === 0) return false;
    const s = this.failuresOf.get(cellKey);
    return s !== undefined && (s.parked || s.nextAttempt > now);
  }

  /**
   * A run of `key`'s observers failed. The failure is told as it happens when it is the first of
   * its kind (until 2026-12 only parking was: a worker whose oracle was out of reach said nothing
   * until it stopped), then at most once per FAILURE_LOG_INTERVAL_MS per kind, with how many there
   * were since; stop() tells the rest.
   */
  private fail(key: string, error: unknown): void {
    this.metrics.failures++;
    this.tallyFailure(key, error);
    const s = this.failuresOf.get(key) ?? { failures: 0, nextAttempt: 0, parked: false };
    s.failures++;
    if (s.failures >= this.maxFailures) {
      if (!s.parked) {
        s.parked = true;
        this.metrics.parked++;
        this.log(`parked ${readableCell(key)} after ${s.failures} failures`, error);
      }
    } else {
      s.nextAttempt = Date.now() + Math.min(30_000, 10 * 2 ** s.failures);
    }
    this.failuresOf.set(key, s);
  }

  private tallyFailure(cell: string, error: unknown): void {
    let kind = failureKind(error);
    if (!this.failureTallies.has(kind) && this.failureTallies.size >= MAX_FAILURE_KINDS) kind = 'other';
    const now = Date.now();
    const t = this.failureTallies.get(kind);
    if (t === undefined) {
      this.failureTallies.set(kind, { loggedAt: now, unlogged: 0, lastCell: cell, lastError: error });
      this.log(`observer run failed (${kind}) on ${readableCell(cell)}; further ${kind} failures are told at most once a minute`, error);
      return;
    }
    t.unlogged++;
    t.lastCell = cell;
    t.lastError = error;
    if (now - t.loggedAt >= FAILURE_LOG_INTERVAL_MS) this.tellFailures(kind, t, now);
  }

  private tellFailures(kind: string, t: FailureTally, now: number): void {
    this.log(
      `${t.unlogged} more observer run(s) failed (${kind}) in the last ${Math.round((now - t.loggedAt) / 1000)} s; the latest on ${readableCell(t.lastCell)}`,
      t.lastError,
    );
    t.loggedAt = now;
    t.unlogged = 0;
    t.lastError = undefined;
  }

  /** The failures not told yet (stopping: nothing may come to tell them later). */
  private tellUnloggedFailures(): void {
    const now = Date.now();
    for (const [kind, t] of this.failureTallies) if (t.unlogged > 0) this.tellFailures(kind, t, now);
  }
}

/**
 * A cell key (`table/rowhex/column`, cellKey) as logs show rows elsewhere (describeRow: the row as
 * text when it is printable): `docs/row5/c:x`, as the error logged beside it says, not `docs/726f7735/c:x`.
 */
function readableCell(key: string): string {
  const a = key.indexOf('/');
  const b = key.indexOf('/', a + 1);
  return `${describeRow(key.slice(0, a), Buffer.from(key.slice(a + 1, b), 'hex'))}/${key.slice(b + 1)}`;
}
