/**
 * A worker process of `percolator check bank` (started by bank.ts as
 * `node dist/check/bank-worker.js CONFIG_JSON` with an advanced-serialization IPC channel).
 *
 * It runs `concurrency` loops of random transfers between two distinct accounts through the
 * real transaction layer (`db.transaction`), with the store served by the supervisor over IPC
 * (or opened directly for `bigtable://` stores) and timestamps from the supervisor's oracle
 * server over TCP. With crashes enabled it arms, after a random delay, one of the four crash
 * points and SIGKILLs itself the next time a commit reaches it. A standby worker opens everything
 * and then waits for `bank.go`: the supervisor keeps one ready to replace the next dead worker.
 *
 * Invariants (see bank-protocol.ts for the message contract):
 * - `bank.invoke` is handed to the OS before the commit starts (we wait for the send callback),
 *   so a SIGKILL can never hide an attempt that might have committed.
 * - An attempt is reported `fail` only when the transaction layer re-ran the callback after a
 *   retryable error from the commit, or gave up with RETRIES_EXHAUSTED whose last attempt
 *   committed nothing: both are "nothing was committed" by contract (transaction.ts). Any other
 *   error during commit is `info`. The checker then verifies the contract instead of trusting it.
 * - Balances never go negative: the amount is drawn from [0, balance read].
 */
