/**
 * Keeps the primary locks of long commits fresh (Percolator §2.2: "the worker periodically
 * updates the wall time in the primary lock"), so readers do not take a slow but live commit for
 * an abandoned one and roll it back.
 *
 * One timer per environment serves every commit in flight: most commits finish in well under a
 * period, and a timer created and cleared per commit cost more than the commit's own lock
 * encoding. A commit is refreshed once it has been in flight for a full period, then every period.
 * The refresh is conditioned on the lock still being ours, so it never resurrects a rolled-back
 * lock; its failures are ignored (the next tick tries again, or the commit has ended).
 */
import type { Store } from '../store/store.js';
import type { LockTemplate } from './actions/prewrite.js';
import type { BufferedCell, BufferedRow } from './actions/types.js';
import { LOCK, encodeLock, lockAtFilter, valueRefFor } from './layout.js';

interface Entry {
  readonly row: BufferedRow;
  readonly cell: BufferedCell;
  readonly template: LockTemplate;
  readonly startTs: number;
  due: number;
}

export class LockRefresher {
  private readonly entries = new Set<Entry>();
  private timer: NodeJS.Timeout | null = null;
  private readonly periodMs: number;

  constructor(
    private readonly store: Store,
    lockTtlMs: number,
    private readonly nowMs: () => number,
  ) {
    this.periodMs = Math.max(50, Math.floor(lockTtlMs / 3));
  }

  /** Starts refreshing the primary lock of the transaction at startTs; call `stop` when it ends. */
  track(row: BufferedRow, cell: BufferedCell, template: LockTemplate, startTs: number): { stop(): void } {
    const entry: Entry = { row, cell, template, startTs, due: this.nowMs() + this.periodMs };
    this.entries.add(entry);
    if (this.timer === null) {
      this.timer = setInterval(() => this.tick(), Math.max(10, Math.floor(this.periodMs / 4)));
      this.timer.unref();
    }
    return {
      stop: () => {
        this.entries.delete(entry);
        if (this.entries.size === 0 && this.timer !== null) {
          clearInterval(this.timer);
          this.timer = null;
        }
      },
    };
  }

  private tick(): void {
    const now = this.nowMs();
    for (const e of this.entries) {
      if (now < e.due) continue;
      e.due = now + this.periodMs;
      const lock = encodeLock({
        ...e.template,
        wallTimeMs: now,
        kind: e.cell.kind,
        notify: e.cell.notify,
        value: valueRefFor(e.cell.kind, e.cell.value),
      });
      void this.store
        .checkAndMutateRow(e.row.table, e.row.row, {
          predicateFilter: lockAtFilter(e.cell.q, e.startTs),
          trueMutations: [{ setCell: { familyName: LOCK, columnQualifier: e.cell.q, timestampMicros: e.startTs, value: lock } }],
        })
        .catch(() => undefined);
    }
  }
}
