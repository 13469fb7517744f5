/**
 * Finishing a commit whose secondary commits failed in the store (out of reach for a moment, a
 * connection reset). The transaction is committed — its primary is — so those rows' locks only
 * wait to be rolled forward: readers of this process do it at once (`finishedHere`), but other
 * processes' readers wait out the lock's TTL (30 s by default) while this process lives. So the
 * committer sends them again in the background: RETRIES times, 100 ms doubling (~6 s in all),
 * until each is committed or found decided (commitSecondary is idempotent, and a resolver that
 * rolls a row forward meanwhile writes the very same cells).
 *
 * Concurrency: any number of retries run at once; `close()` stops their waits and waits for the
 * calls in flight, so nothing touches the store after it.
 */
import type { Store } from '../store/store.js';
import { commitSecondary } from './actions/commit.js';
import type { BufferedRow } from './actions/types.js';
import { TxnError } from './errors.js';

const RETRIES = 6;
const FIRST_PAUSE_MS = 100;

export class SecondaryRetry {
  private readonly running = new Set<Promise<void>>();
  private readonly wakers = new Set<() => void>();
  private closed = false;

  /** `onDecided`: a retry that found the row decided otherwise (LOCK_NOT_FOUND: a broken invariant). */
  constructor(
    private readonly store: Store,
    private readonly onDecided: (e: TxnError) => void,
  ) {}

  /** Commits `rows` of transaction startTs (committed at commitTs) again, in the background. */
  retry(rows: readonly BufferedRow[], startTs: number, commitTs: number): void {
    if (this.closed || rows.length === 0) return;
    const task = this.run(rows, startTs, commitTs);
    this.running.add(task);
    void task.finally(() => this.running.delete(task));
  }

  private async run(rows: readonly BufferedRow[], startTs: number, commitTs: number): Promise<void> {
    let left = rows;
    for (let attempt = 0; attempt < RETRIES && left.length > 0; attempt++) {
      await this.pause(FIRST_PAUSE_MS * 2 ** attempt);
      if (this.closed) return;
      const still: BufferedRow[] = [];
      await Promise.all(
        left.map((r) =>
          commitSecondary(this.store, r, startTs, commitTs).catch((e: unknown) => {
            if (e instanceof TxnError) this.onDecided(e);
            else still.push(r);
          }),
        ),
      );
      left = still;
    }
  }

  /** Waits `ms` (a retry's backoff), or until close(). */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.wakers.add(wake);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of [...this.wakers]) wake();
    await Promise.all([...this.running]);
  }
}
