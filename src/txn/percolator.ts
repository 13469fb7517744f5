/**
 * `Percolator.open(...)`: a store, a timestamp oracle and a liveness lease, and the entry points
 * users call — `db.transaction(fn)` with retries, `db.snapshot(ts?)` for lock-free read-only work,
 * and table administration for Percolator tables.
 *
 * Retry policy: a retryable error (WRITE_CONFLICT, KEY_LOCKED, TXN_ABORTED) re-runs the callback
 * with a new start timestamp after jittered exponential backoff, up to `maxAttempts`; before
 * retrying after KEY_LOCKED the blocking lock is resolved if its owner is gone. The callback must
 * therefore be safe to run more than once (it should only compute and buffer).
 */
import { isStoreError } from '../store/errors.js';
import { ensureTable } from '../store/ensure-table.js';
import { SecondaryRetry } from './secondary-retry.js';
import { DEFAULT_STORE_URL, type OpenStoreOptions, openStore } from '../store/open-store.js';
import { type Store, atomicRowsOf } from '../store/store.js';
import type { ReadRowsOptions } from '../store/types.js';
import { OracleClient } from '../oracle/client.js';
import { isOracleError } from '../oracle/errors.js';
import { Oracle } from '../oracle/oracle.js';
import { localAuthToken, parseBigtableUrl } from '../store/bigtable/url.js';
import { type ServiceAddress, deploymentServices } from './deployment-services.js';
import type { ActiveRegistration, TimestampSource } from '../oracle/types.js';
import { resolveConflictLock } from './actions/resolve-lock.js';
import { TxnError, describeRow, isTxnError } from './errors.js';
import { NOTIFY, PERCOLATOR_TABLE_SPEC, notifiedColumn, userColumn } from './layout.js';
import { InProcessLockService, type LockService } from '../notify/lock-service.js';
import { ObservedColumns } from '../notify/observed-columns.js';
import { Worker, type WorkerHost, type WorkerOptions } from '../notify/worker.js';
import { type GcResult, collectGarbage } from './gc.js';
import { RecentCommits, collectRecent } from './gc-recent.js';

export { LONG_RUNNING_GC_WINDOWS } from './gc-recent.js';
import { Liveness } from './liveness.js';
import { LocalCommits } from './local-commits.js';
import { acquireOracle, releaseOracle } from './shared-oracle.js';
import { memLocksOf } from './mem-locks.js';
import { type ReadContext, readResolvedNow } from './snapshot-read.js';
import { TableCheck, missingFamilies, notAPercolatorTable } from './table-check.js';
import {
  type LeaseCheck,
  type ProtocolPoint,
  type RowKey,
  Snapshot,
  Transaction,
  type TxnEnvironment,
  checkTable,
  rowKeyOf,
} from './transaction.js';
import { MAX_TIMER_MS, isTimerMs } from '../util/timer-ms.js';
import { describeType } from '../util/describe-type.js';
import { hasMethods, unknownOption } from '../util/options.js';

export interface PercolatorOptions {
  /** A store URL (`memory:`, `file:DIR`, `bigtable://…`) or an open Store. Default `file:./percolator-data`. */
  readonly store?: string | Store;
  /** How to open `store` when it is a URL (caches, LevelDB budgets; see `openStore`). */
  readonly storeOptions?: OpenStoreOptions;
  /**
   * A timestamp source (e.g. an OracleClient). Default: an in-process oracle whose mark lives in
   * the store, for `memory:` and `file:`; for `bigtable://`, the oracle the URL names
   * (`?oracle=HOST:PORT`) or else a `percolator serve`'s at PORT+2 (deploymentServices), its
   * client's timeout `?oracleTimeoutMs=N` (default 5000). One given here ignores both.
   */
  readonly oracle?: TimestampSource;
  /** Lock time-to-live (ms): a lock older than this may be rolled back even if its owner looks alive. Default 30 000. */
  readonly lockTtlMs?: number;
  /** How long reads wait on a live lock before KEY_LOCKED. Default 2 000 ms. */
  readonly lockWaitMs?: number;
  /** Liveness lease (ms). Default 10 000. */
  readonly leaseMs?: number;
  /** Wall clock (ms), injectable for TTL tests. */
  readonly nowMs?: () => number;
  /** Crash-injection hook: called at each protocol point of every commit. */
  readonly onProtocolPoint?: (point: ProtocolPoint) => void | Promise<void>;
  /**
   * The advisory lock service for workers. Default: for `bigtable://`, the one the URL names
   * (`?lockService=HOST:PORT`) or else a `percolator serve`'s on its gRPC port; in-process otherwise.
   */
  readonly lockService?: LockService;
  /** How often the observed-columns registry is reloaded (ms). Default 1 000. */
  readonly observedRefreshMs?: number;
  /**
   * Background version GC, targeted passes (`collectRecentGarbage`, gc-recent.ts): every this
   * many ms, the rows this process committed to since the last pass lose the versions of its own
   * completely committed transactions that no reader can see any more. Cost proportional to the
   * change. Default 1 000; 0 turns all background GC off (full passes too).
   */
  readonly gcIntervalMs?: number;
  /**
   * Background full passes (`collectGarbage`, gc.ts): at most this often (ms), and no sooner than
   * 20× the last full pass's duration — at once, though, when the targeted set forgot something.
   * They cost O(repository) and collect what targeted passes leave (other processes' versions,
   * rollback records, abandoned locks, and versions superseded long after they were written: the
   * targeted set remembers a bounded number of transactions and cells). A process that runs for hours should set it (`percolator worker` does: 10
   * minutes); `bench soak` shows what is left without. Default 0: off — they
   * are opt-in while the CORRUPTED_RECORD seen twice with full passes on (before the fixes of
   * 2026-11-23) is unexplained (docs/transactions.md). On `bigtable://` one process of the
   * deployment should run them.
   */
  readonly fullGcIntervalMs?: number;
  /**
   * How much the targeted passes remember (gc-recent.ts): `cells` committed once (default
   * 100 000) and complete `transactions` (default 100 000). A version is collected by a targeted
   * pass only if its cell's earlier commit and its transaction are still remembered; the rest
   * waits for a full pass. A process that runs for hours can trade memory (~14 bytes a cell, ~26 a
   * transaction, taken as the sets fill) for less left to full passes: `percolator worker` asks for
   * `LONG_RUNNING_GC_WINDOWS` (2 Mi cells, 1 Mi transactions; docs/transactions.md).
   */
  readonly recentGcWindows?: { readonly cells?: number; readonly transactions?: number };
  /**
   * How transactions commit. 'auto' (default): in ONE phase — one atomic store write for all
   * rows, no lock cells (commit-one-phase.ts, TiKV's 1PC) — while the store is an embedded one
   * (`memory:`, `file:`) that no other process can reach; in two phases otherwise (shared stores:
   * `bigtable://`, or an embedded store while `percolator serve` or a checker shares it).
   * 'two-phase': always Percolator's two-phase commit with primary and secondary locks.
   */
  readonly commitProtocol?: 'auto' | 'two-phase';
  /**
   * Called with one line for each event an operator must hear of as it happens: a broken protocol
   * invariant met at run time (LOCK_NOT_FOUND, also kept in `anomalies`) and a background GC pass
   * that failed (kept in `lastGc` until the next one). `percolator worker` writes them to stderr.
   * Default: nothing is told.
   */
  readonly log?: (line: string) => void;
}

