/**
 * `percolator check notify [--crash]`: the proof that observers see every change and commit at
 * most once per change, under kill -9 (DESIGN §7, §9: `changes`, `processed`, `missed`,
 * `duplicateCommits`, `crashes`).
 *
 * How (and why it cannot pass by accident):
 * - The supervisor (this module) opens the one store, runs the timestamp oracle in process and
 *   serves it over TCP (a `bigtable://` deployment's own oracle instead, when it has one:
 *   check-oracle.ts), records the observed column in the registry BEFORE any write (the
 *   registry contract: writers only notify columns they know are observed), and serves the
 *   store to W worker processes over IPC (ipc-store.ts). Each worker (notify-worker.ts) runs the
 *   real Percolator worker with one observer on `c:value` that appends the value it read to the
 *   row's `c:processed` log in its own transaction — so the log lists exactly the observer's
 *   commits (notify-protocol.ts).
 * - Writers in the supervisor (never killed) set `c:value` of random rows among `rows` to unique
 *   change ids, or delete it and record the id in `c:deleted` (notify-protocol.ts), while the
 *   supervisor runs version GC's full passes every second and targeted ones; writes to one row
 *   are serialized here, so each row's recorded list of committed changes is in commit order.
 *   Several changes before a run collapse into one run (§2.4).
 * - With `crash`, the supervisor SIGKILLs a random ready worker every `killIntervalMs` on average
 *   (each gap uniform in [0.5, 1.5] × 1.5 s by default, so ≥ 13 kills per 30 s), and workers
 *   SIGKILL themselves at a random protocol point of an observer commit; every dead worker is
 *   replaced at once. A crash counts only when the child actually exited by SIGKILL.
 * - At the end the writers and the kills stop (workers disarm their self-kill), the workers keep
 *   running, and the supervisor's own Percolator waits for quiescence of the check's table (no
 *   pending notification of an observed column and no timestamp issued during a full pass; other
 *   tables of the store — a user's parked rows — are not the check's to wait for); then the workers stop,
 *   every request they sent is served, and the final values and logs are read through one
 *   snapshot (which resolves any lock a dead worker left).
 * - With `fullDisk` (a `file:` store; util-linux `prlimit`), the supervisor, which owns the store,
 *   squeezes its own file-size limit while the writers run (squeeze.ts): the store's writes fail
 *   part-way as on a full disk, it refuses writes, keeps its deferred ones and resumes. A change
 *   whose transaction fails with IO_ERROR is counted in `writeFailures`, not recorded: it
 *   committed nothing, a claim the logs put to the test (an observer that processed it would log
 *   a change nobody recorded).
 * - verifyNotifyLogs then checks, per row: the LAST change was processed (the log's last entry
 *   is it; otherwise `missed`), no change appears twice in the log (`duplicateCommits`), the log
 *   only holds this row's changes (`unknownEntries`) in commit order (`outOfOrder`), and the
 *   final value is the last recorded change (`finalMismatches`). Superseded changes that never
 *   appear are `collapsed`, which the paper allows. The check fails (`ok: false`) on any of those,
 *   on a quiescence timeout, on a notification left, on a worker that failed, when nothing
 *   changed, or when `crash` was asked for and no worker was killed.
 * - A store another process serves (`bigtable://`) that stays out of reach for `outageMs` (its
 *   server stopped) ends the check with STORE_OUT_OF_REACH (store-reach.ts), whatever phase it is
 *   in: the workers are killed, nobody restarts them and nothing more is waited for. Without the
 *   store there are no logs to verify, and waiting only stacked up timeouts (the quiescence wait,
 *   then the oracle's retries: more than a minute).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ObservedColumns } from '../notify/observed-columns.js';
import { isOracleError } from '../oracle/errors.js';
import { refuseStoreInUse } from './check-store.js';
import { type CheckOracle, openCheckOracle } from './check-oracle.js';
import { isStoreError } from '../store/errors.js';
import { openStore } from '../store/open-store.js';
import { atomicRowsOf, type Store } from '../store/store.js';
import { isTxnError } from '../txn/errors.js';
import { LOCK, NOTIFY } from '../txn/layout.js';
import { hasPrlimit, squeezeOwnStore } from './squeeze.js';
import { Percolator } from '../txn/percolator.js';
import { type StoreServer, serveStoreOverIpc } from './ipc-store.js';
import { awaitWorkersClosed } from './await-workers.js';
import { scratchDir } from './scratch-dir.js';
import { closeCheckHandles, type StoreOutOfReachError, type StoreReach, unlessGone, watchServedStore } from './store-reach.js';
import {
  changeSeen,
  decodeProcessed,
  DELETE_SHARE,
  DELETED,
  METRICS_REPORT_MS,
  type NotifySupervisorMessage,
  type NotifyWorkerConfig,
  type NotifyWorkerMessage,
  type NotifyWorkerMetrics,
  OBSERVER,
  PROCESSED,
  rowKey,
  TABLE,
  cellText,
  VALUE,
} from './notify-protocol.js';

export interface NotifyOptions {
  /** How long writers run (seconds). */
  readonly seconds: number;
  /** Kill workers (supervisor kills and self-kills inside observer commits); false: no kills. */
  readonly crash: boolean;
  /**
   * Store URL (`memory:`, `file:DIR`, `bigtable://…`). Default `memory:`: the supervisor, which
   * holds the store, is never killed, so durability is not what this check is about; with
   * `fullDisk`, `file:` in a fresh temporary directory, removed when the check passes.
   */
  readonly store?: string;
  /** Worker processes (default 3). */
  readonly workers?: number;
  /** Rows the writers change (default 50). */
  readonly rows?: number;
  /** Concurrent writer loops in the supervisor (default 2). */
  readonly writers?: number;
  /** Pause of each writer loop between changes (default 2 ms). */
  readonly writerPauseMs?: number;
  /** Observer threads per worker (default 2). */
  readonly threads?: number;
  /** Scanners per worker (default 2). */
  readonly scanners?: number;
  /** Workers' liveness lease (default 1000 ms). */
  readonly leaseMs?: number;
  /** Workers' lock TTL (default 3000 ms). */
  readonly lockTtlMs?: number;
  /** Mean time between supervisor kills (default 1500 ms; each gap uniform in [0.5, 1.5] × mean, so ≥ 13 per 30 s). */
  readonly killIntervalMs?: number;
  /** A worker arms its self-kill after a delay drawn from this range (default [500, 4000] ms). */
  readonly selfKillArmMs?: readonly [number, number];
  /** Extra random delay (ms, up to) inside the observer between its reads and its commit (default 3). */
  readonly observerDelayMs?: number;
  /** Deadline for quiescence after the writers stop (default 60 000 ms). */
  readonly quiescenceTimeoutMs?: number;
  /** Squeeze the supervisor's file-size limit while the writers run, as a disk filling up and emptying (`file:` only). */
  readonly fullDisk?: boolean;
  /**
   * For a store another process serves (`bigtable://`): how long it may stay out of reach (no
   * answer to the supervisor's probe) before the check ends with STORE_OUT_OF_REACH (default
   * 10 000 ms; store-reach.ts). A server restarting, or connections reset, take less.
   */
  readonly outageMs?: number;
  /** Progress lines. */
  readonly log?: (line: string) => void;
  /**
   * Negative control (tests): after quiescence, write the last change of this many rows through a
   * Percolator instance that never learned the column is observed (breaking the registry
   * contract), so those changes set no notify cell; the check must then report them missed.
   */
  readonly sabotageUnnotifiedChanges?: number;
}

