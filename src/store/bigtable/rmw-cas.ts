/**
 * readModifyWriteRow as read + CheckAndMutateRow (compare-and-set), used when the backend must
 * choose the cells' timestamps itself: with an injected clock (`StoreOptions.nowMicros`) and
 * with timestampScale 1000 (the server would stamp wire µs that read back ÷1000). Same semantics
 * as the embedded store: each rule works on the newest version of its column after GC (an
 * absent cell is empty / 0), rules apply in order, the new cell's timestamp is
 * max(clock in ms × 1000, previous newest timestamp), so it replaces the previous cell when that
 * one is in the future.
 *
 * The write is conditional on every touched column still being exactly as read:
 * - present column c with newest cell L: U(c) = chain[column c, cellsPerColumnLimit 1,
 *   timestamp [L.ts, L.ts+1), value [L.value, L.value]] emits L iff unchanged;
 * - absent column c: E(c) = condition{c ? nothing : passAll} emits the row iff c is still empty.
 * AND(a, b) = condition{predicate a, true b} emits b's output iff both hold; a balanced tree keeps
 * the nesting depth logarithmic. When at least one column is present the row is non-empty, so
 * the tree emits something exactly when all hold and the mutations go in `trueMutations`. When
 * all columns were absent, the predicate is "any of them has a cell" and the mutations go in
 * `falseMutations`. A lost race retries (the caller serializes same-row calls in-process).
 */
import { bytesKey } from '../bytes.js';
import { makeCell } from '../cells.js';
import { ruleValue } from '../rmw-rule.js';
import type { Bytes, Cell, Mutation, ReadModifyWriteRule, RowFilter } from '../types.js';

export interface Column {
  readonly family: string;
  readonly qualifier: Bytes;
}

export const columnKey = (family: string, qualifier: Bytes): string => `${family}\u0000${bytesKey(qualifier)}`;

/** Distinct columns touched by the rules, in first-use order. */
export function ruleColumns(rules: readonly ReadModifyWriteRule[]): Column[] {
  const seen = new Map<string, Column>();
  for (const r of rules) {
    const k = columnKey(r.familyName, r.columnQualifier);
    if (!seen.has(k)) seen.set(k, { family: r.familyName, qualifier: r.columnQualifier });
  }
  return [...seen.values()];
}

function exact(c: Column): RowFilter {
  return { columnRangeFilter: { familyName: c.family, startQualifierClosed: c.qualifier, endQualifierClosed: c.qualifier } };
}

/** Reads the newest version of each column. */
export function newestVersionsFilter(cols: readonly Column[]): RowFilter {
  const sel: RowFilter = cols.length === 1 ? exact(cols[0] as Column) : { interleave: cols.map(exact) };
  return { chain: [sel, { cellsPerColumnLimitFilter: 1 }] };
}

/** Applies the rules to the newest cells; returns the new cells by column (NOT_AN_INT64 on a bad increment: rmw-rule.ts). */
export function applyRules(
  rules: readonly ReadModifyWriteRule[],
  latest: ReadonlyMap<string, Cell>,
  stamp: number,
  table: string,
  key: Bytes,
): Map<string, Cell> {
  const current = new Map(latest);
  const touched = new Map<string, Cell>();
  for (const r of rules) {
    const k = columnKey(r.familyName, r.columnQualifier);
    const prev = current.get(k);
    const value = ruleValue(r, prev?.value, table, key);
    const cell = makeCell(r.familyName, r.columnQualifier, Math.max(stamp, prev?.timestamp ?? 0), value);
    current.set(k, cell);
    touched.set(k, cell);
  }
  return touched;
}

function and(filters: readonly RowFilter[]): RowFilter {
  if (filters.length === 1) return filters[0] as RowFilter;
  const mid = filters.length >> 1;
  return { condition: { predicateFilter: and(filters.slice(0, mid)), trueFilter: and(filters.slice(mid)) } };
}

/**
 * The CAS condition for `cols` as read (`latest`). `writeWhen` says which branch of
 * CheckAndMutateRow carries the writes.
 */
export function unchangedCondition(
  cols: readonly Column[],
  latest: ReadonlyMap<string, Cell>,
): { predicate: RowFilter; writeWhen: boolean } {
  const present = cols.filter((c) => latest.has(columnKey(c.family, c.qualifier)));
  if (present.length === 0) {
    const any: RowFilter = cols.length === 1 ? exact(cols[0] as Column) : { interleave: cols.map(exact) };
    return { predicate: any, writeWhen: false };
  }
  const leaves: RowFilter[] = cols.map((c) => {
    const l = latest.get(columnKey(c.family, c.qualifier));
    if (l === undefined) return { condition: { predicateFilter: exact(c), falseFilter: { passAllFilter: true } } };
    return {
      chain: [
        exact(c),
        { cellsPerColumnLimitFilter: 1 },
        { timestampRangeFilter: { startTimestampMicros: l.timestamp, endTimestampMicros: l.timestamp + 1 } },
        { valueRangeFilter: { startValueClosed: l.value, endValueClosed: l.value } },
      ],
    };
  });
  return { predicate: and(leaves), writeWhen: true };
}

export function setCellsOf(cells: Iterable<Cell>): Mutation[] {
  return [...cells].map((c) => ({
    setCell: { familyName: c.family, columnQualifier: c.qualifier, timestampMicros: c.timestamp, value: c.value },
  }));
}
