/**
 * The store's per-row limits (`Store.limits`), checked for a whole commit before anything of it is
 * written — a lock, a weak notification, a one-phase write.
 *
 * Two-phase commit writes each row in one row mutation at each step: its prewrite, its commit and,
 * should the transaction fail before its commit point, its rollback (roll-back.ts). The store
 * refuses a row mutation of more than `maxMutationsPerRow` mutations (TOO_MANY_MUTATIONS; Cloud
 * Bigtable's limit is 100 000). Left to the store, a row that fit its prewrite but not its commit
 * was locked and then could be neither committed nor rolled back: its locks stayed for readers to
 * clean one per read (as a secondary, behind a transaction reported committed). Rolling back is
 * the costliest step (3 mutations a cell, 4 for an observed column), so it decides: at most
 * 33 333 cells a row at Cloud Bigtable's limit.
 *
 * The same check holds for one-phase commits, whose write takes fewer mutations: a transaction
 * must not start failing when its store becomes shared and its commits take two phases. (The
 * one-phase write itself, side writes included, is checked again in commit-one-phase.ts.)
 *
 * A value over `maxValueBytes` would fail its row's prewrite in the store after other rows were
 * locked: it is refused here first.
 *
 * Throws: TOO_MANY_MUTATIONS, VALUE_TOO_LARGE (TxnError, not retryable; evidence in `details`).
 */
import type { StoreLimits } from '../../store/store.js';
import { TxnError, describeCell, describeRow } from '../errors.js';
import { commitMutationCount } from './commit.js';
import { prewriteMutationCount } from './prewrite.js';
import { rollBackMutationCount } from './roll-back.js';
import type { BufferedRow } from './types.js';

/** The most mutations one cell takes at any step (a rollback of an observed column): rows below the limit by this bound are not counted. */
export const MAX_MUTATIONS_PER_CELL = 4;

/** Checks every row of a commit; `rows[0]` is the primary's. */
export function checkRowLimits(rows: readonly BufferedRow[], limits: StoreLimits): void {
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i] as BufferedRow;
    for (const c of r.cells) {
      if (c.value === null || c.value.byteLength <= limits.maxValueBytes) continue;
      const ref = { table: r.table, row: r.row, column: c.column };
      throw new TxnError(
        'VALUE_TOO_LARGE',
        `the value of ${describeCell(ref)} is ${c.value.byteLength} bytes, over the store's limit of ${limits.maxValueBytes}`,
        { ...ref, size: c.value.byteLength, limit: limits.maxValueBytes },
      );
    }
    const limit = limits.maxMutationsPerRow;
    if (r.cells.length * MAX_MUTATIONS_PER_CELL <= limit) continue;
    const prewrite = prewriteMutationCount(r, i !== 0);
    const commit = commitMutationCount(r);
    const rollBack = rollBackMutationCount(r);
    if (Math.max(prewrite, commit, rollBack) <= limit) continue;
    throw new TxnError(
      'TOO_MANY_MUTATIONS',
      `row ${describeRow(r.table, r.row)}: its ${r.cells.length} cells take ${prewrite} mutations to prewrite, ${commit} to commit ` +
        `and ${rollBack} to roll back, each in one row mutation, over the store's limit of ${limit}; write fewer columns of the row in one transaction`,
      { table: r.table, row: r.row, cells: r.cells.length, limit, prewrite, commit, rollBack },
    );
  }
}
