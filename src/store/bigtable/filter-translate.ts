/**
 * Our RowFilter → the v2 proto RowFilter the gapic client sends (the shapes match field by
 * field; only repeated wrappers, bytes and int64 timestamps differ).
 *
 * Rewrites that keep the documented meaning but avoid constructs some servers reject
 * (docs/bigtable-backend.md, "Filter translation"):
 * - a chain of 0 filters → passAll, of 1 → that filter; an interleave of 0 → blockAll, of 1 →
 *   that filter (the emulator demands at least two);
 * - cellsPerRowLimit / cellsPerColumnLimit 0 → blockAll, cellsPerRowOffset 0 → passAll, an
 *   empty rowKeyRegex → blockAll (no row key is empty), an empty timestamp range → blockAll
 *   (the emulator rejects zero arguments and empty regexes);
 * - timestamp bounds are scaled (and rounded up to ms for millisecond servers, see timestamps.ts).
 *
 * `emulatorUnsafe` tells which filters Google's emulator evaluates differently from the
 * documentation; with `?emulator=1` the backend evaluates those on the client instead.
 */
import type { protos } from '@google-cloud/bigtable';
import { asBuffer, utf8 } from '../bytes.js';
import { filterKind } from '../filter/validate-filter.js';
import type { Bytes, RowFilter } from '../types.js';
import type { TimestampMapping } from './timestamps.js';

export type ProtoRowFilter = protos.google.bigtable.v2.IRowFilter;

const bytes = (b: Bytes | string): Buffer => (typeof b === 'string' ? Buffer.from(utf8(b)) : Buffer.from(asBuffer(b)));