import { OracleClient } from '../oracle/client.js';
import { workerOracleTimeoutMs } from './worker-oracle-timeout.js';
import { isOracleError } from '../oracle/errors.js';
import { isTxnError } from '../txn/errors.js';
import { isStoreError } from '../store/errors.js';
import { whileOutOfReach } from '../store/while-out-of-reach.js';
import { Percolator } from '../txn/percolator.js';
import type { ProtocolPoint } from '../txn/transaction.js';
import {
  accountKey,
  BALANCE,
  CRASH_POINTS,
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
import type { Version } from './history.js';
import { openWorkerStore, sendToSupervisor } from './worker-channel.js';
import { codeOf, failureMessage } from './worker-failure.js';

let stopping = false;

const send = (m: WorkerMessage): Promise<void> => sendToSupervisor(m);

function randomInt(n: number): number {
  return Math.floor(Math.random() * n);
}

async function main(): Promise<void> {
  const text = process.argv[2];
  if (text === undefined) throw new Error('usage: bank-worker CONFIG_JSON');
  const cfg = JSON.parse(text) as WorkerConfig;
  let go!: () => void;
  const started = new Promise<void>((resolve) => {
    go = resolve;
  });
  process.on('message', (m: SupervisorMessage) => {
    if (m?.t === 'bank.stop') {
      stopping = true;
      go();
    } else if (m?.t === 'bank.go') go();
  });
  if (!cfg.standby) go();
  // The supervisor is gone: nobody records the history any more.
  process.on('disconnect', () => process.exit(2));

  let armed: CrashPoint | null = null;
  const onProtocolPoint = (point: ProtocolPoint): Promise<void> | undefined => {
    if (armed === null || point !== armed) return undefined;
    armed = null;
    // Report the point, then die here: the commit never gets past this point.
    return send({ t: 'bank.crash', point }).then(() => {
      process.kill(process.pid, 'SIGKILL');
      return new Promise<void>(() => undefined);
    });
  };

  const store = await openWorkerStore(cfg.storeUrl);
  const oracle = new OracleClient({ host: cfg.oracleHost, port: cfg.oraclePort, timeoutMs: workerOracleTimeoutMs(cfg.storeUrl) });
  const db = await whileOutOfReach(
    () =>
      Percolator.open({
        store,
        oracle,
        leaseMs: cfg.leaseMs,
        lockTtlMs: cfg.lockTtlMs,
        lockWaitMs: cfg.lockWaitMs,
        gcIntervalMs: cfg.gcIntervalMs,
        onProtocolPoint: cfg.crash === null ? undefined : onProtocolPoint,
      }),
    // Many short pauses (a network that resets connections every few hundred ms): ~9 s, as the
    // 50 attempts 20–200 ms apart it made before it shared the store's helper.
    { forMs: 9_000, firstPauseMs: 20, maxPauseMs: 200 },
  );
  await send({ t: 'bank.ready' });
  // A standby waits here, fully open, so replacing a killed worker costs no start-up time.
  await started;
  if (cfg.crash !== null && !stopping) {
    const delay = cfg.crash.armMinMs + Math.random() * (cfg.crash.armMaxMs - cfg.crash.armMinMs);
    setTimeout(() => {
      armed = CRASH_POINTS[randomInt(CRASH_POINTS.length)] as CrashPoint;
    }, delay).unref();
  }

  let counter = 0;
  const nextId = (): string => `${cfg.incarnation}:${++counter}`;

  const transferLoop = async (): Promise<void> => {
    while (!stopping) {
      const a = randomInt(cfg.accounts);
      let b = randomInt(cfg.accounts - 1);
      if (b >= a) b++;
      const keys = [accountKey(a), accountKey(b)];
      let pending: string | null = null;
      try {
        await db.transaction(
          async (tx) => {
            if (pending !== null) {
              // Re-run after a retryable error from the previous attempt's commit: it committed nothing.
              void send({ t: 'bank.fail', id: pending, code: 'RETRIED' });
              pending = null;
            }
            // Stopping: do not start another attempt (the retry loop could otherwise run on for a while).
            if (stopping) throw new StopRequested();
            const values = await tx.getMany(
              cfg.table,
              keys.flatMap((k) => [
                { row: k, column: BALANCE },
                { row: k, column: LOG },
              ]),
            );
            const id = nextId();
            const reads: Record<string, Version> = {};
            const writes: Record<string, Version> = {};
            const read = keys.map((k, i) => {
              const bal = values[2 * i];
              const log = values[2 * i + 1];
              if (bal === null || bal === undefined || log === null || log === undefined) throw new Error(`account ${k} is missing`);
              const v = { balance: decodeBalance(Buffer.from(bal).toString('utf8')), log: decodeLog(Buffer.from(log).toString('utf8')) };
              reads[k] = version(v.log, v.balance);
              return v;
            });
            const [from, to] = read as [(typeof read)[0], (typeof read)[0]];
            const amount = randomInt(Math.min(from.balance, cfg.maxAmount) + 1);
            const balances = [from.balance - amount, to.balance + amount];
            keys.forEach((k, i) => {
              const old = (read[i] as (typeof read)[0]).log;
              const log = { n: old.n + 1, tail: [...old.tail, id].slice(-cfg.tailLength) };
              tx.set(cfg.table, k, BALANCE, String(balances[i]));
              tx.set(cfg.table, k, LOG, encodeLog(log));
              writes[k] = version(log, balances[i] as number);
            });
            pending = id;
            await send({ t: 'bank.invoke', id, reads, writes });
          },
          { maxAttempts: 50, maxBackoffMs: 100 },
        );
        if (pending !== null) void send({ t: 'bank.ok', id: pending });
      } catch (e) {
        // A store error (the store out of reach, a reply lost) is a transaction that committed
        // nothing: the transaction layer settles the commit point first, and says
        // COMMIT_UNDETERMINED when it cannot (transaction.ts) — the claim the check puts to the test.
        // So is an oracle error: the start or commit timestamp comes before the commit point (the
        // supervisor's oracle keeps its mark in the store, which a full disk makes refuse writes).
        const nothingCommitted = isTxnError(e, 'RETRIES_EXHAUSTED') || isStoreError(e, 'IO_ERROR') || isOracleError(e);
        if (pending !== null) {
          if (nothingCommitted) void send({ t: 'bank.fail', id: pending, code: codeOf(e) });
          else void send({ t: 'bank.info', id: pending, code: codeOf(e), message: String((e as Error)?.message ?? e) });
        }
        if (nothingCommitted || isTxnError(e, 'COMMIT_UNDETERMINED') || e instanceof StopRequested) continue;
        throw e;
      }
    }
  };
  await Promise.all(Array.from({ length: cfg.concurrency }, transferLoop));
  // Closing gives up the liveness lease (a store write): over a network that drops, it may fail,
  // and the lease then simply lapses.
  await db.close().catch((e: unknown) => {
    if (!isStoreError(e, 'IO_ERROR')) throw e;
  });
  await oracle.close();
  await store.close();
  // IPC is ordered: once this one is handed to the OS, every earlier report is too.
  await send({ t: 'bank.stopped' });
  process.exit(0);
}

class StopRequested extends Error {}

main().catch(async (e: unknown) => {
  const message = failureMessage(e);
  process.stderr.write(`bank-worker: ${codeOf(e)}: ${message}\n`);
  await send({ t: 'bank.error', code: codeOf(e), message });
  process.exit(1);
});