/** One row as the verifier takes it. */
export interface RowRecord {
  readonly row: string;
  /** Committed changes (ids written to `c:value`), in commit order. */
  readonly changes: readonly string[];
  /** The row's `c:value` in the final snapshot. */
  readonly final: string | null;
  /** The row's `c:processed` log in the final snapshot (one entry per observer commit). */
  readonly log: readonly string[];
}

export interface NotifyVerdict {
  readonly changes: number;
  /** Observer commits: log entries. */
  readonly processed: number;
  /** Rows whose last change is not the last entry of their log (a change never processed). */
  readonly missed: number;
  /** Log entries that repeat an earlier entry of the same row (a change committed twice). */
  readonly duplicateCommits: number;
  /** Superseded changes never processed on their own (collapsed into a later run; allowed). */
  readonly collapsed: number;
  /** Log entries that are not a recorded change of that row. */
  readonly unknownEntries: number;
  /** Log entries older than an earlier entry (the observer read a stale value after a newer run). */
  readonly outOfOrder: number;
  /** Rows whose final value is not their last recorded change. */
  readonly finalMismatches: number;
  /** A few offending rows, described. */
  readonly examples: string[];
}

/** The verdict on the final logs (pure; exported for negative controls). */
export function verifyNotifyLogs(rows: readonly RowRecord[], maxExamples = 10): NotifyVerdict {
  let changes = 0;
  let processed = 0;
  let missed = 0;
  let duplicateCommits = 0;
  let collapsed = 0;
  let unknownEntries = 0;
  let outOfOrder = 0;
  let finalMismatches = 0;
  const examples: string[] = [];
  const example = (s: string): void => {
    if (examples.length < maxExamples) examples.push(s);
  };
  for (const r of rows) {
    changes += r.changes.length;
    processed += r.log.length;
    const position = new Map(r.changes.map((c, i) => [c, i]));
    const seen = new Set<string>();
    let lastPos = -1;
    for (const entry of r.log) {
      const pos = position.get(entry);
      if (seen.has(entry)) {
        duplicateCommits++;
        example(`${r.row}: ${entry} committed twice`);
        continue;
      }
      seen.add(entry);
      if (pos === undefined) {
        unknownEntries++;
        example(`${r.row}: log entry ${JSON.stringify(entry)} is not a change of this row`);
        continue;
      }
      if (pos < lastPos) {
        outOfOrder++;
        example(`${r.row}: ${entry} processed after the later change ${r.changes[lastPos]}`);
      }
      lastPos = Math.max(lastPos, pos);
    }
    const last = r.changes.length > 0 ? r.changes[r.changes.length - 1] : undefined;
    if (last !== undefined && r.log[r.log.length - 1] !== last) {
      missed++;
      example(`${r.row}: last change ${last} not processed (log ends with ${r.log[r.log.length - 1] ?? 'nothing'})`);
    }
    if (r.final !== (last ?? null)) {
      finalMismatches++;
      example(`${r.row}: final value ${r.final} is not the last recorded change ${last ?? null}`);
    }
    for (let i = 0; i < r.changes.length - 1; i++) if (!seen.has(r.changes[i] as string)) collapsed++;
  }
  return { changes, processed, missed, duplicateCommits, collapsed, unknownEntries, outOfOrder, finalMismatches, examples };
}

