/**
 * An in-process gate that serializes transactions of one process touching the same keys, so
 * that they run one after the other instead of conflicting at commit (a write-write conflict
 * costs a prewrite, a roll back and a backoff; waiting here costs nothing).
 *
 * It is an optimization only: correctness still comes from the transactions (other processes do
 * not see this gate). A transaction that had to wait, or whose snapshot predates a commit that
 * went through the gate on one of its keys, is told to retry with a fresh snapshot (`enter`
 * returns false), since it would only conflict at commit.
 *
 * A transaction may learn of more keys while it runs (the clusters a component search reaches):
 * `extend` adds them without waiting — a holder that waited for another holder could deadlock —
 * and tells the caller to abort, wait and retry when one is busy.
 */
import { TxnError } from '../../txn/errors.js';
import type { Transaction } from '../../txn/transaction.js';
import { Queue } from '../../util/queue.js';

/**
 * Keys whose last commit timestamp is remembered (beyond it the oldest are forgotten: a later
 * conflict is then caught at commit). It need only cover the commits a transaction still running
 * may have started before. ~280 bytes of heap a key: 50 000, until the first session of
 * 2026-11-28, held ~13.4 MiB per gate.
 */
const REMEMBERED = 8192;

export class KeyGate {
  private readonly busy = new Map<string, Promise<void>>();
  private readonly lastCommit = new Map<string, number>();
  /** lastCommit's entries oldest first, with stale ones (the key committed again since) left in. */
  private readonly commitOrder = new Queue<readonly [string, number]>();
  /** What each transaction inside holds, and the promise its release resolves. */
  private readonly held = new WeakMap<Transaction, { readonly mine: string[]; readonly done: Promise<void> }>();

  /**
   * Enters every key for `tx` until it commits or aborts. Returns false when the caller should
   * retry with a fresh snapshot: some key was busy (this waited until all were free) or was
   * committed through the gate after `tx` started.
   */
  async enter(tx: Transaction, keys: readonly string[]): Promise<boolean> {
    const waits: Promise<void>[] = [];
    for (const k of keys) {
      const b = this.busy.get(k);
      if (b !== undefined) waits.push(b);
    }
    if (waits.length > 0) {
      await Promise.all(waits);
      return false;
    }
    for (const k of keys) if ((this.lastCommit.get(k) ?? 0) > tx.startTs) return false;
    let open!: () => void;
    const done = new Promise<void>((r) => {
      open = r;
    });
    const mine = [...new Set(keys)];
    for (const k of mine) this.busy.set(k, done);
    this.held.set(tx, { mine, done });
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.held.delete(tx);
      const ts = tx.commitTs;
      for (const k of mine) {
        this.busy.delete(k);
        if (ts !== null) this.remember(k, ts);
      }
      open();
    };
    // Released when the transaction finishes: after its commit (the observer runner commits it
    // after the observer returns) or its abort, whichever comes first.
    const { commit, abort } = tx;
    tx.commit = async function () {
      try {
        return await commit.call(this);
      } finally {
        release();
      }
    };
    tx.abort = function () {
      abort.call(this);
      release();
    };
    return true;
  }

  /**
   * Adds `keys` to what `tx` holds (it entered with `enter`). Returns true when it holds them
   * all; false when the caller should retry with a fresh snapshot at once (one was committed
   * through the gate after `tx` started); else a promise the caller should wait for, *after*
   * aborting `tx` (which releases its keys), before retrying: another transaction holds one.
   * Adds nothing unless it returns true.
   */
  extend(tx: Transaction, keys: readonly string[]): boolean | Promise<void> {
    const h = this.held.get(tx);
    if (h === undefined) throw new Error('KeyGate.extend: the transaction is not inside the gate');
    const waits: Promise<void>[] = [];
    const add: string[] = [];
    for (const k of keys) {
      const b = this.busy.get(k);
      if (b === h.done) continue;
      if (b !== undefined) waits.push(b);
      else if ((this.lastCommit.get(k) ?? 0) > tx.startTs) return false;
      else add.push(k);
    }
    if (waits.length > 0) return Promise.all(waits).then(() => undefined);
    for (const k of add) {
      if (this.busy.has(k)) continue; // listed twice
      this.busy.set(k, h.done);
      h.mine.push(k);
    }
    return true;
  }

  /** Keys currently held (for tests). */
  get size(): number {
    return this.busy.size;
  }

  private remember(key: string, ts: number): void {
    this.lastCommit.set(key, ts);
    this.commitOrder.push([key, ts]);
    while (this.lastCommit.size > REMEMBERED) {
      const oldest = this.commitOrder.shift();
      if (oldest === undefined) break;
      if (this.lastCommit.get(oldest[0]) === oldest[1]) this.lastCommit.delete(oldest[0]);
    }
    if (this.commitOrder.size > 2 * REMEMBERED) this.commitOrder.retain(([k, t]) => this.lastCommit.get(k) === t);
  }
}

/**
 * The gate's "retry with a fresh snapshot" (`details.retryNow`, run-observer.ts) for the run of
 * `row`: control flow the runner catches, for about a quarter of cluster runs, so made without a
 * stack trace — capturing one cost more CPU than a conflicting prewrite's (0.7 % of the web
 * index's JS thread).
 */
export function staleSnapshot(row: string): TxnError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new TxnError('WRITE_CONFLICT', 'a run of this process committed one of our keys after our snapshot: retry with a fresh one', {
      row,
      retryNow: true,
    });
  } finally {
    Error.stackTraceLimit = limit;
  }
}
