/**
 * `percolator check bank [--crash]`: the proof that Percolator transactions give snapshot
 * isolation across rows under crashes (DESIGN §9: `accounts`, `transfers`, `committed`,
 * `crashes`, `totalBefore`, `totalAfter`, `anomalies`, `locksLeft`).
 *
 * How (and why it cannot pass by accident):
 * - The supervisor (this module) opens the one store (a `file:` store admits one process), loads
 *   N accounts, runs the timestamp oracle in process and serves it over TCP (a `bigtable://`
 *   deployment's own oracle instead, when it has one: check-oracle.ts), and serves the store
 *   to W worker processes over their IPC channels (ipc-store.ts). Workers (bank-worker.ts) run
 *   random transfers through the real transaction layer; they see real store and oracle
 *   latencies and real failures.
 * - With `crash`, workers SIGKILL themselves at the four protocol points of the commit (after the
 *   primary prewrite, mid secondary prewrites, right after the primary commit, mid secondary
 *   commits) and the supervisor SIGKILLs random workers at random moments, topping the rate up to
 *   a floor when self-kills fall behind (never killing a worker that has not had time to work).
 *   Spare workers wait fully opened, so a dead worker is replaced at once (process start-up is
 *   most of a short worker life). A crash counts only when the child actually exited by SIGKILL.
 * - Leases are short (500 ms): with crashes every half second on a few accounts, a dead worker's
 *   locks must become resolvable quickly or most accounts stay locked by the dead.
 * - Every attempt is recorded before it commits (bank-protocol.ts), snapshot readers in the
 *   supervisor read every account in one snapshot all along (they also resolve dead workers'
 *   locks), and at the end, after the workers stopped and every request they sent was served,
 *   the supervisor reads the final state through fresh snapshots until no lock cell is left (or a
 *   deadline passes; leftover locks are reported, not hidden).
 * - With `fullDisk` (a `file:` store; needs util-linux `prlimit`), the supervisor, which owns the
 *   store, squeezes its own file-size limit again and again while transfers run (squeeze.ts), so
 *   the store's writes fail part-way as on a full disk, refuse writes, keep their deferred ones,
 *   and resume (asked to at once when the room is back). Workers take the IO_ERRORs as transfers
 *   that committed nothing — the claim the history checker then puts to the test; readers and GC
 *   passes that meet one (a scan waiting for writing to resume) are counted, not failed.
 * - The history checker (history.ts) then infers each account's version order from the logs and
 *   reports G0, G1a, G1b, G1c, G-single, lost updates, incompatible orders and sums that do not
 *   add up. `totalAfter` is the final snapshot's sum. The check fails (`ok: false`) on any
 *   anomaly, any lock left, a total that moved, a worker that failed, or no committed transfer.
 * - A store another process serves (`bigtable://`) that stays out of reach for `outageMs` (the
 *   server stopped) ends the check at once with STORE_OUT_OF_REACH (store-reach.ts): whatever
 *   phase it is in, the workers are killed and nothing more is waited for. There is no verdict
 *   without the final read, and waiting only stacked up timeouts (restarted workers failing to
 *   start for the whole run, then minutes).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BANK_TABLE, refuseStoreInUse } from './check-store.js';
import { type CheckOracle, openCheckOracle } from './check-oracle.js';
import { isStoreError } from '../store/errors.js';
import { openStore } from '../store/open-store.js';
import { atomicRowsOf, type Store } from '../store/store.js';
import { isTxnError } from '../txn/errors.js';
import { LOCK } from '../txn/layout.js';
import { Percolator } from '../txn/percolator.js';
import {
  accountKey,
  BALANCE,
  type CrashPoint,
  decodeBalance,
  decodeLog,
  encodeLog,
  LOG,
  type SupervisorMessage,
  version,
  type WorkerConfig,
  type WorkerMessage,
} from './bank-protocol.js';
import { type Anomaly, checkHistory, type HistoryTxn, type Outcome, type Version } from './history.js';
import { type StoreServer, serveStoreOverIpc } from './ipc-store.js';
import { hasPrlimit, squeezeOwnStore } from './squeeze.js';
import { scratchDir } from './scratch-dir.js';
import { awaitWorkersClosed } from './await-workers.js';
import { closeCheckHandles, type StoreOutOfReachError, type StoreReach, watchServedStore } from './store-reach.js';

export interface BankOptions {
  /** How long transfers run (seconds). */
  readonly seconds: number;
  /** Kill workers (self-kills at protocol points and supervisor kills); false: no kills. */
  readonly crash: boolean;
  /** Store URL. Default: `file:` in a fresh temporary directory, removed when the check passes. */
  readonly store?: string;
  /** Accounts (default 10). */
  readonly accounts?: number;
  /** Worker processes (default 3). */
  readonly workers?: number;
  /** Concurrent transfer loops per worker (default 2). */
  readonly concurrency?: number;
  /** Initial balance of each account (default 100). */
  readonly initialBalance?: number;
  /** Largest amount of one transfer (default: the initial balance). */
  readonly maxAmount?: number;
  /** Ids kept in each account's log value (default 16; the history checker needs ≥ 1). */
  readonly tailLength?: number;
  /**
   * Liveness lease of the workers and the supervisor (default 500 ms): how soon a dead worker's
   * locks can be rolled back. With two crashes a second on ten accounts, a 1 s lease keeps a good
   * part of the accounts locked by dead workers at any time and progress collapses.
   */
  readonly leaseMs?: number;
  /** Workers' lock TTL (default 3000 ms). */
  readonly lockTtlMs?: number;
  /** Workers' wait on a live lock before KEY_LOCKED (default 2000 ms). */
  readonly lockWaitMs?: number;
  /** A worker arms its self-kill after a delay drawn from this range (default [300, 1200] ms). */
  readonly selfKillArmMs?: readonly [number, number];
  /** Mean time between supervisor kills of a random worker (default 1500 ms; exponential). */
  readonly supervisorKillMeanMs?: number;
  /**
   * The crash rate the supervisor keeps up by killing random workers when self-kills fall behind
   * (default 2.2/s, i.e. 66 per 30 s; the issue asks for at least 50). Self-kills depend on how
   * fast commits reach the armed protocol point, which depends on the machine's load.
   */
  readonly minCrashesPerSecond?: number;
  /**
   * With `crash`: keep running past `seconds` (up to `maxSeconds`) until this many crashes
   * happened. Default 0; the CLI asks for the issue's 50 per 30 s.
   */
  readonly minCrashes?: number;
  /** The longest a run may go on for `minCrashes` or its first acknowledged transfer (default 3 × seconds). */
  readonly maxSeconds?: number;
  /** Idle spare workers kept ready to replace dead ones (default 2 with crashes). */
  readonly standbys?: number;
  /**
   * Version GC during the run (ms; default 0 = off): the supervisor runs a full pass
   * (`collectGarbage`) this often, concurrently with the transfers, the crashes and the readers,
   * and every worker runs background GC (targeted passes) at this interval. The readers and the
   * history checker then also prove GC never collects a version someone can still read.
   */
  readonly gcIntervalMs?: number;
  /** Pause between snapshot reads (default 50 ms). */
  readonly readerPauseMs?: number;
  /** Deadline for resolving every lock at the end (default 30 000 ms). */
  readonly finalTimeoutMs?: number;
  /** Most anomalies listed in the result (the total is in `anomaliesTotal`). Default 50. */
  readonly maxAnomalies?: number;
  /**
   * For a store another process serves (`bigtable://`): how long it may stay out of reach (no
   * answer to the supervisor's probe) before the check ends with STORE_OUT_OF_REACH (default
   * 10 000 ms; store-reach.ts). A server restarting, or connections reset, take less.
   */
  readonly outageMs?: number;
  /** Squeeze the supervisor's file-size limit at random moments, as a disk filling up and emptying (`file:` only). */
  readonly fullDisk?: boolean;
  /** Progress lines. */
  readonly log?: (line: string) => void;
  /**
   * Wraps the store the workers are served (not the one the supervisor reads): tests inject faults
   * with it to prove the check fails when the store misbehaves.
   */
  readonly workerStore?: (store: Store) => Store;
  /**
   * For a `bigtable://` store: the URL the workers open instead of `store` (the supervisor keeps
   * `store`). Tests put a proxy that drops connections in between.
   */
  readonly workerStoreUrl?: string;
}