export interface NotifyResult extends NotifyVerdict {
  readonly ok: boolean;
  /** Workers that died by SIGKILL (supervisor kills and self-kills). */
  readonly crashes: number;
  /** Crashes by cause: `random` (supervisor) or the observer-commit protocol point of a self-kill. */
  readonly crashesAt: Record<string, number>;
  readonly rows: number;
  /** Rows that received at least one change. */
  readonly rowsChanged: number;
  /** Writes that gave up (retries exhausted, or with fullDisk an IO_ERROR; nothing committed, not recorded as changes). */
  readonly writeFailures: number;
  /** With fullDisk: how often the store's file-size limit was lowered. */
  readonly squeezes: number;
  readonly quiescent: boolean;
  /** Time from the writers' stop to quiescence. */
  readonly quiescenceMs: number;
  /** Notify cells of the observed column left after the workers stopped (0 when quiescent). */
  readonly notificationsLeft: number;
  readonly locksLeft: number;
  /** Sums of the workers' last reported metrics (killed workers' last few runs may be missing). */
  readonly workerMetrics: NotifyWorkerMetrics;
  readonly errors: string[];
  readonly seconds: number;
  readonly workers: number;
  readonly store: string;
}

/** The compiled worker: next to this file in dist/, or in dist/ when running from src/ (tests). */
export function notifyWorkerScript(): string {
  const candidates = [
    fileURLToPath(new URL('./notify-worker.js', import.meta.url)),
    fileURLToPath(new URL('../../dist/check/notify-worker.js', import.meta.url)),
  ];
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined) throw new Error(`notify-worker.js not found (looked in ${candidates.join(', ')}): run npm run build`);
  return found;
}