/**
 * Columns one background targeted pass takes at most (the rest waits for the next tick): a pass
 * reads each dirty row whole, so a backlog would otherwise be read all at once. (It was added
 * while hunting heap spikes it turned out not to cause; BENCHMARKS.md.)
 */
const RECENT_PASS_CELLS = 10_000;

/**
 * Whether a background full pass is due at `now`: every `everyMs` after the last one started (the
 * interval asked for, or 20× the last pass's duration if longer), or at once when the targeted set
 * `overflowed` (forgot versions only a full pass collects). The "at once" is kept on purpose: in a
 * long run the set forgets all the time, and full passes then run 4× their duration apart (the
 * spacing every pass gets) — a fifth of the time, which is what keeps a store under a steady
 * crawl bounded. Spaced 20× apart instead (tried 2026-12-03), a full pass over a churning
 * 20 000-document index could not keep up: 10 million versions piled up in 30 minutes
 * (BENCHMARKS.md › *bench soak*).
 */
export function fullPassDue(now: number, lastFull: number, everyMs: number, overflowed: boolean): boolean {
  return everyMs > 0 && (overflowed || now - lastFull >= everyMs);
}

/**
 * Prefix of the lock owners of a process whose lock service (`?lockService=`) is not the server of
 * its store: that server cannot read the process's liveness lease, so its locks must not look like
 * a worker's (`<liveness id>/…`, server.ts › ownerGoneIn).
 */
export const LEASE_ELSEWHERE = 'lease-elsewhere:';

/** Background GC passes of one kind since a Percolator opened (`db.gcTotals`). */
export interface GcTotals {
  passes: number;
  /** Of those, passes that failed (their partial work is not counted below). */
  failed: number;
  versionsRemoved: number;
  /** Wall time the passes took. */
  ms: number;
}

function newGcTotals(): GcTotals {
  return { passes: 0, failed: 0, versionsRemoved: 0, ms: 0 };
}

/** The pages a pending-notification pass that stops early reads (scanPending): 16 rows, then 8× more each, to 4 096. */
const PENDING_FIRST_PAGE = 16;
const PENDING_MAX_PAGE = 4_096;

/** Background GC's default tick: a targeted pass every second. */
export const DEFAULT_GC_INTERVAL_MS = 1_000;

export interface QuiescenceOptions {
  /** Give up with QUIESCENCE_TIMEOUT after this long. Default 60 000 ms. */
  readonly timeoutMs?: number;
  /**
   * Wait for the notifications of these Percolator tables only (default: every one): a check of
   * its own tables must not wait for other tables' backlog (a user's parked rows). A name the
   * store does not have is its TABLE_NOT_FOUND, one that is no Percolator table NOT_A_PERCOLATOR_TABLE.
   */
  readonly tables?: readonly string[];
}

/** Evidence of a QUIESCENCE_TIMEOUT (its `details`, but for `cause`). */
export interface PendingEvidence {
  /** Pending notifications of observed columns (those of this process's running workers' parked cells excluded). */
  readonly pending: number;
  /** The tables waited for (null: every Percolator table). */
  readonly tables: readonly string[] | null;
  /** Per table and column, most pending first (at most PENDING_GROUPS), with the observers the registry names. */
  readonly byColumn: readonly {
    readonly table: string;
    readonly column: string;
    readonly pending: number;
    readonly observers: readonly string[];
  }[];
  /** Groups beyond those listed. */
  readonly moreColumns: number;
  /** A few pending cells (at most PENDING_EXAMPLES), the row printable (`0x…` when binary). */
  readonly examples: readonly { readonly table: string; readonly row: string; readonly column: string }[];
  /**
   * Pending notifications counted by the wait's first poll that found one (polls count in full
   * until then), so `pending` beside it says whether the backlog shrank while the wait went on;
   * null when no poll before the last found one, or the store could not answer then.
   */
  readonly pendingAtStart: number | null;
}

/** Table/column groups a QUIESCENCE_TIMEOUT lists in details (its message: the first PENDING_IN_MESSAGE). */
const PENDING_GROUPS = 20;
const PENDING_EXAMPLES = 5;
const PENDING_IN_MESSAGE = 5;

export interface TransactionOptions {
  /** Attempts before giving up with RETRIES_EXHAUSTED. Default 20. */
  readonly maxAttempts?: number;
  /** First backoff (ms), doubled per attempt with full jitter. Default 2. */
  readonly baseBackoffMs?: number;
  /** Backoff cap (ms). Default 200. */
  readonly maxBackoffMs?: number;
}

export class Percolator {
  private closed = false;
  /** A close in progress (close()), shared by concurrent calls. */
  private closing: Promise<void> | null = null;

  private readonly workers = new Set<Worker>();
  /** Observer transactions and the worker running them (run-observer hands it what their commits notified). */
  private readonly observerTxns = new WeakMap<Transaction, Worker>();
  private tablesCache: { at: number; tables: string[] } = { at: 0, tables: [] };
  private commitsSinceGc = 0;
  private gcTimer: NodeJS.Timeout | null = null;
  /** The background GC passes in progress: at most one of each kind. */
  private readonly gcRunning: Record<'full' | 'recent', Promise<void> | null> = { full: null, recent: null };
  /**
   * Broken invariants met at run time (LOCK_NOT_FOUND: a secondary rolled back though its primary
   * committed). Always empty unless the protocol has a bug; kept as evidence (the first 100).
   */
  readonly anomalies: TxnError[] = [];
  /** The last background GC pass (null before the first), and its error if it failed. */
  lastGc: { readonly result: GcResult | null; readonly error: unknown; readonly at: number; readonly kind: 'full' | 'recent' } | null =
    null;
  /**
   * What the background passes did since open, per kind: passes (failed ones too), versions they
   * removed, and their wall time. Whether GC keeps up with a workload shows here, not in one pass.
   */
  readonly gcTotals: Readonly<Record<'full' | 'recent', GcTotals>> = { full: newGcTotals(), recent: newGcTotals() };

  /**
   * Columns committed to twice or more here that the targeted passes have not collected yet (their
   * backlog; 0 while GC is off). It grows when they fall behind; a full pass is due when it
   * overflows (`recentGcWindows`).
   */
  get gcBacklogCells(): number {
    return this.recent?.dirtyCells ?? 0;
  }
  /** What this process's workers name their advisory locks after (`WorkerHost.owner`): its liveness id, or see LEASE_ELSEWHERE. */
  private lockOwner = '';
  /** Rows and transactions committed here since the last targeted GC pass (null while GC is off). */
  private recent: RecentCommits | null = null;
  /** The background GC intervals in effect (ms; 0 = off): targeted passes, full passes. */
  gcIntervalMs = 0;
  fullGcIntervalMs = 0;

  private constructor(
    readonly store: Store,
    readonly oracle: TimestampSource,
    private readonly liveness: Liveness,
    private readonly env: TxnEnvironment,
    private readonly observed: ObservedColumns,
    private readonly lockService: LockService,
    private readonly owns: { store: boolean; oracle: boolean; lockService: boolean },
    private readonly secondaryRetry: SecondaryRetry,
  ) {}

  /** Keeps a broken invariant met at run time (LOCK_NOT_FOUND) in `anomalies`. */
  private recordAnomaly(e: unknown): void {
    if (!isTxnError(e) || e.code !== 'LOCK_NOT_FOUND') return;
    if (this.anomalies.length < 100) this.anomalies.push(e);
    this.log?.(`anomaly: ${e.message}`);
  }

