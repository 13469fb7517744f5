/**
 * How long a check worker's OracleClient (bank-worker.ts, notify-worker.ts) waits — for an answer,
 * or while the oracle is out of reach — before failing its call: the store URL's
 * `?oracleTimeoutMs=N` when it has one, as the supervisor's client does (check-oracle.ts), else
 * WORKER_ORACLE_TIMEOUT_MS.
 */
import { deploymentServices } from '../txn/deployment-services.js';

/** Twice a plain client's default: a worker's calls wait behind the crashes and restarts of the others. */
export const WORKER_ORACLE_TIMEOUT_MS = 10_000;

export function workerOracleTimeoutMs(storeUrl: string): number {
  return deploymentServices(storeUrl)?.oracle?.timeoutMs ?? WORKER_ORACLE_TIMEOUT_MS;
}