export interface BankResult {
  readonly ok: boolean;
  readonly accounts: number;
  /** Commit attempts (each recorded before it committed). */
  readonly transfers: number;
  /** Attempts that committed: acknowledged ones plus indeterminate ones proven committed. */
  readonly committed: number;
  /** Attempts known not to have committed. */
  readonly failed: number;
  /** Indeterminate attempts (their worker died) not proven committed: rolled back or never reached the commit point. */
  readonly indeterminate: number;
  /** Indeterminate attempts the history proves committed. */
  readonly indeterminateCommitted: number;
  /** Workers that died by SIGKILL while transfers ran. */
  readonly crashes: number;
  /** Crashes by where they happened: the four protocol points (self-kills) and `random` (supervisor kills). */
  readonly crashesAt: Record<string, number>;
  readonly totalBefore: number;
  readonly totalAfter: number;
  /** History checker findings (at most `maxAnomalies`; the first of each kind always included). */
  readonly anomalies: Anomaly[];
  readonly anomaliesTotal: number;
  /** Findings by kind (G0, G1a, G1b, G1c, G-single, lost-update, lost-write, incompatible-order, garbage-read, sum, malformed). */
  readonly anomalyCounts: Record<string, number>;
  readonly locksLeft: number;
  /** Snapshot reads recorded (each of every account, checked for the sum and the history). */
  readonly snapshots: number;
  /** Snapshot reads that gave up on a live lock (KEY_LOCKED) and were not recorded. */
  readonly snapshotsBlocked: number;
  /** With fullDisk: how often the store's file-size limit was lowered, and the snapshot reads and GC passes that met a refusal. */
  readonly squeezes: number;
  readonly snapshotsRefused: number;
  /** Dependency cycles that need two or more anti-dependencies (write skew; legal under SI). */
  readonly g2Cycles: number;
  /** Workers that failed (exit code ≠ 0 without being killed) and errors of the supervisor's readers. */
  readonly errors: string[];
  /** With `gcIntervalMs`: the supervisor's full GC passes and the versions they collected. */
  readonly gc: { readonly intervalMs: number; readonly fullPasses: number; readonly versionsCollected: number };
  readonly seconds: number;
  readonly workers: number;
  readonly store: string;
}

