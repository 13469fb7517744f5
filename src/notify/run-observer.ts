/**
 * One observer on one notified cell: the ack protocol that gives "at most one observer commit
 * per change" (Percolator §2.4).
 *
 * In a transaction T (start ts S): read the observed column's visible commit ts C and this
 * observer's ack A (the start ts of its last successful run). If C <= A the change was already
 * processed: nothing runs. Otherwise run the observer and write the ack := S in the same
 * transaction. Two runs racing on one change both write the ack, so the second to commit meets
 * a write-write conflict and aborts: at most one commits. A change committed after S is not
 * covered (C' > S = ack), so it runs again; several changes before a run collapse into one run.
 * Weak notifications run the observer even when C <= A (they signal no data change).
 *
 * Returns: { ran, committed, upTo, notified, cleared } — upTo is the commit ts the observer has now
 * processed up to; a run that wrote nothing does not commit (nor write its ack). With `clearUpTo`
 * (the worker's bound for the cell's notifications, when this observer is the cell's only one) a
 * one-phase commit also deletes those notify cells (`cleared`): the ack and the clearing are then
 * one row write instead of two.
 * Throws: the observer's own error (wrapped in ObserverFailure), or RETRIES_EXHAUSTED.
 *
 * Stopping (`control`, one per worker start): the observer gets a signal that fires when the
 * worker begins to stop. Once the stop's grace period ends, `control.abandon()` aborts and releases
 * the run's transaction; the run then throws ObserverAbandoned at its next step and never commits —
 * the abort makes every later write, and the commit, fail with TXN_FINISHED even between those
 * steps. Only a commit already in flight when the run was abandoned (a store that stopped
 * answering) may still land; the ack still allows one commit per change.
 */
import type { Store } from '../store/store.js';
import { resolveConflictLock } from '../txn/actions/resolve-lock.js';
import { TxnError, describeCell, isTxnError } from '../txn/errors.js';
import { ackColumn, encodeColumn } from '../txn/layout.js';
import { type ReadContext, readVersionsAt } from '../txn/snapshot-read.js';
import type { NotifiedWrite, Transaction } from '../txn/transaction.js';
import type { ObserverContext, ObserverRegistration } from './observer.js';
import { type ErrorJson, errorJson } from '../util/error-json.js';

export interface ObserverHost {
  readonly store: Store;
  readonly readContext: ReadContext;
  begin(): Promise<Transaction & { release(): void }>;
}

/** An error's stable code, or else its class name (what an observer threw, in a word). */
export function codeOrName(e: unknown): string {
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && code !== '') return code;
  return e instanceof Error ? e.name : typeof e;
}

/**
 * An observer threw (its error is the `cause`): the run aborted, the notification stays. The
 * evidence is in fields and, as every typed error of the project has it (TxnError, StoreError),
 * in `details` — observer, table, row, column and `threw`, the code or class of what it threw —
 * which logs and JSON output show; until 2026-12 it was only in fields.
 */
export class ObserverFailure extends Error {
  readonly code = 'OBSERVER_FAILED';
  readonly details: Readonly<Record<string, unknown>>;
  constructor(
    readonly observer: string,
    readonly table: string,
    readonly row: Uint8Array,
    readonly column: string,
    cause: unknown,
  ) {
    super(
      `observer ${observer} failed on ${describeCell({ table, row, column })}: ${cause instanceof Error ? cause.message : String(cause)}`,
      {
        cause,
      },
    );
    this.name = 'ObserverFailure';
    this.details = { observer, table, row, column, threw: codeOrName(cause) };
  }

  /** Message, code, evidence (the row as text) and cause (util/error-json.ts). */
  toJSON(): ErrorJson {
    return errorJson(this);
  }
}

/**
 * A run that stop() gave up on (its grace period ended first). It committed nothing and never will:
 * its transaction was aborted. Its notification stays for the next run.
 */
export class ObserverAbandoned extends Error {
  readonly code = 'OBSERVER_ABANDONED';
  /** The evidence, as in ObserverFailure: observer, table, row, column. */
  readonly details: Readonly<Record<string, unknown>>;
  constructor(
    readonly observer: string,
    readonly table: string,
    readonly row: Uint8Array,
    readonly column: string,
    cause?: unknown,
  ) {
    super(
      `observer ${observer} on ${describeCell({ table, row, column })} was abandoned by stop(): it did not commit`,
      cause === undefined ? undefined : { cause },
    );
    this.name = 'ObserverAbandoned';
    this.details = { observer, table, row, column };
  }

