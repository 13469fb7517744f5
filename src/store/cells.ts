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

export function makeCell(family: string, qualifier: Uint8Array, timestamp: number, value: Uint8Array): Cell {
  return { family, qualifier, timestamp, value, labels: NO_LABELS };
}

/** Inserts or replaces `cell` in a canonical array (returns a new array; input untouched). */
export function upsertCell(cells: readonly Cell[], cell: Cell): Cell[] {
  let lo = 0;
  let hi = cells.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareCells(cells[mid] as Cell, cell);
    if (c < 0) lo = mid + 1;
    else if (c > 0) hi = mid;
    else {
      const out = cells.slice();
      out[mid] = cell;
      return out;
    }
  }
  const out = cells.slice();
  out.splice(lo, 0, cell);
  return out;
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
  for (const c of cells) n += c.family.length + c.qualifier.byteLength + c.value.byteLength + 12;
  return n;
}