/** The compiled worker: next to this file in dist/, or in dist/ when running from src/ (tests). */
export function bankWorkerScript(): string {
  const candidates = [
    fileURLToPath(new URL('./bank-worker.js', import.meta.url)),
    fileURLToPath(new URL('../../dist/check/bank-worker.js', import.meta.url)),
  ];
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined) throw new Error(`bank-worker.js not found (looked in ${candidates.join(', ')}): run npm run build`);
  return found;
}

const TABLE = BANK_TABLE;

/**
 * A send to a worker that died after the `connected` check fails with EPIPE; without a callback
 * that becomes an unhandled 'error' event. The death itself is handled by the 'close' listener.
 */
const ignoreSendError = (): void => undefined;

/** Waiting is the point here (kill schedule, reader pacing, polling another process's state). */
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface WorkerHandle {
  readonly proc: ChildProcess;
  readonly incarnation: number;
  readonly server: StoreServer;
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  ready: boolean;
  /** Running transfers (false while it is the standby). */
  active: boolean;
  /** When it became ready and active (performance.now()); null before. */
  activeSince: number | null;
  crashPoint: CrashPoint | null;
  killedBySupervisor: boolean;
  error: string | null;
  stderr: string;
}

interface Attempt {
  readonly id: string;
  readonly reads: Record<string, Version>;
  readonly writes: Record<string, Version>;
  outcome: Outcome;
}