  /** As ObserverFailure's. */
  toJSON(): ErrorJson {
    return errorJson(this);
  }
}

/** The reason of the stop signal observers get (ObserverContext.signal). */
function stoppingReason(): Error {
  return Object.assign(new Error('the worker is stopping'), { code: 'WORKER_STOPPING' });
}

/**
 * The runs of one worker start, as its stop() sees them: `stopping` fires when the stop begins;
 * `abandon()` (the grace period is over) aborts and releases every transaction still in flight,
 * and `abandoned` stays true: no run under this control commits from then on.
 */
export class RunControl {
  private readonly stop = new AbortController();
  private readonly txns = new Set<Transaction & { release(): void }>();
  private gaveUp = false;

  get stopping(): AbortSignal {
    return this.stop.signal;
  }

  get abandoned(): boolean {
    return this.gaveUp;
  }

  requestStop(): void {
    if (!this.stop.signal.aborted) this.stop.abort(stoppingReason());
  }

  abandon(): void {
    this.gaveUp = true;
    // Aborted: no write or commit of it can happen any more. Released: an observer that never
    // returns must not hold the GC watermark (its reads fail with TXN_FINISHED from now on).
    for (const tx of this.txns) {
      tx.abort();
      tx.release();
    }
    this.txns.clear();
  }

  /** runObserver's: the transactions abandon() must reach. */
  enter(tx: Transaction & { release(): void }): void {
    this.txns.add(tx);
  }

  leave(tx: Transaction & { release(): void }): void {
    this.txns.delete(tx);
  }
}

/**
 * One run's context. Its signal is its own, made on first use (most observers never ask) and
 * aborted with `stopping`: listeners an observer adds end with its run instead of piling up on the
 * worker's signal, one per run.
 */
class RunContext implements ObserverContext {
  private own: AbortController | null = null;
  private follow: (() => void) | null = null;

  constructor(private readonly stopping: AbortSignal | undefined) {}

  get signal(): AbortSignal {
    if (this.own === null) {
      const own = (this.own = new AbortController());
      const stopping = this.stopping;
      if (stopping?.aborted) own.abort(stopping.reason);
      else if (stopping !== undefined) {
        this.follow = () => own.abort(stopping.reason);
        stopping.addEventListener('abort', this.follow, { once: true });
      }
    }
    return this.own.signal;
  }

  end(): void {
    if (this.follow !== null) this.stopping?.removeEventListener('abort', this.follow);
  }
}

export interface RunOutcome {
  readonly ran: boolean;
  /**
   * The run committed (its writes and the ack). A run whose observer wrote nothing commits
   * nothing: there is nothing to make atomic, and the ack only saves a future re-run (a
   * re-delivered notification then runs the observer again, which again writes nothing).
   */
  readonly committed: boolean;
  readonly upTo: number;
  /** Transactions that lost a conflict and were retried. */
  readonly conflicts: number;
  /** Of those, retried at once because the observer found its snapshot stale (`details.retryNow`). */
  readonly staleRetries: number;
  /**
   * What the committed run notified (for local dispatch): the observed columns it wrote and its
   * weak notifications (Transaction.notifiedWrites); empty otherwise.
   */
  readonly notified: readonly NotifiedWrite[];
  /** The run's commit also cleared the notifications up to `clearUpTo` (one-phase commits only). */
  readonly cleared: boolean;
}

function encodeTs(ts: number): Uint8Array {
  const b = Buffer.allocUnsafe(8);
  b.writeDoubleBE(ts);
  return b;
}

function decodeTs(v: Uint8Array | null): number {
  return v !== null && v.byteLength === 8 ? Buffer.from(v.buffer, v.byteOffset, 8).readDoubleBE(0) : 0;
}

