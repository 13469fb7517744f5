/**
 * A worker process of `percolator check notify` (started by notify.ts as
 * `node dist/check/notify-worker.js CONFIG_JSON` with an advanced-serialization IPC channel).
 *
 * It opens Percolator on the supervisor's store (served over IPC, or opened directly for
 * `bigtable://` stores) with timestamps from the supervisor's oracle server, and runs the real
 * worker (`db.worker()`: scanners, advisory locks, the ack protocol of run-observer.ts) with one
 * observer on `c:value` that appends the value it read to the row's `c:processed` log in its own
 * transaction. With crashes enabled it arms, after a random delay, one protocol point of the
 * observer's commit and SIGKILLs itself the next time a commit reaches it (the supervisor also
 * kills workers at random moments).
 *
 * Invariants:
 * - The observer only reads and buffers; its one write (the log) commits atomically with the ack
 *   or not at all, so the log lists exactly the observer's commits (notify-protocol.ts).
 * - Nothing here decides correctness: the supervisor verifies the logs in the store.
 * - Each process has its own in-process advisory lock service, so workers of different processes
 *   really do race on the same notifications; only the ack protocol keeps them from committing twice.
 */

import { isStoreError } from '../store/errors.js';
import type { Worker } from '../notify/worker.js';
import { OracleClient } from '../oracle/client.js';
import { workerOracleTimeoutMs } from './worker-oracle-timeout.js';
import { whileOutOfReach } from '../store/while-out-of-reach.js';
import { Percolator } from '../txn/percolator.js';
import type { ProtocolPoint } from '../txn/transaction.js';
import { openWorkerStore, sendToSupervisor } from './worker-channel.js';
import { codeOf, failureMessage } from './worker-failure.js';
import {
  CRASH_POINTS,
  decodeProcessed,
  METRICS_REPORT_MS,
  type NotifyCrashPoint,
  type NotifySupervisorMessage,
  type NotifyWorkerConfig,
  type NotifyWorkerMessage,
  type NotifyWorkerMetrics,
  DELETED,
  OBSERVER,
  PROCESSED,
  TABLE,
  VALUE,
  changeSeen,
  cellText,
} from './notify-protocol.js';

const send = (m: NotifyWorkerMessage): Promise<void> => sendToSupervisor(m);

function metricsOf(w: Worker): NotifyWorkerMetrics {
  const m = w.metrics;
  return {
    runs: m.runs,
    commits: m.commits,
    skipped: m.skipped,
    conflicts: m.conflicts,
    failures: m.failures,
    parked: m.parked,
    cleared: m.cleared,
    rowsScanned: m.scanner.rowsScanned,
    jumps: m.scanner.jumps,
  };
}

async function main(): Promise<void> {
  const text = process.argv[2];
  if (text === undefined) throw new Error('usage: notify-worker CONFIG_JSON');
  const cfg = JSON.parse(text) as NotifyWorkerConfig;
  let stopRequested: () => void = () => undefined;
  const stop = new Promise<void>((r) => {
    stopRequested = r;
  });
  let armed: NotifyCrashPoint | null = null;
  let calm = false;
  process.on('message', (m: NotifySupervisorMessage) => {
    if (m?.t === 'notify.stop') stopRequested();
    if (m?.t === 'notify.calm') {
      calm = true;
      armed = null;
    }
  });
  // The supervisor is gone: nobody verifies anything any more.
  process.on('disconnect', () => process.exit(2));

  const onProtocolPoint = (point: ProtocolPoint): Promise<void> | undefined => {
    if (armed === null || point !== armed) return undefined;
    armed = null;
    return send({ t: 'notify.crash', point }).then(() => {
      process.kill(process.pid, 'SIGKILL');
      return new Promise<void>(() => undefined);
    });
  };

  const store = await openWorkerStore(cfg.storeUrl);
  const oracle = new OracleClient({ host: cfg.oracleHost, port: cfg.oraclePort, timeoutMs: workerOracleTimeoutMs(cfg.storeUrl) });
  const db = await whileRefused(cfg.fullDisk, () =>
    Percolator.open({
      store,
      oracle,
      leaseMs: cfg.leaseMs,
      lockTtlMs: cfg.lockTtlMs,
      onProtocolPoint: cfg.crash === null ? undefined : onProtocolPoint,
    }),
  );
  const worker = db.worker({
    threads: cfg.threads,
    scanners: cfg.scanners,
    // Short advisory locks: a killed process's row locks live in its own memory anyway.
    rowLockTtlMs: 5_000,
    log: (m, e) => process.stderr.write(`notify-worker ${cfg.incarnation}: ${m} ${e instanceof Error ? e.message : String(e ?? '')}\n`),
  });
  worker.observe(
    VALUE,
    OBSERVER,
    async (tx, row) => {
      const [value, deleted, processed] = await tx.getMany(
        TABLE,
        [VALUE, DELETED, PROCESSED].map((column) => ({ row, column })),
      );
      const log = decodeProcessed(cellText(processed));
      if (cfg.observerDelayMs > 0) await new Promise((r) => setTimeout(r, Math.random() * cfg.observerDelayMs));
      log.push(changeSeen(value, deleted) ?? '');
      tx.set(TABLE, row, PROCESSED, JSON.stringify(log));
    },
    { table: TABLE },
  );
  await whileRefused(cfg.fullDisk, () => worker.start());
  await send({ t: 'notify.ready' });
  if (cfg.crash !== null) {
    const delay = cfg.crash.armMinMs + Math.random() * (cfg.crash.armMaxMs - cfg.crash.armMinMs);
    setTimeout(() => {
      if (!calm) armed = CRASH_POINTS[Math.floor(Math.random() * CRASH_POINTS.length)] as NotifyCrashPoint;
    }, delay).unref();
  }
  const reporter = setInterval(() => void send({ t: 'notify.metrics', metrics: metricsOf(worker), busy: worker.busy }), METRICS_REPORT_MS);

  await stop;
  clearInterval(reporter);
  armed = null;
  await worker.stop();
  const metrics = metricsOf(worker);
  // Closing gives up the liveness lease (a store write), which a store refusing writes fails: the lease lapses.
  await db.close().catch((e: unknown) => {
    if (!isStoreError(e, 'IO_ERROR')) throw e;
  });
  await oracle.close();
  await store.close();
  // IPC is ordered: once this one is handed to the OS, every earlier message is too.
  await send({ t: 'notify.stopped', metrics });
  process.exit(0);
}

/**
 * `start()`; with `fullDisk`, again every 50 ms while it fails with IO_ERROR, for up to 60 s: a
 * store on a disk that filled up refuses the liveness lease's write until it resumes.
 */
function whileRefused<T>(fullDisk: boolean, start: () => Promise<T>): Promise<T> {
  return fullDisk ? whileOutOfReach(start, { forMs: 60_000, firstPauseMs: 50, maxPauseMs: 50 }) : start();
}

main().catch(async (e: unknown) => {
  // A typed error (IO_ERROR: the store out of reach) reports its message only (worker-failure.ts).
  const message = failureMessage(e);
  process.stderr.write(`notify-worker: ${codeOf(e)}: ${message}\n`);
  await send({ t: 'notify.error', code: codeOf(e), message });
  process.exit(1);
});
