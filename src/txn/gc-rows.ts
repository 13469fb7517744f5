/**
 * What both version GC passes (gc.ts, gc-recent.ts) do with one row's deletions: apply them in
 * row mutations the store takes, and go on past a row that fails.
 *
 * The store refuses a row mutation of more than `limits.maxMutationsPerRow` mutations
 * (TOO_MANY_MUTATIONS; Cloud Bigtable's limit is 100 000). GC used to delete a row's old versions
 * in one row mutation: a row with more than about 50 000 columns holding old versions failed at
 * every pass, and since a full pass stopped at its first failed row, nothing after that row was
 * collected again. `chunkDeletions` splits a row's deletions into consecutive row mutations, each
 * within the limit, which the passes apply one after the other (each awaited).
 *
 * Invariant across chunks: a deletion group is never split (while the limit allows 2 mutations,
 * as any store a transaction could write to does: rolling back one cell takes 3). A group is what
 * must go atomically: a version's write record and the `data` cell it points at (a targeted pass),
 * or a column's range of old records and range of old `data` cells (a full pass). So after every
 * chunk the row is in a state one atomic deletion could have left: no write record whose `data`
 * cell is gone (what a reader reports as CORRUPTED_RECORD, and what the hunt in
 * docs/transactions.md looks for), and no `data` cell whose records are gone (a full pass deletes
 * `data` only below a record range it deletes: such a cell would wait for the column's next
 * version). Nothing ties groups together: each column keeps the version a reader at the watermark
 * sees; a rollback record below it only stops a late prewrite that this kept commit stops anyway;
 * locks were resolved before any deletion (full pass) or there are none (targeted pass). A chunk
 * that fails, or a deferred one a crash loses (the store's log is ordered: the later chunks go with
 * it), leaves whole versions, which the next pass collects.
 *
 * A failed row (a chunk, a read, or in a full pass the resolution of one of its locks) does not end
 * the pass: `GcFailures` counts it and the pass goes on with the other rows, then rejects with
 * GC_INCOMPLETE (the first failure is its `cause`; the counts of what was done are in `details`).
 * After MAX_FAILED_ROWS failed rows a pass stops: the store is then refusing writes, not one row.
 */
import type { Cell, Mutation } from '../store/types.js';
import { TxnError, describeRow } from './errors.js';
import type { GcResult } from './gc.js';

/** Deletions that go in one row mutation, and how many versions (write records of puts, deletes, rollbacks) they remove. */
export interface DeletionGroup {
  readonly mutations: readonly Mutation[];
  readonly versions: number;
}

/** Consecutive row mutations of at most `limit` mutations, groups whole and in order. */
export function chunkDeletions(groups: readonly DeletionGroup[], limit: number): DeletionGroup[] {
  const max = Math.max(1, Math.floor(limit));
  const chunks: DeletionGroup[] = [];
  let mutations: Mutation[] = [];
  let versions = 0;
  const flush = (): void => {
    if (mutations.length > 0) chunks.push({ mutations, versions });
    mutations = [];
    versions = 0;
  };
  for (const g of groups) {
    if (mutations.length + g.mutations.length > max) flush();
    if (g.mutations.length <= max) {
      mutations.push(...g.mutations);
      versions += g.versions;
      continue;
    }
    // Only under a limit below 2, where no transaction can write: split in the group's order,
    // which puts a write record before its `data` cell (a cell without a record is invisible).
    for (let i = 0; i < g.mutations.length; i += max) {
      const last = i + max >= g.mutations.length;
      chunks.push({ mutations: g.mutations.slice(i, i + max), versions: last ? g.versions : 0 });
    }
  }
  flush();
  return chunks;
}

/** Failed rows a pass goes on past; one more and it stops. */
export const MAX_FAILED_ROWS = 100;

/** The rows of one pass that failed (single JS thread: the pass's row tasks report here). */
export class GcFailures {
  private first: { readonly table: string; readonly row: Uint8Array; readonly error: unknown } | null = null;
  private failedRows = 0;
  private stopped = false;

  add(table: string, row: Uint8Array, error: unknown): void {
    this.first ??= { table, row: Uint8Array.from(row), error };
    this.failedRows++;
  }

  /** Asked before each further row: true (and remembered) once too many rows failed. */
  stop(): boolean {
    if (this.failedRows >= MAX_FAILED_ROWS) this.stopped = true;
    return this.stopped;
  }

  get hasStopped(): boolean {
    return this.stopped;
  }

  /** GC_INCOMPLETE if a row failed, else null; `result` is what the pass did. */
  error(kind: 'full' | 'recent', result: GcResult): TxnError | null {
    const first = this.first;
    if (first === null) return null;
    const reason = first.error instanceof Error ? first.error.message : String(first.error);
    const stopped = this.stopped ? `, and it stopped there (${MAX_FAILED_ROWS} failed rows)` : '';
    return new TxnError(
      'GC_INCOMPLETE',
      `${kind} GC pass: ${this.failedRows} row(s) failed${stopped}; the first, ${describeRow(first.table, first.row)}: ${reason}`,
      { kind, failedRows: this.failedRows, stopped: this.stopped, table: first.table, row: first.row, result },
      { cause: first.error },
    );
  }
}

/**
 * Calls `f(q, i, j)` for each column of a row's write cells in canonical order (per column,
 * newest first): cells[i..j) are the versions of the column with encoded qualifier `q`.
 */
export function forEachColumn(cells: readonly Cell[], f: (q: Uint8Array, i: number, j: number) => void): void {
  let i = 0;
  while (i < cells.length) {
    const q = (cells[i] as Cell).qualifier;
    let j = i;
    while (j < cells.length && Buffer.compare((cells[j] as Cell).qualifier, q) === 0) j++;
    f(q, i, j);
    i = j;
  }
}
