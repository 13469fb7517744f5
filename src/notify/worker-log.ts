/**
 * The worker's log when none is given (`WorkerOptions.log`): one stderr line per event.
 *
 * A typed error — a store, transaction, oracle or lock-service error with its stable code — is
 * told as `CODE: message`: the code and the message are what it says, and its stack (gRPC's
 * internals, for a server out of reach) is not the user's to read. Over a `percolator serve` that
 * restarts, every scanner and runner of every `percolator worker` meets one, and until 2026-12-01
 * each printed ~40 lines of stacks and causes. Anything else — an observer's own bug above all —
 * keeps its stack: that is where to look.
 */
import { inspect } from 'node:util';
import { OracleError } from '../oracle/errors.js';
import { StoreError } from '../store/errors.js';
import { TxnError } from '../txn/errors.js';
import { ObserverAbandoned, ObserverFailure } from './run-observer.js';

/** Errors whose code and message tell it all (LockServiceError lives in the server layer: by name). */
function isTyped(e: unknown): e is Error & { readonly code: string } {
  if (e instanceof StoreError || e instanceof TxnError || e instanceof OracleError || e instanceof ObserverAbandoned) return true;
  return e instanceof Error && e.name === 'LockServiceError' && typeof (e as { code?: unknown }).code === 'string';
}

/** One log line: the message, then the error as `CODE: message` when typed, whole (stack, cause) otherwise. */
export function workerLogLine(message: string, error?: unknown): string {
  if (error === undefined) return message;
  if (isTyped(error)) return `${message}: ${error.code}: ${error.message}`;
  // The observer threw: its message names observer and cell; a typed cause needs no stack either.
  if (error instanceof ObserverFailure && isTyped(error.cause)) return `${message}: ${error.cause.code}: ${error.message}`;
  return `${message} ${inspect(error)}`;
}

export function defaultWorkerLog(message: string, error?: unknown): void {
  console.error(`percolator worker: ${workerLogLine(message, error)}`);
}