/** Waiting is the point here (kill schedule, writer pacing, polling other processes' state). */
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Resolves once every worker in `live` (the supervisor's set: a worker leaves it when its process
 * closes) has sent a metrics report after this call with no row queued or running. Throws after
 * `timeoutMs`.
 */
async function workersIdle(live: ReadonlySet<WorkerHandle>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const since = new Map([...live].map((w) => [w, w.reports]));
  for (;;) {
    const waiting = [...live].filter((w) => w.reports === (since.get(w) ?? 0) || w.busy > 0);
    if (waiting.length === 0) return;
    if (Date.now() > deadline) throw new Error(`${waiting.length} worker(s) still busy ${timeoutMs} ms after quiescence`);
    // Polling other processes' reports (sent every METRICS_REPORT_MS).
    await sleep(METRICS_REPORT_MS / 5);
  }
}

interface WorkerHandle {
  readonly proc: ChildProcess;
  readonly incarnation: number;
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  ready: boolean;
  crashPoint: string | null;
  killedBySupervisor: boolean;
  error: string | null;
  stderr: string;
  metrics: NotifyWorkerMetrics | null;
  /** Metrics reports received, and the rows queued or running at the last one. */
  reports: number;
  busy: number;
}

const ZERO: NotifyWorkerMetrics = {
  runs: 0,
  commits: 0,
  skipped: 0,
  conflicts: 0,
  failures: 0,
  parked: 0,
  cleared: 0,
  rowsScanned: 0,
  jumps: 0,
};

