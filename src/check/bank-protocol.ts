/**
 * What the bank checker's supervisor (bank.ts) and its worker processes (bank-worker.ts) agree
 * on: the table layout, the transfer's values, the worker configuration and the IPC messages.
 *
 * Invariants the check relies on:
 * - Every account row has two columns written by every transfer that touches it, in the same
 *   transaction: `bank:balance` (a decimal integer, never negative) and `bank:log` (JSON
 *   `{n, tail}`: n = transfers that ever touched the account, tail = the ids of the last
 *   `tailLength` of them, oldest first). A transfer reads both accounts' two columns and writes
 *   each log as the version it read plus its own id, so the logs are append-only lists whose
 *   overlapping tails let the history checker infer and cross-check each account's version order
 *   (history.ts); the balance travels with each version, so a torn read shows up too.
 * - Every commit attempt has an id unique across the run (`incarnation:counter`; the supervisor
 *   numbers worker incarnations). The worker sends `invoke` — what it read and what it will
 *   write — and waits until the message is handed to the OS BEFORE it commits, so a kill can only
 *   leave an attempt indeterminate (`info`), never unrecorded. `ok` / `fail` follow the commit;
 *   `fail` is sent only for errors the transaction layer promises left nothing committed
 *   (a retryable error from commit, RETRIES_EXHAUSTED, a store error: IO_ERROR — a commit point
 *   whose fate the store could not tell is COMMIT_UNDETERMINED, sent as `info`).
 */
import type { Version } from './history.js';

export const BANK_FAMILY = 'bank';
export const BALANCE = `${BANK_FAMILY}:balance`;
export const LOG = `${BANK_FAMILY}:log`;

/** The protocol points where workers kill themselves (the four). */
export const CRASH_POINTS = ['after-primary-prewrite', 'mid-secondary-prewrites', 'after-primary-commit', 'mid-secondary-commits'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export function accountKey(i: number): string {
  return `acct-${String(i).padStart(5, '0')}`;
}

export interface LogValue {
  readonly n: number;
  readonly tail: readonly string[];
}

export function encodeLog(log: LogValue): string {
  return JSON.stringify({ n: log.n, tail: log.tail });
}

/** Parses a stored log; throws on anything that is not `{n, tail}`. */
export function decodeLog(text: string): LogValue {
  const v = JSON.parse(text) as { n?: unknown; tail?: unknown };
  if (!Number.isSafeInteger(v.n) || !Array.isArray(v.tail) || !v.tail.every((x) => typeof x === 'string')) {
    throw new Error(`not a bank log value: ${text.slice(0, 200)}`);
  }
  return { n: v.n as number, tail: v.tail as string[] };
}

/** Parses a stored balance; throws on anything that is not a non-negative integer. */
export function decodeBalance(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n)) throw new Error(`not a bank balance: ${text.slice(0, 200)}`);
  return n;
}

/** The version a reader saw / a writer wrote, as the history checker takes it. */
export function version(log: LogValue, balance: number): Version {
  return { n: log.n, tail: log.tail, value: balance };
}

/** The worker's configuration, passed as its one command-line argument (JSON). */
export interface WorkerConfig {
  readonly table: string;
  readonly accounts: number;
  /** Unique per started worker process in this run. */
  readonly incarnation: number;
  /** The supervisor's store URL. `bigtable://` workers open it themselves; others use the IPC store. */
  readonly storeUrl: string;
  /** The oracle the supervisor uses (check-oracle.ts): its own, or the deployment's. */
  readonly oracleHost: string;
  readonly oraclePort: number;
  /** Concurrent transfer loops in the process. */
  readonly concurrency: number;
  /** Self-kill: arm a random crash point after a delay drawn from [minMs, maxMs]; null: never. */
  readonly crash: { readonly armMinMs: number; readonly armMaxMs: number } | null;
  readonly leaseMs: number;
  readonly lockTtlMs: number;
  readonly lockWaitMs: number;
  readonly tailLength: number;
  /** Background version GC interval of the worker's Percolator (0: off). */
  readonly gcIntervalMs: number;
  readonly maxAmount: number;
  /** Start as a warm standby: open everything, report ready, then wait for `bank.go`. */
  readonly standby: boolean;
}

/** Worker → supervisor (the IPC store's own messages travel on the same channel). */
export type WorkerMessage =
  | { readonly t: 'bank.ready' }
  | { readonly t: 'bank.invoke'; readonly id: string; readonly reads: Record<string, Version>; readonly writes: Record<string, Version> }
  | { readonly t: 'bank.ok'; readonly id: string }
  | { readonly t: 'bank.fail'; readonly id: string; readonly code: string }
  /** The outcome cannot be known from here (a non-retryable error during commit). */
  | { readonly t: 'bank.info'; readonly id: string; readonly code: string; readonly message: string }
  /** The worker is about to SIGKILL itself at this protocol point. */
  | { readonly t: 'bank.crash'; readonly point: CrashPoint }
  /** A graceful stop finished (every earlier message was sent before it). */
  | { readonly t: 'bank.stopped' }
  /** An unexpected error; the worker exits 1 after sending it. */
  | { readonly t: 'bank.error'; readonly code: string; readonly message: string };

/** Supervisor → worker. */
export type SupervisorMessage = { readonly t: 'bank.stop' } | { readonly t: 'bank.go' };