  /** PercolatorOptions.log, if given. */
  private log: ((line: string) => void) | null = null;

  static async open(options: PercolatorOptions = {}): Promise<Percolator> {
    if (options === null || typeof options !== 'object')
      throw new TxnError('INVALID_CONFIG', `Percolator.open options must be an object, not ${describeType(options)}`, {});
    checkOpenOptions(options);
    // Durations a timer takes (util/timer-ms.ts says why they are bounded).
    for (const [name, value, min] of [
      ['lockTtlMs', options.lockTtlMs, 1],
      ['lockWaitMs', options.lockWaitMs, 0],
      ['leaseMs', options.leaseMs, 1],
      ['observedRefreshMs', options.observedRefreshMs, 0],
      ['gcIntervalMs', options.gcIntervalMs, 0],
      ['fullGcIntervalMs', options.fullGcIntervalMs, 0],
    ] as const) {
      if (value !== undefined && !isTimerMs(value, min)) {
        throw new TxnError('INVALID_CONFIG', `${name} must be a number of milliseconds from ${min} to ${MAX_TIMER_MS}, not ${value}`, {
          option: name,
          value,
        });
      }
    }
    checkGcWindows(options.recentGcWindows);
    const ownsStore = typeof options.store !== 'object';
    // Before the store is opened: a URL Percolator cannot run on is refused without a connection.
    checkTimestampScale(typeof options.store === 'object' ? options.store.url : (options.store ?? DEFAULT_STORE_URL));
    const store =
      typeof options.store === 'object' ? options.store : await openStore(options.store ?? DEFAULT_STORE_URL, options.storeOptions);
    let sharedOracle: Oracle | null = null;
    try {
      // One oracle per deployment: over a shared server (`bigtable://HOST:PORT`, i.e. `percolator
      // serve`) use the oracle and lock service it hosts, or those the URL names — an in-process
      // oracle per client process would hand out the same timestamps twice.
      const services = deploymentServices(store.url);
      if (services !== null && services.oracle === null && options.oracle === undefined) {
        throw new TxnError(
          'INVALID_CONFIG',
          `a store at ${store.url} is shared by many processes: name the deployment's oracle with ?oracle=HOST:PORT in the URL, or pass an OracleClient in options.oracle`,
          { url: store.url },
        );
      }
      if (options.oracle === undefined && services === null) sharedOracle = await acquireOracle(store);
      const oracleAt = services?.oracle ?? null;
      const oracle =
        options.oracle ??
        sharedOracle ??
        new OracleClient({
          host: (oracleAt as ServiceAddress).host,
          port: (oracleAt as ServiceAddress).port,
          addressSource: oracleAt?.source,
          ...(oracleAt?.timeoutMs !== undefined ? { timeoutMs: oracleAt.timeoutMs } : {}),
        });
      const nowMs = options.nowMs ?? Date.now;
      const liveness = new Liveness(store, { leaseMs: options.leaseMs, nowMs });
      const owner = await liveness.register();
      const observed = new ObservedColumns(store);
      await observed.open(options.observedRefreshMs ?? 1_000);
      const protocol = options.commitProtocol ?? 'auto';
      if (protocol !== 'auto' && protocol !== 'two-phase') {
        throw new TxnError('INVALID_CONFIG', `commitProtocol must be 'auto' or 'two-phase', not ${JSON.stringify(protocol)}`, { protocol });
      }
      const atomic = atomicRowsOf(store);
      const localCommits = new LocalCommits();
      const read: ReadContext = {
        liveness,
        nowMs,
        lockWaitMs: options.lockWaitMs ?? 2_000,
        localCommits,
        // A lock of ours whose commit has ended was left by a failure: no need to wait for its TTL.
        finishedHere: (lockOwner, startTs) => lockOwner === owner && !localCommits.isInFlight(startTs),
        // Every Percolator on an embedded store looks for one-phase commits in flight, whatever
        // its own protocol: another Percolator of this process may use it.
        ...(atomic !== null ? { memLocks: memLocksOf(atomic), syncStore: atomic } : {}),
      };
      let db: Percolator | null = null;
      const secondaryRetry = new SecondaryRetry(store, (e) => db?.recordAnomaly(e));
      const env: TxnEnvironment = {
        store,
        read,
        tables: new TableCheck(store),
        getTimestamp: () => oracle.getTimestamp(),
        owner,
        lockTtlMs: options.lockTtlMs ?? 30_000,
        onProtocolPoint: options.onProtocolPoint,
        isObserved: (table, column) => observed.has(table, column),
        onNotified: (notified, tx) => {
          if (db === null) return;
          // The worker running an observer's transaction takes its rows with their kinds
          // (Worker.offerNotified: brief waits); every other worker of this process takes them now.
          const owner = db.observerTxns.get(tx);
          for (const w of db.workers) if (w !== owner) w.notified(notified);
        },
        onCommitted: (commit) => {
          if (db === null) return;
          db.commitsSinceGc++;
          db.recent?.record(commit);
        },
        ...(atomic !== null && protocol === 'auto' ? { onePhase: atomic } : {}),
        onSecondaryCommitError: (e) => db?.recordAnomaly(e),
        onSecondaryCommitsLeft: (rows, startTs, commitTs) => secondaryRetry.retry(rows, startTs, commitTs),
      };
      const lockService =
        options.lockService ??
        (services !== null && services.lockService !== null
          ? // Loaded only here: gRPC and the lock protocol are a bigtable:// deployment's, and the
            // command line and a file: user start without them.
            new (await import('../server/lock-client.js')).NetworkLockService({
              address: services.lockService,
              authToken: localAuthToken(),
            })
          : new InProcessLockService());
      db = new Percolator(
        store,
        oracle,
        liveness,
        env,
        observed,
        lockService,
        {
          store: ownsStore,
          oracle: options.oracle === undefined,
          lockService: options.lockService === undefined,
        },
        secondaryRetry,
      );
      // A lock service that takes a dead process's locks over reads its lease in its own store:
      // one over another store finds no lease for ours and would take a live worker's rows. Named
      // otherwise than `<liveness id>/…`, its locks are never taken for a dead process's; a crashed
      // worker's then end at their TTL.
      const unseenLease =
        options.lockService === undefined && services !== null && services.lockService !== null && !services.lockServiceSeesLeases;
      db.lockOwner = unseenLease ? `${LEASE_ELSEWHERE}${owner}` : owner;
      db.log = options.log ?? null;
      db.startBackgroundGc(options.gcIntervalMs ?? DEFAULT_GC_INTERVAL_MS, options.fullGcIntervalMs ?? 0, options.recentGcWindows);
      return db;
    } catch (e) {
      if (sharedOracle !== null) await releaseOracle(store).catch(() => undefined);
      if (ownsStore) await store.close().catch(() => undefined);
      throw e;
    }
  }

  private checkOpen(): void {
    if (this.closed) throw new TxnError('TXN_FINISHED', 'the Percolator instance is closed');
  }

  /**
   * Creates a Percolator table (system families; notify in its own locality group). Idempotent.
   * NOT_A_PERCOLATOR_TABLE when a table of that name exists without the system families.
   */
  async createTable(name: string): Promise<void> {
    this.checkOpen();
    const spec = await ensureTable(this.store, name, PERCOLATOR_TABLE_SPEC);
    const missing = spec === null ? [] : missingFamilies(spec);
    if (missing.length > 0) throw notAPercolatorTable(name, missing);
    this.env.tables.remember(name);
  }