export async function runNotifyCheck(opts: NotifyOptions): Promise<NotifyResult> {
  const log = opts.log ?? (() => undefined);
  const workerCount = opts.workers ?? 3;
  const rowCount = opts.rows ?? 50;
  const writerCount = opts.writers ?? 2;
  if (!Number.isSafeInteger(workerCount) || workerCount < 1)
    throw Object.assign(new Error('check notify needs at least 1 worker'), { code: 'INVALID_ARGUMENT' });
  if (!Number.isSafeInteger(rowCount) || rowCount < 1)
    throw Object.assign(new Error('check notify needs at least 1 row'), { code: 'INVALID_ARGUMENT' });
  if (!Number.isSafeInteger(writerCount) || writerCount < 1)
    throw Object.assign(new Error('check notify needs at least 1 writer'), { code: 'INVALID_ARGUMENT' });
  const script = notifyWorkerScript();

  const fullDisk = opts.fullDisk === true;
  if (fullDisk && opts.store !== undefined && !opts.store.startsWith('file:'))
    throw Object.assign(new Error(`check notify --full-disk squeezes a file: store (got ${opts.store})`), { code: 'INVALID_ARGUMENT' });
  if (fullDisk && !(await hasPrlimit()))
    throw Object.assign(new Error('check notify --full-disk needs prlimit (util-linux)'), { code: 'NO_PRLIMIT' });
  // A disk to fill needs files: without --store, a store in a temporary directory (as check bank
  // takes by default), removed when the check passes.
  const scratch = fullDisk && opts.store === undefined ? await scratchDir('notify') : null;
  const url = opts.store ?? (scratch === null ? 'memory:' : `file:${scratch.path}`);
  let passed = false;
  const store = await openStore(url);
  let oracle: CheckOracle | null = null;
  let db: Percolator | null = null;
  let blind: Percolator | null = null;
  const live = new Set<WorkerHandle>();
  /** A worker that exits is replaced while this holds; the finally's kills must not be. */
  let respawn = true;
  /** Ends the full-disk squeeze however the run ends (this process's own file-size limit). */
  let squeezeOver = false;
  let squeezing: Promise<number> = Promise.resolve(0);
  let reach: StoreReach | null = null;
  try {
    await refuseStoreInUse(store, url);
    oracle = await openCheckOracle(store);
    const oracleAt = { host: oracle.host, port: oracle.port }; // the workers' (fixed for the run)
    // Opened before the registry knows the column and never refreshed: its writes do not notify.
    if ((opts.sabotageUnnotifiedChanges ?? 0) > 0) blind = await Percolator.open({ store, oracle: oracle.source, observedRefreshMs: 0 });
    // The registry contract: the observed column is recorded before anything writes it, so every
    // change below sets its notify cell. (Workers record it again when they start; idempotent.)
    const registry = new ObservedColumns(store);
    await registry.open(0);
    await registry.register(TABLE, VALUE, OBSERVER);
    await registry.close();
    // Full GC passes besides the targeted ones, as often as they may run (20× their duration): a
    // deletion's record goes once no reader needs it and its notification was processed, and the
    // check holds GC to that under crashes.
    db = await Percolator.open({ store, oracle: oracle.source, fullGcIntervalMs: 1_000 });
    const theDb = db;
    if ((await store.listTables()).includes(TABLE)) await store.deleteTable(TABLE);
    await db.createTable(TABLE);

    // --- a served store that goes away ends the check -------------------------------------------
    // Only a store another process serves can go away under the check; without this, every wait
    // below (the workers' start, the writers, quiescence, the stop, the final read) ran into its own
    // timeout, and the check ended more than a minute later with the oracle's error.
    reach = watchServedStore(url, () => store.readRow(TABLE, Buffer.from(rowKey(0))), { outageMs: opts.outageMs, what: 'check notify' });
    const watch = reach;
    const gone = (): StoreOutOfReachError | null => watch?.lost() ?? null;

    // --- workers ------------------------------------------------------------------------------
    const errors: string[] = [];
    const crashesAt: Record<string, number> = {};
    const finished: NotifyWorkerMetrics[] = [];
    let crashes = 0;
    let incarnations = 0;
    let killing = opts.crash;
    let selfKills = opts.crash;
    const servers: StoreServer[] = [];
    const allClosed: Promise<unknown>[] = [];

    const onMessage = (w: WorkerHandle, m: NotifyWorkerMessage): void => {
      switch (m.t) {
        case 'notify.ready':
          w.ready = true;
          break;
        case 'notify.metrics':
          w.reports++;
          w.busy = m.busy;
          w.metrics = m.metrics;
          break;
        case 'notify.stopped':
          w.metrics = m.metrics;
          break;
        case 'notify.crash':
          w.crashPoint = m.point;
          break;
        case 'notify.error':
          w.error = `${m.code}: ${m.message.split('\n')[0]}`;
          break;
      }
    };

    const spawnWorker = (): void => {
      const incarnation = ++incarnations;
      const cfg: NotifyWorkerConfig = {
        incarnation,
        storeUrl: url,
        oracleHost: oracleAt.host,
        oraclePort: oracleAt.port,
        threads: opts.threads ?? 2,
        scanners: opts.scanners ?? 2,
        leaseMs: opts.leaseMs ?? 1000,
        lockTtlMs: opts.lockTtlMs ?? 3000,
        crash: selfKills ? { armMinMs: opts.selfKillArmMs?.[0] ?? 500, armMaxMs: opts.selfKillArmMs?.[1] ?? 4000 } : null,
        observerDelayMs: opts.observerDelayMs ?? 3,
        fullDisk,
      };
      const proc = fork(script, [JSON.stringify(cfg)], { serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
      // bigtable:// workers open the store themselves; every other store is served from here.
      servers.push(serveStoreOverIpc(store, proc));
      const w: WorkerHandle = {
        proc,
        incarnation,
        closed: new Promise((res) => proc.once('close', (code, signal) => res({ code, signal }))),
        ready: false,
        crashPoint: null,
        killedBySupervisor: false,
        error: null,
        stderr: '',
        metrics: null,
        reports: 0,
        busy: 0,
      };
      live.add(w);
      proc.stderr?.on('data', (d: Buffer) => {
        w.stderr = (w.stderr + d.toString()).slice(-4000);
      });
      proc.on('message', (m: NotifyWorkerMessage) => onMessage(w, m));
      allClosed.push(
        w.closed.then(({ code, signal }) => {
          live.delete(w);
          finished.push(w.metrics ?? ZERO);
          if (signal === 'SIGKILL' && (w.killedBySupervisor || w.crashPoint !== null)) {
            crashes++;
            const where = w.crashPoint ?? 'random';
            crashesAt[where] = (crashesAt[where] ?? 0) + 1;
          } else if (code !== 0) {
            errors.push(
              `worker ${incarnation} exited with ${signal ?? `code ${code}`}: ${w.error ?? (w.stderr.trim().slice(0, 1500) || 'no output')}`,
            );
          }
          if (respawn) {
            if (errors.length > 20) {
              respawn = false;
              return;
            }
            spawnWorker();
          }
        }),
      );
    };
    for (let i = 0; i < workerCount; i++) spawnWorker();
    // Start writing once every first worker runs (not needed for correctness — the registry is
    // already written — but it makes the run exercise the workers from the first change).
    const readyDeadline = performance.now() + 30_000;
    while (
      [...live].filter((w) => w.ready).length < workerCount &&
      errors.length === 0 &&
      gone() === null &&
      performance.now() < readyDeadline
    )
      await sleep(20);
    const goneAtStart = gone();
    if (goneAtStart !== null) throw goneAtStart;
    const runStarted = performance.now();

    // --- supervisor kills -----------------------------------------------------------------------
    const killer = (async () => {
      if (!opts.crash) return;
      const mean = opts.killIntervalMs ?? 1500;
      while (killing) {
        const at = performance.now() + mean * (0.5 + Math.random());
        while (killing && performance.now() < at) await sleep(Math.min(100, at - performance.now()));
        // Wait for a victim (a replacement may still be starting) rather than skipping a kill.
        for (;;) {
          if (!killing) return;
          const ready = [...live].filter((w) => w.ready && w.crashPoint === null && !w.killedBySupervisor);
          if (ready.length > 0) {
            const victim = ready[Math.floor(Math.random() * ready.length)] as WorkerHandle;
            victim.killedBySupervisor = true;
            victim.proc.kill('SIGKILL');
            break;
          }
          await sleep(20);
        }
      }
    })();

    // --- writers ------------------------------------------------------------------------------
    const keys = Array.from({ length: rowCount }, (_, i) => rowKey(i));
    const changesOf = new Map<string, string[]>(keys.map((k) => [k, []]));
    const rowTail = new Map<string, Promise<void>>();
    let changeSeq = 0;
    let writeFailures = 0;
    let writing = true;
    /** Serializes writes to one row, so the recorded order is the commit order. */
    const withRow = async (row: string, fn: () => Promise<void>): Promise<void> => {
      const before = rowTail.get(row) ?? Promise.resolve();
      const mine = before.then(fn);
      const tail = mine.catch(() => undefined);
      rowTail.set(row, tail);
      await mine;
    };
    const atomic = atomicRowsOf(store);
    /** The row's committed value once the store takes writes again and a reader settled any lock (bounded). */
    const settledValue = async (row: string): Promise<string | null> => {
      const deadline = performance.now() + 60_000;
      for (;;) {
        await atomic?.resumeWrites();
        try {
          const snap = await theDb.snapshot();
          try {
            const [value, deleted] = await snap.getMany(
              TABLE,
              [VALUE, DELETED].map((column) => ({ row, column })),
            );
            return changeSeen(value, deleted);
          } finally {
            snap.release();
          }
        } catch (e) {
          if (performance.now() > deadline) throw e;
          await sleep(20);
        }
      }
    };
    const writer = async (): Promise<void> => {
      while (writing) {
        const row = keys[Math.floor(Math.random() * keys.length)] as string;
        const id = `c${++changeSeq}`;
        try {
          await withRow(row, async () => {
            try {
              const deletion = Math.random() < DELETE_SHARE;
              await theDb.transaction(
                async (tx) => {
                  if (!deletion) return tx.set(TABLE, row, VALUE, id);
                  tx.delete(TABLE, row, VALUE);
                  tx.set(TABLE, row, DELETED, id);
                },
                { maxAttempts: 50, maxBackoffMs: 100 },
              );
            } catch (e) {
              // A full disk can leave a commit's outcome unknown for a while: settle it (this row's
              // writes are serialized here, so its value now is this change or an earlier one).
              if (!fullDisk || !isTxnError(e, 'COMMIT_UNDETERMINED')) throw e;
              if ((await settledValue(row)) !== id) throw new NotCommitted();
            }
            (changesOf.get(row) as string[]).push(id);
          });
        } catch (e) {
          if (
            isTxnError(e, 'RETRIES_EXHAUSTED') ||
            e instanceof NotCommitted ||
            // A full disk refuses the store's writes, and the oracle's mark is one of them (no timestamp: nothing committed).
            (fullDisk && (isStoreError(e, 'IO_ERROR') || isOracleError(e)))
          )
            writeFailures++;
          else {
            // The commit's outcome is unknown: the recorded order can no longer be trusted.
            errors.push(`writer: ${(e as Error).message}`);
            writing = false;
          }
        }
        if ((opts.writerPauseMs ?? 2) > 0) await sleep(opts.writerPauseMs ?? 2);
      }
    };
    const writers = Array.from({ length: writerCount }, writer);
    const squeezer = (squeezing = fullDisk ? squeezeOwnStore(url, store, () => squeezeOver || !writing) : Promise.resolve(0));

    // --- run, then quiesce -----------------------------------------------------------------------
    const runUntil = runStarted + opts.seconds * 1000;
    let lastLog = performance.now();
    while (writing && performance.now() < runUntil && gone() === null) {
      await sleep(Math.min(250, Math.max(1, runUntil - performance.now())));
      if (performance.now() - lastLog >= 2000) {
        lastLog = performance.now();
        log(`${Math.round((performance.now() - runStarted) / 1000)} s: ${changeSeq} changes, ${crashes} crashes, ${live.size} workers`);
      }
    }
    writing = false;
    const goneInRun = gone();
    if (goneInRun !== null) throw goneInRun;
    // A writer's commit over a store that went away ends at its own deadline.
    await unlessGone(watch, Promise.all(writers));
    const squeezes = await squeezer; // the room is back; quiescence resumes writing if needed
    killing = false;
    await killer;
    // The kills stop with the writers: quiescence measures convergence, not the restart rate.
    selfKills = false;
    for (const w of live) if (w.proc.connected) w.proc.send({ t: 'notify.calm' } satisfies NotifySupervisorMessage);
    const activeSeconds = (performance.now() - runStarted) / 1000;
    log(`writers stopped after ${changeSeq} changes; waiting for quiescence`);
    const quiesceStarted = performance.now();
    let quiescent = true;
    try {
      await unlessGone(watch, db.waitForQuiescence({ tables: [TABLE], timeoutMs: opts.quiescenceTimeoutMs ?? 60_000 }));
    } catch (e) {
      if (!isTxnError(e, 'QUIESCENCE_TIMEOUT')) throw e;
      quiescent = false;
      errors.push((e as Error).message);
    }
    const quiescenceMs = Math.round(performance.now() - quiesceStarted);
    if (blind !== null) {
      // Quiescence says every notified change was processed, not that every run has ended: a run
      // whose commit lost to another run's on the same change waits (up to 100 ms) before its
      // re-check, holding no notification and taking no timestamp. Started after the changes
      // below, that re-check would find one of them unprocessed and run on it. So wait for a
      // report from every worker, sent after quiescence, with nothing queued or running.
      await workersIdle(live, opts.quiescenceTimeoutMs ?? 60_000);
      const theBlind = blind;
      const victims = keys.slice(0, opts.sabotageUnnotifiedChanges);
      for (const row of victims) {
        const id = `c${++changeSeq}`;
        await theBlind.transaction(async (tx) => tx.set(TABLE, row, VALUE, id));
        (changesOf.get(row) as string[]).push(id);
      }
      await db.waitForQuiescence({ tables: [TABLE], timeoutMs: opts.quiescenceTimeoutMs ?? 60_000 });
    }

    // --- stop the workers ----------------------------------------------------------------------
    respawn = false;
    for (const w of live) if (w.proc.connected) w.proc.send({ t: 'notify.stop' } satisfies NotifySupervisorMessage);
    // Workers still starting or restarting are in `allClosed` too.
    await awaitWorkersClosed(live, allClosed, watch, errors);
    await unlessGone(watch, Promise.all(servers.map((s) => s.idle())));
    for (const s of servers) s.detach();

    // --- read the final state and verify -----------------------------------------------------------
    const snap = await unlessGone(watch, theDb.snapshot());
    let records: RowRecord[];
    try {
      const values = await unlessGone(
        watch,
        snap.getMany(
          TABLE,
          keys.flatMap((k) => [
            { row: k, column: VALUE },
            { row: k, column: DELETED },
            { row: k, column: PROCESSED },
          ]),
        ),
      );
      records = keys.map((k, i) => ({
        row: k,
        changes: changesOf.get(k) as string[],
        final: changeSeen(values[3 * i], values[3 * i + 1]),
        log: decodeProcessed(cellText(values[3 * i + 2])),
      }));
    } finally {
      snap.release();
    }
    const verdict = verifyNotifyLogs(records);
    const notificationsLeft = await unlessGone(watch, countCells(store, TABLE, NOTIFY));
    const locksLeft = await unlessGone(watch, countCells(store, TABLE, LOCK));
    const workerMetrics = { ...ZERO };
    for (const m of finished)
      for (const k of Object.keys(ZERO) as (keyof NotifyWorkerMetrics)[]) (workerMetrics as Record<string, number>)[k] += m[k];
    const ok =
      verdict.missed === 0 &&
      verdict.duplicateCommits === 0 &&
      verdict.unknownEntries === 0 &&
      verdict.outOfOrder === 0 &&
      verdict.finalMismatches === 0 &&
      verdict.changes > 0 &&
      (!opts.crash || crashes > 0) &&
      quiescent &&
      notificationsLeft === 0 &&
      errors.length === 0;
    const result: NotifyResult = {
      ok,
      ...verdict,
      crashes,
      crashesAt,
      rows: rowCount,
      rowsChanged: records.filter((r) => r.changes.length > 0).length,
      writeFailures,
      squeezes,
      quiescent,
      quiescenceMs,
      notificationsLeft,
      locksLeft,
      workerMetrics,
      errors: errors.slice(0, 20),
      seconds: Math.round(activeSeconds * 100) / 100,
      workers: workerCount,
      store: url,
    };
    log(
      `done: ${verdict.changes} changes, ${verdict.processed} processed, ${verdict.missed} missed, ${verdict.duplicateCommits} duplicate commits, ${crashes} crashes`,
    );
    passed = ok;
    return result;
  } finally {
    reach?.stop();
    respawn = false;
    squeezeOver = true;
    await squeezing; // the limit is unlimited again
    for (const w of live) w.proc.kill('SIGKILL');
    await closeCheckHandles(reach, [blind, db], [oracle, store]);
    await scratch?.dispose(passed);
  }
}

/** Cells of `family` left in `table`, read raw from the store. */
async function countCells(store: Store, table: string, family: string): Promise<number> {
  let n = 0;
  try {
    for await (const row of store.readRows(table, { filter: { familyNameRegexFilter: family } })) n += row.cells.length;
  } catch (e) {
    if (isStoreError(e, 'TABLE_NOT_FOUND')) return 0;
    throw e;
  }
  return n;
}

/** A change whose commit, settled after a full disk, did not take effect. */
class NotCommitted extends Error {}
