/**
 * A row's cells as one array in canonical order: family name ascending, qualifier bytes
 * ascending, timestamp descending. Storage, filters and reads all use this order, so merging and
 * filtering never re-sort. At most one cell per (family, qualifier, timestamp).
 */
import { compareBytes } from './bytes.js';
import type { Cell } from './types.js';

export const NO_LABELS: readonly string[] = Object.freeze([]);

export function compareFamily(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Canonical order; 0 means the same (family, qualifier, timestamp). */
export function compareCells(a: Cell, b: Cell): number {
  if (a.family !== b.family) return a.family < b.family ? -1 : 1;
  const q = compareBytes(a.qualifier, b.qualifier);
  if (q !== 0) return q;
  return b.timestamp - a.timestamp;
}

/**
 * A cell as the store makes it (decoded, encoded, filtered): a class, not an object literal, so
 * that V8 never allocates it directly in the old generation. V8 decides per allocation site —
 * each literal in the source — whether its objects are "pretenured", from how many of them
 * survived recent collections. `decodeRow` serves both the row caches (cells that live) and scans
 * (cells dropped at once): after a phase of cached reads its literal was pretenured, and a scan
 * then filled the old generation with garbage — a full collection every ~300 ms, a third of a
 * scan's time, about half the scan rate in `bench store` (BENCHMARKS.md, 2026-11-29, fifth
 * session). Objects made by `new` have no allocation site: each starts young. One class for
 * every store-made cell also keeps the readers' property accesses monomorphic.
 */
export class CellRecord implements Cell {
  declare readonly family: string;
  declare readonly qualifier: Uint8Array;
  declare readonly timestamp: number;
  declare readonly value: Uint8Array;
  declare readonly labels: readonly string[];

  constructor(family: string, qualifier: Uint8Array, timestamp: number, value: Uint8Array, labels: readonly string[] = NO_LABELS) {
    this.family = family;
    this.qualifier = qualifier;
    this.timestamp = timestamp;
    this.value = value;
    this.labels = labels;
  }
}

export function makeCell(family: string, qualifier: Uint8Array, timestamp: number, value: Uint8Array): Cell {
  return new CellRecord(family, qualifier, timestamp, value);
}

/** Inserts or replaces `cell` in a canonical array (returns a new array; input untouched). */
export function upsertCell(cells: readonly Cell[], cell: Cell): Cell[] {
  const out = cells.slice();
  upsertCellInPlace(out, cell);
  return out;
}

/** Inserts or replaces `cell` in a canonical array the caller owns (no other allocation). */
export function upsertCellInPlace(cells: Cell[], cell: Cell): void {
  let lo = 0;
  let hi = cells.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareCells(cells[mid] as Cell, cell);
    if (c < 0) lo = mid + 1;
    else if (c > 0) hi = mid;
    else {
      cells[mid] = cell;
      return;
    }
  }
  // Shifted by hand: `splice` would allocate the (empty) array of removed elements.
  let i = cells.length;
  cells.push(cell);
  for (; i > lo; i--) cells[i] = cells[i - 1] as Cell;
  cells[lo] = cell;
}

/** Merges canonical arrays whose families are disjoint (one per locality group). */
export function mergeGroups(groups: readonly (readonly Cell[])[]): Cell[] {
  const nonEmpty = groups.filter((g) => g.length > 0);
  if (nonEmpty.length === 0) return [];
  if (nonEmpty.length === 1) return nonEmpty[0] as Cell[];
  const out: Cell[] = [];
  for (const g of nonEmpty) for (const c of g) out.push(c);
  // Families are disjoint across groups and each group is canonical, so a stable sort by family
  // name alone restores canonical order.
  out.sort((a, b) => compareFamily(a.family, b.family));
  return out;
}

/** Approximate stored size of cells, for tablet accounting and the cache budget. */
export function cellsBytes(cells: readonly Cell[]): number {
  let n = 0;
  // Indexed: in heap profiles this for-of allocated an iterator result a cell (its rows are arrays of several kinds).
  for (let i = 0; i < cells.length; i++) {
    const c = cells[i] as Cell;
    n += c.family.length + c.qualifier.byteLength + c.value.byteLength + 12;
  }
  return n;
}