  /** Starts a transaction by hand (prefer `transaction`, which retries). */
  async begin(): Promise<Transaction & { release(): void }> {
    this.checkOpen();
    // An in-process oracle answers at once: no async hop for the timestamp.
    const reg = this.oracle.tryStartTimestamp?.() ?? (await this.oracle.getStartTimestamp());
    const tx = new Transaction(this.env, reg.timestamp, leaseOf(reg)) as Transaction & { release(): void };
    tx.release = () => reg.release();
    return tx;
  }

  /**
   * Runs `fn` in a transaction and commits it when `fn`'s promise resolves; retries on retryable
   * conflicts. Returns fn's value. Throws fn's own errors unchanged, non-retryable TxnErrors, or
   * RETRIES_EXHAUSTED (with the last conflict as `cause`).
   *
   * The commit is this method's: `tx.commit()` inside `fn` is INVALID_ARGUMENT and writes nothing
   * (the transaction stays open; `fn` ending normally still commits it). Whatever this method
   * throws, the transaction did not commit (COMMIT_UNDETERMINED aside: readers settle that one).
   */
  async transaction<T>(fn: (tx: Transaction) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    if (typeof fn !== 'function')
      throw new TxnError('INVALID_ARGUMENT', `transaction needs a function (tx) => Promise, not ${fn === null ? 'null' : typeof fn}`, {});
    if (options === null || typeof options !== 'object')
      throw new TxnError('INVALID_ARGUMENT', 'transaction options must be an object', {});
    checkKnown('transaction', options, TRANSACTION_OPTIONS);
    const maxAttempts = options.maxAttempts ?? 20;
    if (!(Number.isSafeInteger(maxAttempts) && maxAttempts >= 1)) {
      throw new TxnError('INVALID_ARGUMENT', `maxAttempts must be a positive integer, not ${maxAttempts}`, { maxAttempts });
    }
    const base = options.baseBackoffMs ?? 2;
    const cap = options.maxBackoffMs ?? 200;
    for (const [name, v] of [
      ['baseBackoffMs', base],
      ['maxBackoffMs', cap],
    ] as const) {
      if (!isTimerMs(v)) {
        throw new TxnError('INVALID_ARGUMENT', `${name} must be a number of ms from 0 to ${MAX_TIMER_MS}, not ${v}`, { [name]: v });
      }
    }
    let last: TxnError | undefined;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const tx = await this.begin();
      // A commit from fn committed the data, then this one threw TXN_FINISHED: the caller was told
      // of a failure for a transaction that had committed (found 2026-12). Refused up front instead:
      // committing here, after fn, is what lets an error from fn mean that nothing was written.
      const commit = tx.reserveCommit('db.transaction when the function returns');
      try {
        const result = await fn(tx);
        await commit();
        return result;
      } catch (e) {
        tx.abort();
        if (!isTxnError(e) || !e.retryable) throw e;
        last = e;
        if (e.code === 'KEY_LOCKED') await resolveConflictLock(this.store, e, this.env.read);
      } finally {
        tx.release();
      }
      const delay = Math.random() * Math.min(cap, base * 2 ** (attempt - 1));
      // Jittered backoff between attempts is the retry protocol, not a test wait.
      await new Promise((r) => setTimeout(r, delay));
    }
    throw new TxnError(
      'RETRIES_EXHAUSTED',
      `transaction failed after ${maxAttempts} attempts, each lost to a conflict (the last, ${last?.code ?? 'none'}, is the cause: ${
        last?.message ?? ''
      }); it writes rows other transactions keep writing: retry it later, give it more attempts (maxAttempts), or spread a hot row over several`,
      { attempts: maxAttempts },
      { cause: last },
    );
  }

  /**
   * The latest committed value of one cell, or null: a read-only transaction of one read. Like
   * `snapshot()` then `get`, with one wait instead of two.
   *
   * It first reads the cell's newest committed version, with no start timestamp: for one cell
   * that is what a read at a fresh timestamp returns whenever no lock and no in-process commit in
   * flight is on the cell (every committed record's commit ts was handed out before a fresh
   * timestamp would be; a newest version is never collected). On an embedded store that read is
   * synchronous, and every reader of one version gets the same promise, already resolved; on a
   * remote one it is one store read, like a raw one. With a lock or a commit in the way it takes
   * the ordinary path: a fresh timestamp, waiting or resolving. (TiDB's point gets read at the
   * maximum timestamp for the same reason.) Never throws: errors are rejections.
   */
  get(table: string, row: RowKey, column: string): Promise<Uint8Array | null> {
    // Not an async function, so that the promise already resolved is what the caller gets
    // (readResolvedNow says why it is cheaper).
    try {
      this.checkOpen();
      checkTable(table);
      const ctx = this.env.read;
      if (ctx.syncStore !== undefined && this.env.tables.has(table)) {
        const now = readResolvedNow(table, rowKeyOf(row), userColumn(column), LATEST, ctx);
        if (now !== undefined) return now;
      }
    } catch (e) {
      return Promise.reject(e);
    }
    return this.getSlow(table, row, column);
  }

  /**
   * `get` past its synchronous path: the table checked on its first use; one store read on a
   * remote store, then (or with a lock in the way) a fresh timestamp.
   */
  private async getSlow(table: string, row: RowKey, column: string): Promise<Uint8Array | null> {
    if (!this.env.tables.has(table)) {
      // The arguments first, as on the known path; then back to it once the table is known.
      userColumn(column);
      rowKeyOf(row);
      await this.env.tables.check(table);
      return this.get(table, row, column);
    }
    if (this.env.read.syncStore === undefined) {
      const v = await new Snapshot(this.env, LATEST).tryGet(table, row, column);
      if (v !== undefined) return v;
    }
    return this.getFresh(table, row, column);
  }

  /** `get` as UTF-8 text. */
  async getString(table: string, row: RowKey, column: string): Promise<string | null> {
    const v = await this.get(table, row, column);
    return v === null ? null : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
  }

  /** `get` parsed as JSON. */
  async getJson<T = unknown>(table: string, row: RowKey, column: string): Promise<T | null> {
    const s = await this.getString(table, row, column);
    return s === null ? null : (JSON.parse(s) as T);
  }

  /** `get` at a fresh start timestamp (only when a lock, a commit in flight or a long value is in the way). */
  private async getFresh(table: string, row: RowKey, column: string): Promise<Uint8Array | null> {
    const snap = await this.snapshot();
    try {
      return await snap.get(table, row, column);
    } finally {
      snap.release();
    }
  }

  /**
   * A read-only view at `ts` (default: a fresh timestamp). It takes no locks and never conflicts;
   * it may resolve abandoned locks it meets. Call `release()` when done so GC can advance.
   */
  snapshot(ts?: number): Promise<Snapshot & { release(): void }> {
    if (ts === undefined) {
      // The common case without an async function's frame: a timestamp from the local reservation.
      try {
        this.checkOpen();
        const reg = this.oracle.tryStartTimestamp?.() ?? null;
        if (reg !== null) return Promise.resolve(releasable(new Snapshot(this.env, reg.timestamp, leaseOf(reg)), reg));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return this.snapshotAt(ts);
  }

  private async snapshotAt(ts: number | undefined): Promise<Snapshot & { release(): void }> {
    this.checkOpen();
    if (ts !== undefined) {
      if (!(Number.isSafeInteger(ts) && ts >= 0)) {
        throw new TxnError('INVALID_ARGUMENT', `a snapshot timestamp must be a non-negative integer, not ${ts}`, { startTs: ts });
      }
      // Past every timestamp issued, commits could still land below it: its reads would not repeat.
      const issued = await this.oracle.getTimestamp();
      if (ts > issued) {
        throw new TxnError('INVALID_ARGUMENT', `snapshot at ${ts} is after every timestamp issued (${issued})`, { startTs: ts, issued });
      }
    }
    const reg = ts === undefined ? await this.oracle.getStartTimestamp() : this.oracle.registerActive(ts);
    if (ts !== undefined) {
      // Registered first, checked second: a watermark at or below ts now stays there while we
      // hold the registration; one already above it may have let GC collect what ts would read.
      const watermark = await this.oracle.getWatermark().catch((e: unknown) => {
        reg.release();
        throw e;
      });
      if (ts < watermark) {
        reg.release();
        throw new TxnError('SNAPSHOT_TOO_OLD', `snapshot at ${ts} is below the GC watermark ${watermark}: its versions may be collected`, {
          startTs: ts,
          watermark,
        });
      }
    }
    return releasable(new Snapshot(this.env, reg.timestamp, leaseOf(reg)), reg);
  }

  /**
   * The oracle's GC watermark: the oldest start timestamp a running transaction or snapshot may
   * still read at. Versions shadowed below it are what `collectGarbage` may remove. A remote oracle
   * holds it back by a few seconds for its clients' report lag (oracle.ts), so it trails the
   * newest timestamps even on an idle store.
   */
  async gcWatermark(): Promise<number> {
    this.checkOpen();
    return this.oracle.getWatermark();
  }

  /**
   * Collects versions no running transaction can read (below the oracle's GC watermark) in every
   * Percolator table, after resolving the locks below it. See gc.ts.
   */
  async collectGarbage(): Promise<GcResult> {
    this.checkOpen();
    return collectGarbage(this.store, await this.percolatorTables(0), await this.oracle.getWatermark(), this.env.read);
  }

  /**
   * Targeted GC (gc-recent.ts): collects, in the rows this process committed to since the last
   * pass, the older versions of transactions it committed completely. Cost proportional to what
   * changed. Only available while background GC is on (the rows are tracked for it). At most
   * about `maxCells` columns (whole rows) per call; the rest stays for the next.
   */
  async collectRecentGarbage(maxCells = Number.POSITIVE_INFINITY): Promise<GcResult> {
    this.checkOpen();
    // NaN, a negative count or a string were taken as they were (what a pass did with them was the comparisons' accident).
    if (!(maxCells === Number.POSITIVE_INFINITY || (Number.isSafeInteger(maxCells) && maxCells > 0))) {
      throw new TxnError('INVALID_ARGUMENT', `maxCells must be a positive integer or Infinity, not ${String(maxCells)}`, { maxCells });
    }
    if (this.recent === null) {
      return { watermark: 0, effectiveWatermark: 0, locksResolved: 0, versionsRemoved: 0, rowsRewritten: 0 };
    }
    return collectRecent(this.store, this.recent, await this.oracle.getWatermark(), maxCells);
  }

  private startBackgroundGc(intervalMs: number, fullIntervalMs: number, windows: PercolatorOptions['recentGcWindows']): void {
    if (!(intervalMs > 0)) return;
    this.gcIntervalMs = intervalMs;
    this.fullGcIntervalMs = fullIntervalMs > 0 ? fullIntervalMs : 0;
    const recent = (this.recent = new RecentCommits(windows));
    // Every tick with something committed runs a targeted pass over the rows committed to since
    // the last one (cost proportional to the change). With full passes on, one (cost proportional
    // to the repository: versions of other processes, rollback records, abandoned locks) runs
    // every fullIntervalMs, at once when the targeted set overflowed, and no sooner than 20× its
    // last duration otherwise (fullPassDue). After a pass that took d ms the next of its kind waits
    // at least 4d — d after a targeted pass over a network, whose time is mostly waiting for the
    // store, not this process's thread (bench soak --store serve: BENCHMARKS.md). The kinds run
    // independently: targeted passes go on during a full one, which over `serve` may take minutes
    // (both delete only versions shadowed at their own watermark; what one took the other finds gone).
    const remote = atomicRowsOf(this.store) === null;
    const notBefore = { full: 0, recent: 0 };
    let lastFull = Date.now();
    let fullEveryMs = this.fullGcIntervalMs;
    const start = (kind: 'full' | 'recent', started: number): void => {
      const full = kind === 'full';
      const mark = recent.fullPassMark();
      if (full) this.commitsSinceGc = 0;
      const totals = this.gcTotals[kind] as GcTotals;
      // Ends the pass (`result` null: it failed): spacing, totals; returns when.
      const done = (result: GcResult | null): number => {
        const now = Date.now();
        notBefore[kind] = now + (full || !remote ? 4 : 1) * (now - started);
        if (full) {
          lastFull = started;
          fullEveryMs = Math.max(fullIntervalMs, 20 * (now - started));
        }
        totals.passes++;
        totals.ms += now - started;
        if (result !== null) totals.versionsRemoved += result.versionsRemoved;
        else totals.failed++;
        return now;
      };
      const pass = full
        ? this.collectGarbage().then((r) => {
            recent.fullPassDone(mark);
            return r;
          })
        : this.collectRecentGarbage(RECENT_PASS_CELLS);
      const running = pass.then(
        (result) => {
          this.lastGc = { result, error: null, at: done(result), kind };
        },
        (error: unknown) => {
          // A failed pass is retried at a later tick; it never touches data it did not check.
          this.lastGc = { result: null, error, at: done(null), kind };
          this.log?.(`${kind} GC pass failed: ${error instanceof Error ? error.message : String(error)}`);
        },
      );
      this.gcRunning[kind] = running.finally(() => {
        this.gcRunning[kind] = null;
      });
    };
    this.gcTimer = setInterval(() => {
      if (this.closed) return;
      const now = Date.now();
      const { full, recent: targeted } = this.gcRunning;
      if (full === null && now >= notBefore.full && this.commitsSinceGc > 0 && fullPassDue(now, lastFull, fullEveryMs, recent.overflowed)) {
        start('full', now);
      }
      if (targeted === null && now >= notBefore.recent && recent.dirtyCells > 0) start('recent', now);
    }, intervalMs);
    this.gcTimer.unref();
  }

  /** Tables that carry the Percolator system families (cached for `maxAgeMs`). */
  async percolatorTables(maxAgeMs = 1_000): Promise<string[]> {
    this.checkOpen();
    if (typeof maxAgeMs !== 'number' || !(maxAgeMs >= 0)) {
      throw new TxnError('INVALID_ARGUMENT', `maxAgeMs must be a number of ms from 0, not ${String(maxAgeMs)}`, { maxAgeMs });
    }
    // `<`: maxAgeMs 0 (a fresh listing) must not take one made within the same millisecond.
    if (Date.now() - this.tablesCache.at < maxAgeMs) return this.tablesCache.tables;
    const tables: string[] = [];
    for (const name of await this.store.listTables()) {
      // A table dropped since the listing is not one; any other failure fails the listing: a
      // list short of a table would make a quiescence check skip its notifications.
      const spec = await this.store.getTable(name).catch((e: unknown) => {
        if (isStoreError(e, 'TABLE_NOT_FOUND')) return null;
        throw e;
      });
      if (spec === null || missingFamilies(spec).length > 0) continue;
      tables.push(name);
      this.env.tables.remember(name);
    }
    this.tablesCache = { at: Date.now(), tables };
    return tables;
  }

  /**
   * A worker that runs observers in this process (Percolator §2.4). Register observers with
   * `worker.observe(...)`, then `await worker.start()`; `await worker.stop()` to stop gracefully.
   */
  worker(options: WorkerOptions = {}): Worker {
    this.checkOpen();
    const host: WorkerHost = {
      store: this.store,
      readContext: this.env.read,
      begin: async () => {
        const tx = await this.begin();
        this.observerTxns.set(tx, worker);
        return tx;
      },
      owner: this.lockOwner,
      observed: this.observed,
      lockService: this.lockService,
      percolatorTables: () => this.percolatorTables(),
      checkTable: (table) => this.env.tables.check(table),
    };
    const worker = new Worker(host, options);
    this.workers.add(worker);
    return worker;
  }

  /**
   * Resolves once the system is quiescent: a full pass over every Percolator table (or those of
   * `tables`) found no pending notification of an observed column (other than cells this
   * process's running workers parked) and no timestamp was issued by anyone during that pass (when
   * the oracle can tell: in process, or asked over the network) nor during the one after it, which
   * found the same (with `tables` on an embedded store, no write reached them during the one pass;
   * see docs/observers.md), and everything written so far is durable
   * (observers commit with deferred durability). A pass that fails with IO_ERROR (a remote store
   * out of reach for a while) counts as not quiescent. Throws QUIESCENCE_TIMEOUT after
   * `timeoutMs`, with what is pending in `details` (PendingEvidence: per table and column, the
   * observers the registry names, a few rows) and the message (`cause`: the last pass's
   * IO_ERROR, if it failed); the store's IO_ERROR at once when an embedded store refuses writes
   * (a full disk: docs/durability.md) while notifications are pending — no observer can commit
   * until the store is reopened. INVALID_ARGUMENT for a bad `timeoutMs` or `tables`; for a name
   * in `tables`, the store's TABLE_NOT_FOUND when there is no such table, NOT_A_PERCOLATOR_TABLE
   * when it is no Percolator table.
   */
  async waitForQuiescence(options: QuiescenceOptions = {}): Promise<void> {
    this.checkOpen();
    if (options === null || typeof options !== 'object')
      throw new TxnError('INVALID_ARGUMENT', 'waitForQuiescence options must be an object', {});
    checkKnown('waitForQuiescence', options, QUIESCENCE_OPTIONS);
    const timeoutMs = options.timeoutMs ?? 60_000;
    // A string passed `> 0` and made the deadline a concatenation: a wait of centuries.
    if (!(isTimerMs(timeoutMs) && timeoutMs > 0)) {
      throw new TxnError(
        'INVALID_ARGUMENT',
        `timeoutMs must be a number of ms above 0, at most ${MAX_TIMER_MS}, not ${String(timeoutMs)}`,
        {
          timeoutMs,
        },
      );
    }
    const only = quiescenceTables(options.tables);
    const deadline = Date.now() + timeoutMs;
    let delay = 2;
    // A count the store could not answer (IO_ERROR) is null, and its error is kept.
    let failed: unknown = null;
    const orOutOfReach = <T>(count: Promise<T>): Promise<T | null> =>
      count.catch((e: unknown) => {
        if (!isStoreError(e, 'IO_ERROR')) throw e;
        failed = e;
        return null;
      });
    // Some tables of an embedded store: whether any write reached them during the pass, which the
    // store counts per table; the oracle's count would see every other table's work too, and a
    // process busy elsewhere (another application's tables) would never let the wait end.
    const activity = only === null ? null : tablesWriteActivity(this.store, only);
    // A wait that times out says whether the backlog shrank meanwhile: the polls count in full until
    // one finds a notification pending (a pass that finds none reads as much either way).
    let pendingAtStart: number | null = null;
    // The count at the end of the last pass, if that pass was quiet (below).
    let quietThrough: number | null | undefined;
    for (;;) {
      failed = null;
      const before = activity?.() ?? (await issuedCount(this.oracle));
      // Then whether any is pending, not how many: with a backlog the pass stops at the first one
      // instead of reading every notification at every poll (5 % of a web index run's thread).
      const pending: number | null = await orOutOfReach(this.scanPending(pendingAtStart === null ? Number.POSITIVE_INFINITY : 1, only));
      const after = activity?.() ?? (await issuedCount(this.oracle));
      if (pendingAtStart === null && pending !== null && pending > 0) pendingAtStart = pending;
      const quiet = pending === 0 && before === after && before !== BUSY;
      // The store's count of writes is whole on its own: none in flight as the pass began, none
      // entered during it. The oracle's count misses one case: a transaction that had its commit
      // timestamp before the pass, committing during it — its primary row's notify cell landing
      // behind the pass while the notification it answers is cleared ahead of it. The pass after
      // sees that cell (a transaction cannot stay half-committed across a whole pass: the cleared
      // notification was visible until its commit), so two quiet passes in a row, with no
      // timestamp issued from the first's start to the second's end, are taken for quiescence.
      if (quiet && (activity !== null || quietThrough === before)) {
        // Observers commit with deferred durability: quiescent also means durable.
        await atomicRowsOf(this.store)?.sync();
        return;
      }
      quietThrough = quiet ? after : undefined;
      if (quiet) continue; // the second pass at once
      const atomic = atomicRowsOf(this.store);
      if (atomic !== null && atomic.writeFailure() !== null) {
        // No observer can commit until the store takes writes again: resume now, or fail at once.
        const refused = await atomic.resumeWrites();
        if (refused !== null) throw refused;
      }
      if (Date.now() > deadline) {
        const found = failed === null ? await orOutOfReach(this.pendingEvidence(only)) : null;
        const evidence = found === null ? null : { ...found, pendingAtStart };
        throw new TxnError(
          'QUIESCENCE_TIMEOUT',
          `not quiescent after ${timeoutMs} ms${only === null ? '' : ` (tables ${only.join(', ')})`}: ${
            evidence === null ? 'the store is out of reach' : describePending(evidence)
          }`,
          evidence === null ? { pending: null, tables: only, pendingAtStart } : evidence,
          failed === null ? undefined : { cause: failed },
        );
      }
      // Polling for a condition across processes (no event to wait on).
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 50);
    }
  }

  /** Notifications of observed columns still pending (parked cells of local workers excluded). */
  async pendingNotifications(): Promise<number> {
    this.checkOpen();
    return this.scanPending(Number.POSITIVE_INFINITY, null);
  }

  /** What is pending, per table and column, with a few examples (a QUIESCENCE_TIMEOUT's evidence; a full pass). */
  private async pendingEvidence(only: readonly string[] | null): Promise<Omit<PendingEvidence, 'pendingAtStart'>> {
    const groups = new Map<string, { table: string; column: string; pending: number }>();
    const examples: { table: string; row: string; column: string }[] = [];
    const pending = await this.scanPending(Number.POSITIVE_INFINITY, only, (table, row, column) => {
      const key = `${table}\u0000${column}`;
      const g = groups.get(key);
      if (g === undefined) groups.set(key, { table, column, pending: 1 });
      else g.pending++;
      if (examples.length < PENDING_EXAMPLES) examples.push({ table, row: describeRow(table, row).slice(table.length + 1), column });
    });
    const sorted = [...groups.values()].sort((a, b) => b.pending - a.pending);
    const byColumn = [];
    for (const g of sorted.slice(0, PENDING_GROUPS)) {
      // The registry names the observers that should run them (whether any runs is not known here).
      const observers = await this.observed.observersOf(g.table, g.column);
      byColumn.push({ ...g, observers });
    }
    return { pending, tables: only, byColumn, moreColumns: sorted.length - byColumn.length, examples };
  }

  /**
   * Counts the pending notifications of observed columns in `only` (null: every Percolator
   * table), this process's running workers' parked cells excluded; the pass stops once it has
   * counted `atMost`. `each` is told every one counted.
   */
  private async scanPending(
    atMost: number,
    only: readonly string[] | null,
    each?: (table: string, row: Uint8Array, column: string) => void,
  ): Promise<number> {
    const parked = new Set<string>();
    // A stopped worker's parked cells are pending again: another worker (a fixed observer) may run them.
    for (const w of this.workers) if (w.running) for (const k of w.parkedCells()) parked.add(k);
    let pending = 0;
    for (const table of only === null ? await this.percolatorTables() : await this.namedPercolatorTables(only)) {
      // A pass that stops early reads in pages, growing: a server streams a scan's rows in messages
      // of many kilobytes, so an unlimited scan read and sent a table's whole notify group (a few
      // hundred rows) for the one row a quiescence poll needed — 43 % of the rows `percolator
      // serve` read under a web index with `percolator wait` polling (2026-12-06).
      let page = atMost === Number.POSITIVE_INFINITY ? undefined : PENDING_FIRST_PAGE;
      let after: Uint8Array | null = null;
      for (;;) {
        let rows = 0;
        const range: ReadRowsOptions = after === null ? {} : { rows: { rowRanges: [{ startKeyOpen: after }] } };
        const limit = page === undefined ? {} : { rowsLimit: page };
        for await (const r of this.store.readRows(table, { filter: { familyNameRegexFilter: NOTIFY }, ...range, ...limit })) {
          rows++;
          after = r.key;
          // A column's strong and weak notify cells are under two qualifiers (layout.ts): counted once.
          const seen = new Set<string>();
          for (const c of r.cells) {
            const { column } = notifiedColumn(c.qualifier);
            if (seen.has(column)) continue;
            seen.add(column);
            if (!this.observed.has(table, column)) continue;
            if (parked.has(`${table}/${Buffer.from(r.key).toString('hex')}/${column}`)) continue;
            each?.(table, r.key, column);
            if (++pending >= atMost) return pending;
          }
        }
        if (page === undefined || rows < page) break;
        page = Math.min(page * 8, PENDING_MAX_PAGE);
      }
    }
    return pending;
  }

  /**
   * `names`, each checked to be a Percolator table (the cached listing first, a fresh one before
   * asking about a name): the store's TABLE_NOT_FOUND for one it does not have, NOT_A_PERCOLATOR_TABLE.
   * The listing, not the remembered tables, so that a table recreated without the families is seen.
   */
  private async namedPercolatorTables(names: readonly string[]): Promise<readonly string[]> {
    let known = await this.percolatorTables();
    if (names.some((t) => !known.includes(t))) known = await this.percolatorTables(0);
    for (const t of names) {
      if (known.includes(t)) continue;
      this.env.tables.forget(t);
      await this.env.tables.check(t);
    }
    return names;
  }

  /** This process's liveness owner id (written into its locks). */
  get owner(): string {
    return this.env.owner;
  }

  /**
   * Stops this instance's workers — all at once, each waiting for its running observers for up to
   * `graceMs` (default: each worker's stopGraceMs) before abandoning them (Worker.stop) — then
   * releases what it opened. A stuck observer never keeps it from closing.
   * Throws: INVALID_ARGUMENT for a graceMs that is not an integer from 0 to 2^31 − 1.
   */
  async close(options: { readonly graceMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    if (options === null || typeof options !== 'object')
      throw new TxnError('INVALID_ARGUMENT', `close options must be an object, not ${describeType(options)}`, {});
    checkKnown('close', options, CLOSE_OPTIONS);
    const { graceMs } = options;
    if (graceMs !== undefined && !isTimerMs(graceMs, 0, true)) {
      throw new TxnError('INVALID_ARGUMENT', `graceMs must be an integer of ms from 0 to ${MAX_TIMER_MS}, not ${graceMs}`, { graceMs });
    }
    // Concurrent calls share one close: a second one must not close the store (or the oracle) again.
    this.closing ??= this.shutDown(graceMs);
    return this.closing;
  }

  private async shutDown(graceMs: number | undefined): Promise<void> {
    await Promise.all([...this.workers].map((w) => w.stop(graceMs === undefined ? {} : { graceMs })));
    this.closed = true;
    if (this.gcTimer !== null) clearInterval(this.gcTimer);
    await Promise.all([this.gcRunning.full, this.gcRunning.recent]);
    await this.secondaryRetry.close();
    await this.observed.close();
    if (this.owns.lockService) await this.lockService.close();
    await this.liveness.close();
    if (this.owns.oracle) await (this.oracle instanceof Oracle ? releaseOracle(this.store) : this.oracle.close());
    if (this.owns.store) await this.store.close();
  }
}

const OPEN_OPTIONS: ReadonlySet<string> = new Set([
  'store',
  'storeOptions',
  'oracle',
  'lockTtlMs',
  'lockWaitMs',
  'leaseMs',
  'nowMs',
  'onProtocolPoint',
  'lockService',
  'observedRefreshMs',
  'gcIntervalMs',
  'fullGcIntervalMs',
  'recentGcWindows',
  'commitProtocol',
  'log',
]);
const TRANSACTION_OPTIONS: ReadonlySet<string> = new Set(['maxAttempts', 'baseBackoffMs', 'maxBackoffMs']);
const QUIESCENCE_OPTIONS: ReadonlySet<string> = new Set(['timeoutMs', 'tables']);
const CLOSE_OPTIONS: ReadonlySet<string> = new Set(['graceMs']);

/** A misspelt option is INVALID_ARGUMENT, not the default (util/options.ts). */
function checkKnown(what: string, options: object, known: ReadonlySet<string>): void {
  const unknown = unknownOption(what, options, known);
  if (unknown !== undefined) throw new TxnError('INVALID_ARGUMENT', unknown.message, { option: unknown.option });
}

/**
 * Percolator.open's options that are not durations (those are checked with their bounds): a
 * misspelt name, and objects and callbacks of the wrong type, which failed later as TypeErrors
 * deep inside (a store `null`, a `nowMs` that is not a function) or, for an oracle or a lock
 * service, at the first transaction or worker. INVALID_CONFIG with the option in `details`.
 */
function checkOpenOptions(options: PercolatorOptions): void {
  const unknown = unknownOption('Percolator.open', options, OPEN_OPTIONS);
  if (unknown !== undefined) throw new TxnError('INVALID_CONFIG', unknown.message, { option: unknown.option });
  const bad = (option: string, needs: string, value: unknown): TxnError =>
    new TxnError('INVALID_CONFIG', `${option} must be ${needs}, not ${describeType(value)}`, { option });
  const { store } = options;
  if (store !== undefined && typeof store !== 'string' && !hasMethods(store, ['readRows', 'mutateRow', 'close']))
    throw bad('store', 'a store URL or an open Store', store);
  if (options.storeOptions !== undefined && typeof store === 'object')
    throw new TxnError('INVALID_CONFIG', 'storeOptions apply to a store URL, not to an open Store (it was opened with its own)', {
      option: 'storeOptions',
    });
  if (options.oracle !== undefined && !hasMethods(options.oracle, ['getTimestamp', 'getStartTimestamp', 'registerActive', 'getWatermark']))
    throw bad('oracle', 'a timestamp source (an OracleClient)', options.oracle);
  if (options.lockService !== undefined && !hasMethods(options.lockService, ['tryLock', 'unlock', 'close']))
    throw bad('lockService', 'a LockService (tryLock, unlock, close)', options.lockService);
  for (const name of ['nowMs', 'onProtocolPoint', 'log'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw bad(name, 'a function', options[name]);
  }
}

/** Above every timestamp: `get`'s read of a cell's newest committed version. */
const LATEST = Number.MAX_SAFE_INTEGER;

/** A write was in flight on one of the tables when their activity was read: not a quiet moment. */
const BUSY = -1;

/**
 * Writes entered on `tables` so far (BUSY while one is in flight), when the store counts them
 * (the embedded backends: `AtomicRowsStore.writeActivity`); else null. A write in flight at a
 * pass's start may land during it, so it makes the pass count as busy; a write that enters during
 * the pass changes the count. Either may be an observer moving a notification from a row the pass
 * had not reached to one it had passed.
 */
function tablesWriteActivity(store: Store, tables: readonly string[]): (() => number) | null {
  const atomic = atomicRowsOf(store);
  if (atomic === null || typeof atomic.writeActivity !== 'function') return null;
  return () => {
    let entered = 0;
    for (const t of tables) {
      const a = atomic.writeActivity(t);
      if (a === null) continue;
      if (a.inflight > 0) return BUSY;
      entered += a.entered;
    }
    return entered;
  };
}

/** Remote oracles that answered ISSUED with a protocol error: a server from before it. */
const cannotCount = new WeakSet<object>();

/**
 * Timestamps handed out so far, to anyone: an in-process Oracle counts them for its local and
 * remote clients alike, and a remote one is asked (OracleClient.issuedCount; the oracle `percolator
 * serve` hosts, or `percolator oracle`). null when it cannot tell (no count; a server from before
 * ISSUED); NaN, equal to no count, when a remote oracle did not answer this time — so the pass is
 * not taken for quiet.
 */
async function issuedCount(oracle: TimestampSource): Promise<number | null> {
  const o = oracle as { stats?: () => { handedOut?: number }; issuedCount?: () => Promise<number> };
  if (typeof o.issuedCount === 'function' && !cannotCount.has(oracle)) {
    return o.issuedCount().catch((e: unknown) => {
      if (!isOracleError(e, 'ORACLE_PROTOCOL')) return Number.NaN;
      cannotCount.add(oracle);
      return null;
    });
  }
  const n = typeof o.stats === 'function' ? o.stats().handedOut : undefined;
  return typeof n === 'number' ? n : null;
}

/**
 * Refuses a millisecond server (Google's emulator, Cloud Bigtable) reached at `timestampScale=1`.
 * Percolator writes cells at its oracle's timestamps, which are microseconds: they are multiples of
 * 1000 only while the clock leads the oracle (at most one transaction start a millisecond), so such
 * a store takes the first writes and then refuses one with INVALID_TIMESTAMP once two transactions
 * begin in the same millisecond — a deployment that works in a quick try and fails under load.
 */
function checkTimestampScale(url: string): void {
  if (!url.startsWith('bigtable://')) return;
  const u = parseBigtableUrl(url);
  if (u.timestampScale !== 1 || (u.host !== undefined && !u.emulator)) return;
  throw new TxnError(
    'INVALID_CONFIG',
    `a store at ${url} keeps millisecond timestamps, and Percolator writes at its oracle's microsecond ones: add timestampScale=1000 to the URL (wire timestamp = ours × 1000; docs/bigtable-backend.md › Timestamps)`,
    { url, timestampScale: u.timestampScale },
  );
}

/** waitForQuiescence's `tables`, checked: undefined → null (every table); else a non-empty array of distinct table names. */
function quiescenceTables(tables: unknown): readonly string[] | null {
  if (tables === undefined) return null;
  if (!Array.isArray(tables) || tables.length === 0 || tables.some((t) => typeof t !== 'string' || t === '')) {
    throw new TxnError('INVALID_ARGUMENT', `tables must be a non-empty array of table names, not ${describeArgument(tables)}`, {
      option: 'tables',
    });
  }
  return [...new Set(tables as string[])];
}

function describeArgument(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map((x) => (typeof x === 'string' ? JSON.stringify(x) : typeof x)).join(', ')}]`.slice(0, 200);
  return v === null ? 'null' : typeof v;
}

/** A QUIESCENCE_TIMEOUT's account of what is pending, bounded: the biggest groups and a few rows. */
function describePending(e: PendingEvidence): string {
  // The last poll found one, or saw timestamps issued during its pass (a transaction running): gone by this count.
  if (e.pending === 0)
    return '0 notifications pending now, but the last pass was not quiescent (one was pending, or timestamps were issued during it)';
  const groups = e.byColumn
    .slice(0, PENDING_IN_MESSAGE)
    .map((g) => `${g.table}/${g.column} ${g.pending}${g.observers.length > 0 ? ` (observer ${g.observers.join(', ')})` : ''}`);
  const more = e.byColumn.length - groups.length + e.moreColumns;
  const rows = e.examples.slice(0, 3).map((x) => `${x.table}/${x.row}/${x.column}`);
  const start = e.pendingAtStart === null ? '' : `; ${e.pendingAtStart} when the wait began`;
  return `${e.pending} notifications pending: ${groups.join(', ')}${more > 0 ? `, and ${more} more column(s)` : ''}; e.g. ${rows.join(', ')}${start}`;
}

/** The registration's lease check, for a snapshot or transaction at its timestamp (null: it cannot lapse). */
function leaseOf(reg: ActiveRegistration): LeaseCheck | null {
  const held = reg.held;
  return held === undefined ? null : () => held.call(reg);
}

/** A snapshot whose `release()` ends its registration (so GC can advance past it). */
function releasable(snap: Snapshot, reg: ActiveRegistration): Snapshot & { release(): void } {
  const r = snap as Snapshot & { release(): void };
  r.release = () => {
    snap.endReads();
    reg.release();
  };
  return r;
}

/** `recentGcWindows`: absent, or an object of known counts, each a positive safe integer. */
function checkGcWindows(w: unknown): void {
  if (w === undefined) return;
  const bad = (why: string): TxnError => new TxnError('INVALID_CONFIG', `recentGcWindows ${why}`, { option: 'recentGcWindows', value: w });
  if (w === null || typeof w !== 'object') throw bad(`must be an object, not ${describeType(w)}`);
  for (const [k, v] of Object.entries(w)) {
    if (k !== 'cells' && k !== 'transactions') throw bad(`has no option ${k} (cells, transactions)`);
    if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) > 0)) throw bad(`.${k} must be a positive integer, not ${String(v)}`);
  }
}
