/**
 * Observers (Percolator §2.4; Apache Fluo's one-method interface): code that runs when a column
 * changes. Several observers may watch one column; each has its own ack, so each runs once per
 * change. An observer runs inside a transaction; everything it writes commits atomically with
 * its ack, or not at all.
 */
import type { Transaction } from '../txn/transaction.js';

/** What an observer run is told besides its cell (the fifth argument of an ObserverFn). */
export interface ObserverContext {
  /**
   * Fires when the worker begins to stop (`Worker.stop()`, `Percolator.close()`): an observer
   * waiting on something slow (a fetch, a queue) should end — throw `signal.reason`, or pass the
   * signal on. Its reason is an Error with code WORKER_STOPPING; a run that throws it (or an error
   * whose `cause` chain holds it, as Node's AbortError does) is not
   * counted as a failure, and its notification stays. A run still going when the stop's grace
   * period ends is abandoned: its transaction is aborted and can never commit.
   */
  readonly signal: AbortSignal;
}

/**
 * Called with the transaction to work in, the row and column that changed, the table, and the
 * run's context (an observer written for four arguments still fits: the fifth is extra).
 * Throwing aborts the transaction; the notification stays and is retried with backoff.
 */
export type ObserverFn = (tx: Transaction, row: Uint8Array, column: string, table: string, context: ObserverContext) => Promise<void>;

export interface ObserverRegistration {
  /** Unique per observer; names its ack column. */
  readonly name: string;
  /** `family:qualifier`. */
  readonly column: string;
  /** A table name, or '*' for the column in every Percolator table. */
  readonly table: string;
  readonly fn: ObserverFn;
  /**
   * Under load, how long (ms) a change this worker committed waits before the run, so that later
   * changes of the row collapse into it (0: none). See worker.ts, *Brief waits*.
   */
  readonly collapseMs: number;
}