export async function runBankCheck(opts: BankOptions): Promise<BankResult> {
  const log = opts.log ?? (() => undefined);
  const accounts = opts.accounts ?? 10;
  const workerCount = opts.workers ?? 3;
  const initialBalance = opts.initialBalance ?? 100;
  const tailLength = opts.tailLength ?? 16;
  const maxAnomalies = opts.maxAnomalies ?? 50;
  if (!Number.isSafeInteger(accounts) || accounts < 2)
    throw Object.assign(new Error('check bank needs at least 2 accounts'), { code: 'INVALID_ARGUMENT' });
  if (!Number.isSafeInteger(workerCount) || workerCount < 1)
    throw Object.assign(new Error('check bank needs at least 1 worker'), { code: 'INVALID_ARGUMENT' });
  if (!Number.isSafeInteger(tailLength) || tailLength < 1)
    throw Object.assign(new Error('the log tail must keep at least 1 id'), { code: 'INVALID_ARGUMENT' });
  const script = bankWorkerScript();

  const fullDisk = opts.fullDisk === true;
  if (fullDisk && opts.store !== undefined && !opts.store.startsWith('file:'))
    throw Object.assign(new Error(`check bank --full-disk squeezes a file: store (got ${opts.store})`), { code: 'INVALID_ARGUMENT' });
  if (fullDisk && !(await hasPrlimit()))
    throw Object.assign(new Error('check bank --full-disk needs prlimit (util-linux)'), { code: 'NO_PRLIMIT' });
  // Only once every refusal is past: a refused check leaves no empty directory behind.
  const scratch = opts.store === undefined ? await scratchDir('bank') : null;
  const url = opts.store ?? `file:${scratch?.path}`;
  let store = await openStore(url);
  let oracle: CheckOracle | null = null;
  let db: Percolator | null = null;
  const live = new Set<WorkerHandle>();
  /** Ends the full-disk squeeze however the run ends (this process's own file-size limit). */
  let squeezeOver = false;
  let squeezing: Promise<number> = Promise.resolve(0);
  let passed = false;
  let reach: StoreReach | null = null;
  try {
    await refuseStoreInUse(store, url);
    oracle = await openCheckOracle(store);
    const oracleAt = { host: oracle.host, port: oracle.port }; // the workers' (fixed for the run)
    const leaseMs = opts.leaseMs ?? 500;
    // The supervisor's lease also sets how long its readers cache "owner alive" answers (lease / 10).
    db = await Percolator.open({ store, oracle: oracle.source, leaseMs });
    let theDb = db;
    const servedStore = opts.workerStore?.(store) ?? store;

    // --- a fresh bank -------------------------------------------------------------------------
    if ((await store.listTables()).includes(TABLE)) await store.deleteTable(TABLE);
    await db.createTable(TABLE);
    const initialLog = { n: 0, tail: [] as string[] };
    const initial: Record<string, Version> = {};
    for (let from = 0; from < accounts; from += 100) {
      await db.transaction(async (tx) => {
        for (let i = from; i < Math.min(accounts, from + 100); i++) {
          tx.set(TABLE, accountKey(i), BALANCE, String(initialBalance));
          tx.set(TABLE, accountKey(i), LOG, encodeLog(initialLog));
        }
      });
    }
    for (let i = 0; i < accounts; i++) initial[accountKey(i)] = version(initialLog, initialBalance);
    const totalBefore = accounts * initialBalance;
    const keys = Array.from({ length: accounts }, (_, i) => accountKey(i));

    // --- a served store that goes away ends the check -------------------------------------------
    // Without this, workers failing to start were restarted for as long as the run lasted, and
    // every wait (worker start, readers, commits, the stop) timed out on its own: minutes for a
    // check that could only fail. Only a store another process serves can go away under it.
    const probed = store;
    reach = watchServedStore(url, () => probed.readRow(TABLE, Buffer.from(accountKey(0))), { outageMs: opts.outageMs, what: 'check bank' });
    const watch = reach;
    const gone = (): StoreOutOfReachError | null => watch?.lost() ?? null;

    // --- workers ------------------------------------------------------------------------------
    const attempts = new Map<string, Attempt>();
    const errors: string[] = [];
    const crashesAt: Record<string, number> = {};
    let crashes = 0;
    let acknowledged = 0;
    let startFailures = 0;
    let incarnations = 0;
    let running = true;
    const servers: StoreServer[] = [];
    const allClosed: Promise<unknown>[] = [];

    const onMessage = (w: WorkerHandle, m: WorkerMessage): void => {
      switch (m.t) {
        case 'bank.ready':
          w.ready = true;
          if (w.active) w.activeSince = performance.now();
          break;
        case 'bank.invoke':
          attempts.set(m.id, { id: m.id, reads: m.reads, writes: m.writes, outcome: 'info' });
          break;
        case 'bank.ok':
        case 'bank.fail': {
          const a = attempts.get(m.id);
          if (a === undefined) errors.push(`worker ${w.incarnation} reported ${m.t} for ${m.id}, which it never invoked`);
          else {
            a.outcome = m.t === 'bank.ok' ? 'ok' : 'fail';
            if (a.outcome === 'ok') acknowledged++;
          }
          break;
        }
        case 'bank.info':
          break; // stays indeterminate
        case 'bank.crash':
          w.crashPoint = m.point;
          break;
        case 'bank.error':
          w.error = `${m.code}: ${m.message.split('\n').slice(0, 6).join(' | ')}`;
          break;
        case 'bank.stopped':
          break;
      }
    };

    /**
     * With crashes, spare workers are kept open and idle, so a dead one is replaced at once:
     * starting a Node process and loading the modules is most of a short worker life.
     */
    const standbys: WorkerHandle[] = [];
    const standbyCount = opts.crash ? (opts.standbys ?? 2) : 0;
    const spawnWorker = (asStandby: boolean): WorkerHandle => {
      const incarnation = ++incarnations;
      const cfg: WorkerConfig = {
        table: TABLE,
        accounts,
        incarnation,
        storeUrl: opts.workerStoreUrl ?? url,
        oracleHost: oracleAt.host,
        oraclePort: oracleAt.port,
        concurrency: opts.concurrency ?? 2,
        crash: opts.crash ? { armMinMs: opts.selfKillArmMs?.[0] ?? 300, armMaxMs: opts.selfKillArmMs?.[1] ?? 1200 } : null,
        leaseMs,
        lockTtlMs: opts.lockTtlMs ?? 3000,
        lockWaitMs: opts.lockWaitMs ?? 2000,
        tailLength,
        gcIntervalMs: opts.gcIntervalMs ?? 0,
        maxAmount: opts.maxAmount ?? initialBalance,
        standby: asStandby,
      };
      const proc = fork(script, [JSON.stringify(cfg)], { serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
      // bigtable:// workers open the store themselves; every other store is served from here.
      const served = serveStoreOverIpc(servedStore, proc);
      servers.push(served);
      const w: WorkerHandle = {
        proc,
        incarnation,
        server: served,
        closed: new Promise((res) => proc.once('close', (code, signal) => res({ code, signal }))),
        ready: false,
        active: !asStandby,
        activeSince: null,
        crashPoint: null,
        killedBySupervisor: false,
        error: null,
        stderr: '',
      };
      live.add(w);
      proc.stderr?.on('data', (d: Buffer) => {
        // The start of the output names the error; keep it.
        if (w.stderr.length < 4000) w.stderr = (w.stderr + d.toString()).slice(0, 4000);
      });
      proc.on('message', (m: WorkerMessage) => onMessage(w, m));
      allClosed.push(
        w.closed.then(({ code, signal }) => {
          live.delete(w);
          if (signal === 'SIGKILL' && (running || w.killedBySupervisor || w.crashPoint !== null)) {
            crashes++;
            const where = w.crashPoint ?? 'random';
            crashesAt[where] = (crashesAt[where] ?? 0) + 1;
          } else if (code !== 0 && !w.ready && ++startFailures <= 5) {
            // It died before it could record anything (e.g. dist/ being rebuilt under it): retry a few times.
            log(`worker ${incarnation} failed to start: ${w.error ?? w.stderr.trim().split('\n').slice(0, 4).join(' | ')}`);
          } else if (code !== 0) {
            errors.push(
              `worker ${incarnation} exited with ${signal ?? `code ${code}`}: ${w.error ?? (w.stderr.trim().split('\n').slice(0, 6).join(' | ') || 'no output')}`,
            );
          }
          if (!running) return;
          if (errors.length > 20) {
            running = false;
            return;
          }
          const spare = standbys.indexOf(w);
          if (spare >= 0) standbys.splice(spare, 1);
          else if (standbys.length > 0) {
            // The first ready spare, else the oldest (the closest to ready).
            const at = Math.max(
              0,
              standbys.findIndex((x) => x.ready),
            );
            const promoted = standbys.splice(at, 1)[0] as WorkerHandle;
            promoted.active = true;
            if (promoted.ready) promoted.activeSince = performance.now();
            if (promoted.proc.connected) promoted.proc.send({ t: 'bank.go' } satisfies SupervisorMessage, ignoreSendError);
          } else spawnWorker(false);
          while (standbys.length < standbyCount) standbys.push(spawnWorker(true));
        }),
      );
      return w;
    };
    const first = Array.from({ length: workerCount }, () => spawnWorker(false));
    // The clock starts when the first workers can transfer: `seconds` (and the crash rate) is
    // transfer time, not the time Node takes to start W processes on a busy machine.
    const startDeadline = performance.now() + 60_000;
    while (first.some((w) => !w.ready && live.has(w)) && running && gone() === null && performance.now() < startDeadline) await sleep(10);
    const goneAtStart = gone();
    if (goneAtStart !== null) {
      running = false;
      throw goneAtStart;
    }
    if (first.some((w) => !w.ready && live.has(w))) {
      errors.push('the first workers did not become ready within 60 s');
      running = false;
    }
    while (standbys.length < standbyCount) standbys.push(spawnWorker(true));
    const runStarted = performance.now();

    // --- supervisor kills -----------------------------------------------------------------------
    const killer = (async () => {
      if (!opts.crash) return;
      const mean = opts.supervisorKillMeanMs ?? 1500;
      const floor = opts.minCrashesPerSecond ?? 2.2;
      const minLifeMs = 2000;
      let nextRandom = performance.now() - Math.log(1 - Math.random()) * mean;
      while (running) {
        await sleep(50);
        const now = performance.now();
        // Kills under way (sent, or announced by a worker at a crash point) count as crashes already.
        let underway = 0;
        for (const w of live) if (w.killedBySupervisor || w.crashPoint !== null) underway++;
        const behind = crashes + underway < floor * ((now - runStarted) / 1000) - 1;
        const random = now >= nextRandom;
        if (!running || (!random && !behind)) continue;
        if (random) nextRandom = now - Math.log(1 - Math.random()) * mean;
        // Catching up never kills a worker that has not had time to work: that would trade the
        // check's progress for its crash count.
        const minLife = random ? 0 : minLifeMs;
        const ready = [...live].filter(
          (w) => w.active && w.activeSince !== null && now - w.activeSince >= minLife && w.crashPoint === null && !w.killedBySupervisor,
        );
        if (ready.length === 0) continue;
        const victim = ready[Math.floor(Math.random() * ready.length)] as WorkerHandle;
        victim.killedBySupervisor = true;
        victim.proc.kill('SIGKILL');
      }
    })();

    // --- snapshot readers ---------------------------------------------------------------------------
    const readOnly: HistoryTxn[] = [];
    let snapshotsBlocked = 0;
    let snapshotsRefused = 0;
    /** A refusal of the squeezed store (fullDisk): expected, counted. */
    const refusal = (e: unknown): boolean => {
      // The refusal may sit a few causes deep (GC_INCOMPLETE ← a lock resolution ← IO_ERROR).
      for (let c = e, depth = 0; fullDisk && c !== null && c !== undefined && depth < 5; c = (c as { cause?: unknown }).cause, depth++) {
        if (isStoreError(c, 'IO_ERROR')) return true;
      }
      return false;
    };
    /** Every account in one snapshot: one scan (locks met are resolved by the snapshot read). */
    const readAll = async (): Promise<Record<string, Version>> => {
      const snap = await theDb.snapshot();
      try {
        const out: Record<string, Version> = {};
        for await (const r of snap.scan(TABLE, {}, { columns: [BALANCE, LOG] })) {
          const k = Buffer.from(r.row).toString('utf8');
          const bal = r.columns.get(BALANCE);
          const lg = r.columns.get(LOG);
          if (bal === undefined || lg === undefined) throw new Error(`account ${k} is incomplete at snapshot ${snap.startTs}`);
          out[k] = version(decodeLog(Buffer.from(lg).toString('utf8')), decodeBalance(Buffer.from(bal).toString('utf8')));
        }
        const missing = keys.filter((k) => out[k] === undefined);
        if (missing.length > 0 || Object.keys(out).length !== keys.length) {
          throw new Error(
            `snapshot ${snap.startTs} holds ${Object.keys(out).length} accounts, expected ${keys.length} (missing: ${missing.slice(0, 5).join(', ')})`,
          );
        }
        return out;
      } finally {
        snap.release();
      }
    };
    const reader = (async () => {
      while (running) {
        try {
          const reads = await readAll();
          readOnly.push({ id: `S${readOnly.length + 1}`, outcome: 'ok', reads, writes: {}, readOnly: true });
        } catch (e) {
          if (isTxnError(e, 'KEY_LOCKED')) snapshotsBlocked++;
          else if (refusal(e)) snapshotsRefused++;
          else {
            errors.push(`snapshot reader: ${(e as Error).message}`);
            if (errors.length > 20) running = false;
          }
        }
        await sleep(opts.readerPauseMs ?? 50);
      }
    })();

    // --- full GC passes ------------------------------------------------------------------------------
    let gcPasses = 0;
    let versionsCollected = 0;
    const gcIntervalMs = opts.gcIntervalMs ?? 0;
    const collector = (async () => {
      while (running && gcIntervalMs > 0) {
        try {
          const r = await theDb.collectGarbage();
          gcPasses++;
          versionsCollected += r.versionsRemoved;
        } catch (e) {
          if (!refusal(e)) {
            errors.push(`GC pass: ${(e as Error).message}`);
            if (errors.length > 20) running = false;
          }
        }
        await sleep(gcIntervalMs);
      }
    })();

    // --- a disk that fills up and empties (fullDisk) -------------------------------------------------
    const atomic = atomicRowsOf(store);
    const squeezer = (squeezing = fullDisk ? squeezeOwnStore(url, store, () => squeezeOver || !running) : Promise.resolve(0));

    // --- run, then stop everything -----------------------------------------------------------------
    const runUntil = runStarted + opts.seconds * 1000;
    // With a crash quota, run on past `seconds` until it is met (the durability check does the
    // same), up to three times as long: a starved machine starts processes slowly. Likewise until
    // one transfer was acknowledged: on a starved machine, workers killed every second or so can
    // spend a short run starting up, and a run that committed nothing proves nothing (it fails).
    const minCrashes = opts.crash ? (opts.minCrashes ?? 0) : 0;
    const hardUntil = runStarted + (opts.maxSeconds ?? opts.seconds * 3) * 1000;
    const more = (): boolean =>
      performance.now() < runUntil || ((crashes < minCrashes || acknowledged === 0) && performance.now() < hardUntil);
    let lastLog = performance.now();
    while (running && more() && gone() === null) {
      // Past `seconds`, waiting on a quota: poll at 50 ms, not in a 1 ms loop.
      const left = runUntil - performance.now();
      await sleep(left > 0 ? Math.min(250, left) : 50);
      if (performance.now() - lastLog >= 2000) {
        lastLog = performance.now();
        let ok = 0;
        for (const a of attempts.values()) if (a.outcome === 'ok') ok++;
        log(
          `${Math.round((performance.now() - runStarted) / 1000)} s: ${attempts.size} transfers, ${ok} acknowledged, ${crashes} crashes, ${readOnly.length} snapshots`,
        );
      }
    }
    running = false;
    // The readers and workers need the store no more than the verdict does: nothing is awaited (the
    // finally kills the workers and closes the rest, which ends the readers' last calls).
    const goneInRun = gone();
    if (goneInRun !== null) throw goneInRun;
    const activeSeconds = (performance.now() - runStarted) / 1000;
    await killer;
    await reader;
    await collector;
    const squeezes = await squeezer;
    // The room is back: the final reads and the lock resolution need a store that takes writes.
    if (fullDisk) {
      const still = await atomic?.resumeWrites();
      if (still !== null && still !== undefined) errors.push(`the store did not resume writing: ${still.message}`);
    }
    for (const w of live) if (w.proc.connected) w.proc.send({ t: 'bank.stop' } satisfies SupervisorMessage, ignoreSendError);
    // Workers still starting or restarting are in `allClosed` too.
    await awaitWorkersClosed(live, allClosed, watch, errors);
    // Every request a worker sent before it died has been received; let them all finish.
    await Promise.all(servers.map((s) => s.idle()));
    for (const s of servers) s.detach();

    // --- a file: store is reopened: the final state is what is on disk, not what a cache remembers --
    if (url.startsWith('file:')) {
      // Its liveness lease's removal is a write: a store still refusing them is already an error above.
      await theDb.close().catch((e: unknown) => {
        if (!isStoreError(e, 'IO_ERROR')) throw e;
      });
      await oracle.close();
      await store.close();
      [db, oracle] = [null, null];
      store = await openStore(url);
      oracle = await openCheckOracle(store);
      db = await Percolator.open({ store, oracle: oracle.source, leaseMs });
      theDb = db;
    }

    // --- resolve every lock and read the final state -----------------------------------------------
    const finalDeadline = performance.now() + (opts.finalTimeoutMs ?? 30_000);
    let final: Record<string, Version> | null = null;
    let locksLeft = -1;
    for (;;) {
      const goneAtEnd = gone();
      if (goneAtEnd !== null) throw goneAtEnd;
      let read: Record<string, Version> | null = null;
      let broken = false;
      try {
        read = await readAll();
      } catch (e) {
        if (!isTxnError(e, 'KEY_LOCKED')) {
          errors.push(`final read: ${(e as Error).message}`);
          broken = true;
        }
      }
      locksLeft = await countLocks(store, TABLE);
      if (read !== null) final = read;
      if (broken || (read !== null && locksLeft === 0) || performance.now() > finalDeadline) break;
      // Dead workers' leases expire on their own clock: poll until they have (bounded by the deadline).
      await sleep(50);
    }
    if (final === null) {
      errors.push('the final state could not be read: accounts stayed locked past the deadline');
      final = {};
    }
    const totalAfter = Object.values(final).reduce((s, v) => s + (v.value ?? 0), 0);

    // --- check the history ------------------------------------------------------------------------
    const txns: HistoryTxn[] = [
      ...[...attempts.values()].map((a) => ({ id: a.id, outcome: a.outcome, reads: a.reads, writes: a.writes })),
      ...readOnly,
    ];
    const checked = checkHistory({ txns, final, initial, expectedTotal: totalBefore });
    let committed = 0;
    let failed = 0;
    let indeterminate = 0;
    for (const a of attempts.values()) {
      if (checked.committed.has(a.id)) committed++;
      else if (a.outcome === 'fail') failed++;
      else indeterminate++;
    }
    const anomalies = checked.anomalies;
    const anomalyCounts: Record<string, number> = {};
    for (const a of anomalies) anomalyCounts[a.type] = (anomalyCounts[a.type] ?? 0) + 1;
    // The first of each kind first, so a capped list still shows every kind found.
    const firsts = new Set(Object.keys(anomalyCounts).map((t) => anomalies.find((a) => a.type === t) as Anomaly));
    const listed = [...firsts, ...anomalies.filter((a) => !firsts.has(a))].slice(0, maxAnomalies);
    const ok = anomalies.length === 0 && locksLeft === 0 && totalAfter === totalBefore && errors.length === 0 && committed > 0;
    const result: BankResult = {
      ok,
      accounts,
      transfers: attempts.size,
      committed,
      failed,
      indeterminate,
      indeterminateCommitted: checked.stats.infoCommitted,
      crashes,
      crashesAt,
      totalBefore,
      totalAfter,
      anomalies: listed,
      anomaliesTotal: anomalies.length,
      anomalyCounts,
      locksLeft,
      snapshots: readOnly.length,
      snapshotsBlocked,
      squeezes,
      snapshotsRefused,
      g2Cycles: checked.stats.g2Cycles,
      errors: errors.slice(0, 20),
      gc: { intervalMs: gcIntervalMs, fullPasses: gcPasses, versionsCollected },
      seconds: Math.round(activeSeconds * 100) / 100,
      workers: workerCount,
      store: url,
    };
    log(
      `done: ${result.committed} committed of ${result.transfers}, ${crashes} crashes, ${anomalies.length} anomalies, ${locksLeft} locks left`,
    );
    passed = ok;
    return result;
  } finally {
    reach?.stop();
    squeezeOver = true;
    await squeezing; // the limit is unlimited again
    for (const w of live) w.proc.kill('SIGKILL');
    await closeCheckHandles(reach, [db], [oracle, store]);
    await scratch?.dispose(passed);
  }
}

/** Lock cells left in `table`, read raw from the store (no transaction layer in between). */
export async function countLocks(store: Store, table: string): Promise<number> {
  let n = 0;
  try {
    for await (const row of store.readRows(table, { filter: { familyNameRegexFilter: LOCK } })) n += row.cells.length;
  } catch (e) {
    if (isStoreError(e, 'TABLE_NOT_FOUND')) return 0;
    throw e;
  }
  return n;
}
