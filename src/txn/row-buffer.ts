/**
 * One row's buffered writes in a transaction: its cells in the order their columns were first
 * written (a later write of a column replaces its cell in place), found by column name.
 *
 * It is the BufferedRow a commit hands to the protocol actions as it is, without a copy. Most
 * rows a transaction writes have one cell (postings, anchors, acks), so the column index — a map
 * — exists only once a second column is written: a map per row was the largest allocation of a
 * commit of many small rows, and it lives until the commit's fsync.
 *
 * Single-threaded; written only while the transaction is active, read by its commit after.
 */
import type { BufferedCell, BufferedRow } from './actions/types.js';

export class RowBuffer implements BufferedRow {
  /** Made with the first cell: an array of exactly one (an empty one grows to room for 17). */
  readonly cells: BufferedCell[];
  /** Column → index in `cells`; null while there is one column. */
  private index: Map<string, number> | null = null;

  constructor(
    readonly table: string,
    readonly row: Uint8Array,
    /** `row`'s bytesKey (the in-memory locks are keyed by it). */
    readonly rowKey: string,
    first: BufferedCell,
  ) {
    this.cells = [first];
  }

  get(column: string): BufferedCell | undefined {
    if (this.index === null) {
      const c = this.cells[0] as BufferedCell;
      return c.column === column ? c : undefined;
    }
    const i = this.index.get(column);
    return i === undefined ? undefined : this.cells[i];
  }

  set(cell: BufferedCell): void {
    const cells = this.cells;
    if (this.index === null) {
      const first = cells[0] as BufferedCell;
      if (first.column === cell.column) {
        cells[0] = cell;
        return;
      }
      this.index = new Map([[first.column, 0]]);
    }
    const i = this.index.get(cell.column);
    if (i !== undefined) {
      cells[i] = cell;
      return;
    }
    this.index.set(cell.column, cells.length);
    cells.push(cell);
  }
}