/** Translates a validated filter. */
export function toProtoFilter(f: RowFilter, ts: TimestampMapping): ProtoRowFilter {
  const kind = filterKind(f);
  const v = (f as Record<string, unknown>)[kind];
  switch (kind) {
    case 'chain': {
      const subs = (v as readonly RowFilter[]).map((s) => toProtoFilter(s, ts));
      if (subs.length === 0) return { passAllFilter: true };
      if (subs.length === 1) return subs[0] as ProtoRowFilter;
      return { chain: { filters: subs } };
    }
    case 'interleave': {
      const subs = (v as readonly RowFilter[]).map((s) => toProtoFilter(s, ts));
      if (subs.length === 0) return { blockAllFilter: true };
      if (subs.length === 1) return subs[0] as ProtoRowFilter;
      return { interleave: { filters: subs } };
    }
    case 'condition': {
      const c = v as { predicateFilter: RowFilter; trueFilter?: RowFilter; falseFilter?: RowFilter };
      const out: protos.google.bigtable.v2.RowFilter.ICondition = { predicateFilter: toProtoFilter(c.predicateFilter, ts) };
      if (c.trueFilter !== undefined) out.trueFilter = toProtoFilter(c.trueFilter, ts);
      if (c.falseFilter !== undefined) out.falseFilter = toProtoFilter(c.falseFilter, ts);
      return { condition: out };
    }
    case 'sink':
      return { sink: true };
    case 'passAllFilter':
      return { passAllFilter: true };
    case 'blockAllFilter':
      return { blockAllFilter: true };
    case 'rowKeyRegexFilter': {
      const re = bytes(v as Bytes | string);
      return re.byteLength === 0 ? { blockAllFilter: true } : { rowKeyRegexFilter: re };
    }
    case 'rowSampleFilter':
      return { rowSampleFilter: v as number };
    case 'familyNameRegexFilter':
      return { familyNameRegexFilter: v as string };
    case 'columnQualifierRegexFilter':
      return { columnQualifierRegexFilter: bytes(v as Bytes | string) };
    case 'columnRangeFilter': {
      const r = v as {
        familyName: string;
        startQualifierClosed?: Bytes;
        startQualifierOpen?: Bytes;
        endQualifierClosed?: Bytes;
        endQualifierOpen?: Bytes;
      };
      const out: protos.google.bigtable.v2.IColumnRange = { familyName: r.familyName };
      if (r.startQualifierClosed !== undefined) out.startQualifierClosed = bytes(r.startQualifierClosed);
      if (r.startQualifierOpen !== undefined) out.startQualifierOpen = bytes(r.startQualifierOpen);
      if (r.endQualifierClosed !== undefined) out.endQualifierClosed = bytes(r.endQualifierClosed);
      if (r.endQualifierOpen !== undefined) out.endQualifierOpen = bytes(r.endQualifierOpen);
      return { columnRangeFilter: out };
    }
    case 'timestampRangeFilter': {
      const r = v as { startTimestampMicros?: number; endTimestampMicros?: number };
      const w = ts.rangeToWire(r.startTimestampMicros, r.endTimestampMicros);
      if (w === null) return { blockAllFilter: true };
      const out: protos.google.bigtable.v2.ITimestampRange = {};
      if (w.start !== 0n) out.startTimestampMicros = w.start.toString();
      if (w.end !== 0n) out.endTimestampMicros = w.end.toString();
      return { timestampRangeFilter: out };
    }
    case 'valueRegexFilter':
      return { valueRegexFilter: bytes(v as Bytes | string) };
    case 'valueRangeFilter': {
      const r = v as { startValueClosed?: Bytes; startValueOpen?: Bytes; endValueClosed?: Bytes; endValueOpen?: Bytes };
      const out: protos.google.bigtable.v2.IValueRange = {};
      if (r.startValueClosed !== undefined) out.startValueClosed = bytes(r.startValueClosed);
      if (r.startValueOpen !== undefined) out.startValueOpen = bytes(r.startValueOpen);
      if (r.endValueClosed !== undefined) out.endValueClosed = bytes(r.endValueClosed);
      if (r.endValueOpen !== undefined) out.endValueOpen = bytes(r.endValueOpen);
      return { valueRangeFilter: out };
    }
    case 'cellsPerRowOffsetFilter':
      return (v as number) === 0 ? { passAllFilter: true } : { cellsPerRowOffsetFilter: v as number };
    case 'cellsPerRowLimitFilter':
      return (v as number) === 0 ? { blockAllFilter: true } : { cellsPerRowLimitFilter: v as number };
    case 'cellsPerColumnLimitFilter':
      return (v as number) === 0 ? { blockAllFilter: true } : { cellsPerColumnLimitFilter: v as number };
    case 'stripValueTransformer':
      return { stripValueTransformer: true };
    case 'applyLabelTransformer':
      return { applyLabelTransformer: v as string };
  }
}

interface Found {
  sink: boolean;
  perRow: boolean;
  strip: boolean;
  label: boolean;
}

function scan(f: RowFilter, found: Found): void {
  const kind = filterKind(f);
  const v = (f as Record<string, unknown>)[kind];
  switch (kind) {
    case 'chain':
    case 'interleave':
      for (const s of v as readonly RowFilter[]) scan(s, found);
      return;
    case 'condition': {
      const c = v as { predicateFilter: RowFilter; trueFilter?: RowFilter; falseFilter?: RowFilter };
      scan(c.predicateFilter, found);
      if (c.trueFilter !== undefined) scan(c.trueFilter, found);
      if (c.falseFilter !== undefined) scan(c.falseFilter, found);
      return;
    }
    case 'sink':
      found.sink = true;
      return;
    case 'cellsPerRowOffsetFilter':
    case 'cellsPerRowLimitFilter':
      if ((v as number) > 0) found.perRow = true;
      return;
    case 'stripValueTransformer':
      found.strip = true;
      return;
    case 'applyLabelTransformer':
      found.label = true;
      return;
    default:
      return;
  }
}

/**
 * Whether Google's emulator may evaluate `f` differently from the documentation: it ignores
 * `sink`, walks families in random order for cellsPerRowOffset/Limit, and drops labels in
 * stripValueTransformer. (Validated filters cannot put two labels on one cell.)
 */
export function emulatorUnsafe(f: RowFilter): boolean {
  const found: Found = { sink: false, perRow: false, strip: false, label: false };
  scan(f, found);
  return found.sink || found.perRow || (found.strip && found.label);
}