export async function runObserver(
  host: ObserverHost,
  obs: ObserverRegistration,
  table: string,
  row: Uint8Array,
  weak: boolean,
  options: { readonly maxAttempts?: number; readonly clearUpTo?: number; readonly control?: RunControl } = {},
): Promise<RunOutcome> {
  const { maxAttempts = 50, clearUpTo, control } = options;
  const ack = ackColumn(obs.name, obs.column);
  const refs = [
    { column: obs.column, q: encodeColumn(obs.column) },
    { column: ack, q: encodeColumn(ack) },
  ];
  const abandoned = (cause?: unknown) => new ObserverAbandoned(obs.name, table, row, obs.column, cause);
  const context = new RunContext(control?.stopping);
  let conflicts = 0;
  let lastConflict: unknown;
  let freeRetries = 1000;
  try {
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (control?.abandoned) throw abandoned();
      const tx = await host.begin();
      control?.enter(tx);
      try {
        if (control?.abandoned) throw abandoned();
        const [change, acked] = await readVersionsAt(host.store, table, row, refs, tx.startTs, host.readContext);
        if (control?.abandoned) throw abandoned();
        const upTo = change?.commitTs ?? 0;
        if (!weak && upTo <= decodeTs(acked?.value ?? null)) {
          tx.abort();
          return { ran: false, committed: false, upTo, conflicts, staleRetries: 1000 - freeRetries, notified: [], cleared: false };
        }
        // Its commit is ours, with the ack: an observer's own commit() is refused.
        const commit = tx.reserveCommit('the worker, with its ack');
        try {
          await obs.fn(tx, row, obs.column, table, context);
        } catch (e) {
          if (isTxnError(e) && e.retryable) throw e;
          throw new ObserverFailure(obs.name, table, row, obs.column, e);
        }
        // Abandoned while the observer ran: whatever it buffered is dropped. (The aborted
        // transaction would refuse the ack and the commit anyway; this says why.)
        if (control?.abandoned) throw abandoned();
        if (!tx.hasWrites()) {
          // Read-only run: nothing to commit. Skipping the ack is safe: the change stays processed
          // as far as anyone can observe (the observer wrote nothing), and the notification is
          // cleared by the caller exactly as after a commit.
          tx.abort();
          return { ran: true, committed: false, upTo, conflicts, staleRetries: 1000 - freeRetries, notified: [], cleared: false };
        }
        tx.setInternal(table, row, ack, encodeTs(tx.startTs));
        // Nobody outside waits for an observer's commit: it need not wait for an fsync of its own
        // (Transaction.deferDurability says why a crash cannot lose a change's processing).
        tx.deferDurability();
        if (clearUpTo !== undefined) tx.clearNotificationsOnCommit(table, row, obs.column, clearUpTo);
        await commit();
        // Asked is not done: a store shared meanwhile commits in two phases, without the clearing.
        const cleared = tx.clearedOnCommit;
        return { ran: true, committed: true, upTo, conflicts, staleRetries: 1000 - freeRetries, notified: tx.notifiedWrites(), cleared };
      } catch (e) {
        tx.abort();
        // Any failure of an abandoned run is its abandonment (its reads and writes fail once its
        // transaction is aborted), except a commit that may have landed: that one is told as it is.
        if (control?.abandoned && !(e instanceof ObserverAbandoned) && !isTxnError(e, 'COMMIT_UNDETERMINED')) throw abandoned(e);
        if (!isTxnError(e) || !e.retryable) throw e;
        lastConflict = e;
        conflicts++;
        // An observer that found its snapshot stale before writing (it waited for a concurrent run
        // of its process to commit: `details.retryNow`) retries at once, and not at the expense of
        // its attempts: someone else made progress.
        if (e.details.retryNow === true && freeRetries > 0) {
          freeRetries--;
          attempt--;
          continue;
        }
        // The commit met another transaction's lock: resolved here if its owner is gone, as
        // Percolator.transaction does. Reads resolve the locks they meet, but this run may write
        // cells it never reads, and would meet an abandoned lock on every attempt.
        if (e.code === 'KEY_LOCKED') await resolveConflictLock(host.store, e, host.readContext);
        // A conflict on the ack means another run committed: the re-check will see its ack.
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(100, 2 ** attempt)));
      } finally {
        control?.leave(tx);
        tx.release();
      }
    }
  } finally {
    context.end();
  }
  // Said with what a user can change: the worker runs the row again on a later pass, and runs
  // that keep losing write rows many runs write.
  throw new TxnError(
    'RETRIES_EXHAUSTED',
    `observer ${obs.name} conflicted ${maxAttempts} times on ${describeCell({ table, row, column: obs.column })}; its notification stays, and a later pass runs it again. Runs that keep conflicting write rows that many runs write (a hot row, such as an aggregate): fewer worker threads, or the aggregate spread over several rows (docs/observers.md)`,
    { observer: obs.name, table, row, column: obs.column, attempts: maxAttempts },
    { cause: lastConflict },
  );
}
