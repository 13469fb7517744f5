/**
 * Typed transaction errors. `code` is stable; `retryable` says whether running the transaction
 * again (with a new start timestamp) can succeed; the evidence (table, row, column, timestamps,
 * the blocking lock's primary) is in fields so callers and logs can act on it.
 */
import { type ErrorJson, errorJson } from '../util/error-json.js';

export type TxnErrorCode =
  /** Prewrite found a write committed at or after our start timestamp. */
  | 'WRITE_CONFLICT'
  /** A lock held by a live transaction blocked a read or a prewrite past the wait budget. */
  | 'KEY_LOCKED'
  /** Our transaction was rolled back by another (our lock was gone at the commit point). */
  | 'TXN_ABORTED'
  /** The transaction retried `maxAttempts` times and still conflicted. */
  | 'RETRIES_EXHAUSTED'
  /**
   * The commit point failed in a way that may have taken effect (the store went out of reach
   * with the primary's commit in flight), and the primary could not be read to tell. The
   * transaction committed or will be rolled back: readers settle it from the primary. Not
   * retryable blindly — running it again may apply it twice.
   */
  | 'COMMIT_UNDETERMINED'
  /** A transaction object was used after it committed or aborted. */
  | 'TXN_FINISHED'
  /** A column name is not `family:qualifier` with a valid family. */
  | 'INVALID_COLUMN'
  /** An argument out of its range (e.g. a scan's limit). */
  | 'INVALID_ARGUMENT'
  /** A value to write is neither a string nor a Uint8Array. */
  | 'INVALID_VALUE'
  /** A table is not a Percolator table (missing system families). */
  | 'NOT_A_PERCOLATOR_TABLE'
  /** A stored lock or write record could not be decoded. */
  | 'CORRUPTED_RECORD'
  /** waitForQuiescence gave up: notifications were still pending. */
  | 'QUIESCENCE_TIMEOUT'
  /** The options cannot work (e.g. a shared remote store without the deployment's oracle). */
  | 'INVALID_CONFIG'
  /**
   * A secondary's lock was gone at its commit with no commit record of the transaction: it was
   * rolled back though the primary committed. Never expected; reported, not hidden.
   */
  | 'LOCK_NOT_FOUND'
  /** `snapshot(ts)` asked for a timestamp below the GC watermark: its versions may be collected. */
  | 'SNAPSHOT_TOO_OLD'
  /**
   * The oracle stopped counting the transaction's start timestamp (its process's lease reports
   * lapsed and the GC watermark passed it): a GC pass may have collected what it read. Nothing
   * was committed; running it again, with a new start timestamp, is safe.
   */
  | 'LEASE_LOST'
  /**
   * A version GC pass could not collect some rows; it collected the others (`details`: kind,
   * failedRows, the first failed row's table and row, stopped — it gave up after too many — and
   * result, what it did). The first row's error is the `cause`. The rows wait for a later pass.
   */
  | 'GC_INCOMPLETE'
  /**
   * A row of the commit needs more mutations in one row mutation (to prewrite, commit or roll it
   * back) than the store allows (`details`: table, row, cells, limit and each step's count).
   * Found before anything is written; retrying cannot help — split the row's writes.
   */
  | 'TOO_MANY_MUTATIONS'
  /** A value to commit is larger than the store takes (`details`: table, row, column, size, limit). Found before anything is written. */
  | 'VALUE_TOO_LARGE'
  /** `worker.observe` after `start()` (`details`: column, name): the running loops would not see the observer. */
  | 'WORKER_STARTED';

export interface CellRef {
  readonly table: string;
  readonly row: Uint8Array;
  readonly column: string;
}

const RETRYABLE: ReadonlySet<TxnErrorCode> = new Set(['WRITE_CONFLICT', 'KEY_LOCKED', 'TXN_ABORTED', 'LEASE_LOST']);

export class TxnError extends Error {
  readonly code: TxnErrorCode;
  readonly retryable: boolean;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: TxnErrorCode, message: string, details: Record<string, unknown> = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TxnError';
    this.code = code;
    this.retryable = RETRYABLE.has(code);
    this.details = details;
  }

  /** Message, code and evidence, row keys as text (util/error-json.ts). */
  toJSON(): ErrorJson {
    return errorJson(this);
  }
}

export function isTxnError(e: unknown, code?: TxnErrorCode): e is TxnError {
  return e instanceof TxnError && (code === undefined || e.code === code);
}

/** Printable cell reference for messages and evidence. */
export function describeCell(c: CellRef): string {
  return `${describeRow(c.table, c.row)}/${c.column}`;
}

/** Printable row reference for messages. */
export function describeRow(table: string, key: Uint8Array): string {
  const row = Buffer.from(key);
  const printable = /^[\x20-\x7e]*$/.test(row.toString('latin1')) ? row.toString('latin1') : `0x${row.toString('hex')}`;
  return `${table}/${printable}`;
}
