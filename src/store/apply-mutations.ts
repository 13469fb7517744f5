/**
 * Applies v2 mutations to a row's canonical cell array, in order. Pure: the input is not
 * modified. Mutations are validated beforehand (validate.ts), so nothing here throws for input.
 */
import { bytesEqual } from './bytes.js';
import { makeCell, upsertCellInPlace } from './cells.js';
import type { Cell, Mutation } from './types.js';

export function applyMutations(cells: readonly Cell[], mutations: readonly Mutation[], serverMicros: () => number): readonly Cell[] {
  // `own`: our copy once a cell is set, updated in place by later sets (one copy per call, not one per set).
  let out: readonly Cell[] = cells;
  let own: Cell[] | null = null;
  for (const m of mutations) {
    if ('setCell' in m) {
      const s = m.setCell;
      const ts = s.timestampMicros === -1 ? serverMicros() : s.timestampMicros;
      if (own === null) out = own = out.slice();
      upsertCellInPlace(own, makeCell(s.familyName, s.columnQualifier, ts, s.value));
    } else if ('deleteFromColumn' in m) {
      const d = m.deleteFromColumn;
      const start = d.timeRange?.startTimestampMicros ?? 0;
      const end = d.timeRange?.endTimestampMicros || Number.POSITIVE_INFINITY;
      out = own = out.filter(
        (c) => !(c.family === d.familyName && c.timestamp >= start && c.timestamp < end && bytesEqual(c.qualifier, d.columnQualifier)),
      );
    } else if ('deleteFromFamily' in m) {
      const f = m.deleteFromFamily.familyName;
      out = own = out.filter((c) => c.family !== f);
    } else {
      out = own = [];
    }
  }
  return out;
}
