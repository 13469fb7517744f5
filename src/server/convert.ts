/**
 * Translation between decoded v2 / admin v2 proto messages (see `protos.ts` for the loader
 * options) and the store's types (`src/store/types.ts`, which mirror the protos field by field).
 *
 * Rules:
 * - Only the wire shape is checked here (a oneof member is set, int64 values fit in a safe
 *   integer, nesting is bounded); semantics (family exists, ranges ordered, regexes compile,
 *   limits) are the store's job, so every backend reports the same errors.
 * - Proto3 defaults are applied explicitly: absent bytes are empty, absent numbers are 0.
 * - Resource names: `projects/P/instances/I/tables/T` maps to store table T for ANY project
 *   and instance (one store serves them all; see docs/server.md).
 */
import type {
  Bytes,
  Cell,
  FamilySpec,
  GcRule,
  Mutation,
  ReadModifyWriteRule,
  Row,
  RowFilter,
  RowRange,
  RowSet,
  TableSpec,
  TimestampRange,
} from '../store/types.js';
import type {
  WireColumnFamily,
  WireDuration,
  WireGcRule,
  WireMutation,
  WireReadModifyWriteRule,
  WireRowFilter,
  WireRowRange,
  WireRowSet,
  WireTimestampRange,
} from './protos.js';
import { invalidArgument, unimplemented } from './status.js';

const EMPTY: Bytes = new Uint8Array(0);

/** Deepest RowFilter / GcRule nesting accepted on the wire (the store allows 20 for filters). */
export const MAX_WIRE_NESTING = 64;

// ---------------------------------------------------------------------------------------------
// Resource names

const TABLE_NAME = /^projects\/([^/]+)\/instances\/([^/]+)\/tables\/([^/]+)$/;
const INSTANCE_NAME = /^projects\/([^/]+)\/instances\/([^/]+)$/;

export interface TableRef {
  readonly project: string;
  readonly instance: string;
  readonly table: string;
  /** The full resource name, as the client sent it. */
  readonly name: string;
}

export interface InstanceRef {
  readonly project: string;
  readonly instance: string;
  readonly name: string;
}

export function parseTableName(name: string | undefined, field = 'table_name'): TableRef {
  const m = TABLE_NAME.exec(name ?? '');
  if (m === null) {
    throw invalidArgument(
      `${field} must look like projects/<project>/instances/<instance>/tables/<table>, got ${JSON.stringify(name ?? '')}`,
    );
  }
  return { project: m[1] as string, instance: m[2] as string, table: m[3] as string, name: name as string };
}

export function parseInstanceName(name: string | undefined, field = 'parent'): InstanceRef {
  const m = INSTANCE_NAME.exec(name ?? '');
  if (m === null)
    throw invalidArgument(`${field} must look like projects/<project>/instances/<instance>, got ${JSON.stringify(name ?? '')}`);
  return { project: m[1] as string, instance: m[2] as string, name: name as string };
}

export function tableResourceName(instance: InstanceRef | TableRef, table: string): string {
  return `projects/${instance.project}/instances/${instance.instance}/tables/${table}`;
}

// ---------------------------------------------------------------------------------------------
// Scalars

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);

/** An int64 decimal string (or absent = 0) as a safe JS integer; INVALID_ARGUMENT otherwise. */
export function int64(value: string | number | undefined, what: string): number {
  if (value === undefined) return 0;
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) return value;
    throw invalidArgument(`${what} ${value} is outside the supported range (|x| < 2^53)`);
  }
  let big: bigint;
  try {
    big = BigInt(value);
  } catch {
    throw invalidArgument(`${what} is not an integer: ${JSON.stringify(value)}`);
  }
  if (big > MAX_SAFE || big < MIN_SAFE) throw invalidArgument(`${what} ${value} is outside the supported range (|x| < 2^53)`);
  return Number(big);
}

/**
 * An int64 that only bounds something the store holds fewer than 2^53 of (timestamps, rows): a
 * value past that bound is as far as `Number.MAX_SAFE_INTEGER`, and returned as `null` for the
 * caller to map. Clients send such values on purpose — HBase's "latest timestamp" arrives as
 * 9223372036854775000 µs in the time ranges of filters and deletes, `rows_limit` as 2^63 − 1.
 */
function int64Bound(value: string | number | undefined, what: string): number | null {
  if (typeof value === 'string' && value.length > 15 && !value.startsWith('-')) {
    let big: bigint;
    try {
      big = BigInt(value);
    } catch {
      throw invalidArgument(`${what} is not an integer: ${JSON.stringify(value)}`);
    }
    if (big > MAX_SAFE) return null;
  }
  if (typeof value === 'number' && value > Number.MAX_SAFE_INTEGER && Number.isInteger(value)) return null;
  return int64(value, what);
}

/** `rows_limit`: 0 = none; a limit past 2^53 is none either (no table holds that many rows). */
export function rowsLimitFromWire(value: string | number | undefined): number {
  return int64Bound(value, 'rows_limit') ?? 0;
}

/** The full signed 64-bit value (ReadModifyWrite increments). */
export function int64Big(value: string | undefined): bigint {
  if (value === undefined) return 0n;
  try {
    return BigInt(value);
  } catch {
    throw invalidArgument(`not an int64: ${JSON.stringify(value)}`);
  }
}

function bytes(b: Buffer | undefined): Bytes {
  return b ?? EMPTY;
}

// ---------------------------------------------------------------------------------------------
// Row sets, ranges, timestamps

/**
 * A time range of a filter or a delete. Stored timestamps are below 2^53, so a bound past that is
 * exact when mapped: an end past it is no end (0), and a start past it (with no end, or one past
 * it too) selects nothing — the empty range [2^53 − 1, 2^53 − 1). An end before its start is left
 * for the store to refuse (INVALID_RANGE), as for any other range.
 */
export function timestampRangeFromWire(r: WireTimestampRange, what: string): TimestampRange {
  const start = int64Bound(r.startTimestampMicros, `${what}.start_timestamp_micros`);
  const end = int64Bound(r.endTimestampMicros, `${what}.end_timestamp_micros`);
  if (start === null) {
    if (end !== null && end !== 0) {
      throw invalidArgument(`${what}: start_timestamp_micros ${String(r.startTimestampMicros)} is after end_timestamp_micros ${end}`);
    }
    return { startTimestampMicros: Number.MAX_SAFE_INTEGER, endTimestampMicros: Number.MAX_SAFE_INTEGER };
  }
  return { startTimestampMicros: start, endTimestampMicros: end ?? 0 };
}

function rowRangeFromWire(r: WireRowRange): RowRange {
  const out: { -readonly [K in keyof RowRange]: RowRange[K] } = {};
  if (r.startKeyClosed !== undefined) out.startKeyClosed = r.startKeyClosed;
  if (r.startKeyOpen !== undefined) out.startKeyOpen = r.startKeyOpen;
  if (r.endKeyClosed !== undefined) out.endKeyClosed = r.endKeyClosed;
  if (r.endKeyOpen !== undefined) out.endKeyOpen = r.endKeyOpen;
  return out;
}

export function rowSetFromWire(s: WireRowSet | undefined): RowSet | undefined {
  if (s === undefined) return undefined;
  return { rowKeys: s.rowKeys ?? [], rowRanges: (s.rowRanges ?? []).map(rowRangeFromWire) };
}

// ---------------------------------------------------------------------------------------------
// Filters

/** A RowFilter message → the store's RowFilter (validated by the store afterwards). */
export function rowFilterFromWire(f: WireRowFilter, path = 'filter', depth = 0): RowFilter {
  if (depth > MAX_WIRE_NESTING) throw invalidArgument(`${path}: filters nest deeper than ${MAX_WIRE_NESTING}`);
  const sub = (g: WireRowFilter | undefined, p: string): RowFilter | undefined =>
    g === undefined ? undefined : rowFilterFromWire(g, p, depth + 1);
  switch (f.filter) {
    case 'chain':
      return { chain: (f.chain?.filters ?? []).map((g, i) => rowFilterFromWire(g, `${path}.chain[${i}]`, depth + 1)) };
    case 'interleave':
      return { interleave: (f.interleave?.filters ?? []).map((g, i) => rowFilterFromWire(g, `${path}.interleave[${i}]`, depth + 1)) };
    case 'condition': {
      const c = f.condition ?? {};
      const predicateFilter = sub(c.predicateFilter, `${path}.condition.predicateFilter`);
      if (predicateFilter === undefined) throw invalidArgument(`${path}.condition: predicate_filter is required`);
      const trueFilter = sub(c.trueFilter, `${path}.condition.trueFilter`);
      const falseFilter = sub(c.falseFilter, `${path}.condition.falseFilter`);
      return {
        condition: {
          predicateFilter,
          ...(trueFilter === undefined ? {} : { trueFilter }),
          ...(falseFilter === undefined ? {} : { falseFilter }),
        },
      };
    }
    // Booleans are passed as sent: the store rejects `false` (a oneof member set to false).
    case 'sink':
      return { sink: f.sink === true } as RowFilter;
    case 'passAllFilter':
      return { passAllFilter: f.passAllFilter === true } as RowFilter;
    case 'blockAllFilter':
      return { blockAllFilter: f.blockAllFilter === true } as RowFilter;
    case 'stripValueTransformer':
      return { stripValueTransformer: f.stripValueTransformer === true } as RowFilter;
    case 'rowKeyRegexFilter':
      return { rowKeyRegexFilter: bytes(f.rowKeyRegexFilter) };
    case 'rowSampleFilter':
      return { rowSampleFilter: f.rowSampleFilter ?? 0 };
    case 'familyNameRegexFilter':
      return { familyNameRegexFilter: f.familyNameRegexFilter ?? '' };
    case 'columnQualifierRegexFilter':
      return { columnQualifierRegexFilter: bytes(f.columnQualifierRegexFilter) };
    case 'columnRangeFilter': {
      const r = f.columnRangeFilter ?? {};
      return {
        columnRangeFilter: {
          familyName: r.familyName ?? '',
          ...(r.startQualifierClosed !== undefined ? { startQualifierClosed: r.startQualifierClosed } : {}),
          ...(r.startQualifierOpen !== undefined ? { startQualifierOpen: r.startQualifierOpen } : {}),
          ...(r.endQualifierClosed !== undefined ? { endQualifierClosed: r.endQualifierClosed } : {}),
          ...(r.endQualifierOpen !== undefined ? { endQualifierOpen: r.endQualifierOpen } : {}),
        },
      };
    }
    case 'timestampRangeFilter':
      return { timestampRangeFilter: timestampRangeFromWire(f.timestampRangeFilter ?? {}, `${path}.timestamp_range_filter`) };
    case 'valueRegexFilter':
      return { valueRegexFilter: bytes(f.valueRegexFilter) };
    case 'valueRangeFilter': {
      const r = f.valueRangeFilter ?? {};
      return {
        valueRangeFilter: {
          ...(r.startValueClosed !== undefined ? { startValueClosed: r.startValueClosed } : {}),
          ...(r.startValueOpen !== undefined ? { startValueOpen: r.startValueOpen } : {}),
          ...(r.endValueClosed !== undefined ? { endValueClosed: r.endValueClosed } : {}),
          ...(r.endValueOpen !== undefined ? { endValueOpen: r.endValueOpen } : {}),
        },
      };
    }
    case 'cellsPerRowOffsetFilter':
      return { cellsPerRowOffsetFilter: f.cellsPerRowOffsetFilter ?? 0 };
    case 'cellsPerRowLimitFilter':
      return { cellsPerRowLimitFilter: f.cellsPerRowLimitFilter ?? 0 };
    case 'cellsPerColumnLimitFilter':
      return { cellsPerColumnLimitFilter: f.cellsPerColumnLimitFilter ?? 0 };
    case 'applyLabelTransformer':
      return { applyLabelTransformer: f.applyLabelTransformer ?? '' };
    default:
      throw invalidArgument(`${path}: a RowFilter must set exactly one filter`);
  }
}

// ---------------------------------------------------------------------------------------------
// Mutations and read-modify-write rules

export function mutationFromWire(m: WireMutation, path: string): Mutation {
  switch (m.mutation) {
    case 'setCell': {
      const s = m.setCell ?? {};
      return {
        setCell: {
          familyName: s.familyName ?? '',
          columnQualifier: bytes(s.columnQualifier),
          timestampMicros: int64(s.timestampMicros, `${path}.set_cell.timestamp_micros`),
          value: bytes(s.value),
        },
      };
    }
    case 'deleteFromColumn': {
      const d = m.deleteFromColumn ?? {};
      return {
        deleteFromColumn: {
          familyName: d.familyName ?? '',
          columnQualifier: bytes(d.columnQualifier),
          ...(d.timeRange === undefined ? {} : { timeRange: timestampRangeFromWire(d.timeRange, `${path}.delete_from_column.time_range`) }),
        },
      };
    }
    case 'deleteFromFamily':
      return { deleteFromFamily: { familyName: m.deleteFromFamily?.familyName ?? '' } };
    case 'deleteFromRow':
      return { deleteFromRow: {} };
    case 'addToCell':
    case 'mergeToCell':
      throw unimplemented(`${path}: ${m.mutation} (aggregate column families) is not supported by this server`);
    default:
      throw invalidArgument(`${path}: a Mutation must set exactly one mutation`);
  }
}

export function mutationsFromWire(ms: readonly WireMutation[] | undefined, path: string): Mutation[] {
  return (ms ?? []).map((m, i) => mutationFromWire(m, `${path}[${i}]`));
}

export function ruleFromWire(r: WireReadModifyWriteRule, path: string): ReadModifyWriteRule {
  const familyName = r.familyName ?? '';
  const columnQualifier = bytes(r.columnQualifier);
  if (r.rule === 'appendValue') return { familyName, columnQualifier, appendValue: bytes(r.appendValue) };
  if (r.rule === 'incrementAmount') return { familyName, columnQualifier, incrementAmount: int64Big(r.incrementAmount) };
  throw invalidArgument(`${path}: a ReadModifyWriteRule must set append_value or increment_amount`);
}

// ---------------------------------------------------------------------------------------------
// Rows (ReadModifyWriteRow responses)

export interface WireRowOut {
  key: Bytes;
  families: {
    name: string;
    columns: { qualifier: Bytes; cells: { timestampMicros: string; value: Bytes; labels: readonly string[] }[] }[];
  }[];
}

/** Groups a row's cells (canonical order) into the Row → Family → Column → Cell message. */
export function rowToWire(row: Row): WireRowOut {
  const families: WireRowOut['families'] = [];
  let fam: WireRowOut['families'][number] | undefined;
  let col: WireRowOut['families'][number]['columns'][number] | undefined;
  for (const c of row.cells as readonly Cell[]) {
    if (fam === undefined || fam.name !== c.family) {
      fam = { name: c.family, columns: [] };
      families.push(fam);
      col = undefined;
    }
    if (col === undefined || Buffer.compare(col.qualifier, c.qualifier) !== 0) {
      col = { qualifier: c.qualifier, cells: [] };
      fam.columns.push(col);
    }
    col.cells.push({ timestampMicros: String(c.timestamp), value: c.value, labels: c.labels });
  }
  return { key: row.key, families };
}

// ---------------------------------------------------------------------------------------------
// Admin: GC rules, families, tables

export function gcRuleFromWire(r: WireGcRule, path = 'gc_rule', depth = 0): GcRule | undefined {
  if (depth > MAX_WIRE_NESTING) throw invalidArgument(`${path}: GC rules nest deeper than ${MAX_WIRE_NESTING}`);
  const subs = (rules: WireGcRule[] | undefined, p: string): GcRule[] =>
    (rules ?? []).map((g, i) => {
      const rule = gcRuleFromWire(g, `${p}[${i}]`, depth + 1);
      if (rule === undefined) throw invalidArgument(`${p}[${i}]: an empty GcRule inside a union or intersection`);
      return rule;
    });
  switch (r.rule) {
    case 'maxNumVersions':
      return { maxNumVersions: r.maxNumVersions ?? 0 };
    case 'maxAge':
      return { maxAgeMicros: durationToMicros(r.maxAge ?? {}, `${path}.max_age`) };
    case 'intersection':
      return { intersection: subs(r.intersection?.rules, `${path}.intersection.rules`) };
    case 'union':
      return { union: subs(r.union?.rules, `${path}.union.rules`) };
    default:
      // An empty GcRule message: no garbage collection (keep every version).
      return undefined;
  }
}

export function durationToMicros(d: WireDuration, what: string): number {
  const seconds = int64(d.seconds, `${what}.seconds`);
  const nanos = d.nanos ?? 0;
  if (!Number.isInteger(nanos) || nanos <= -1e9 || nanos >= 1e9) throw invalidArgument(`${what}.nanos must be in (-1e9, 1e9)`);
  const micros = seconds * 1_000_000 + Math.trunc(nanos / 1000);
  if (!Number.isSafeInteger(micros)) throw invalidArgument(`${what} is too large`);
  return micros;
}

export function gcRuleToWire(rule: GcRule | undefined): Record<string, unknown> {
  if (rule === undefined) return {};
  if ('maxNumVersions' in rule) return { maxNumVersions: rule.maxNumVersions };
  if ('maxAgeMicros' in rule) {
    const seconds = Math.floor(rule.maxAgeMicros / 1_000_000);
    return { maxAge: { seconds: String(seconds), nanos: (rule.maxAgeMicros - seconds * 1_000_000) * 1000 } };
  }
  if ('intersection' in rule) return { intersection: { rules: rule.intersection.map(gcRuleToWire) } };
  return { union: { rules: rule.union.map(gcRuleToWire) } };
}

export function familySpecFromWire(cf: WireColumnFamily | undefined, path: string, localityGroup?: string): FamilySpec {
  if (cf?.valueType !== undefined) throw unimplemented(`${path}: typed (aggregate) column families are not supported by this server`);
  const gcRule = cf?.gcRule === undefined ? undefined : gcRuleFromWire(cf.gcRule, `${path}.gc_rule`);
  return {
    ...(gcRule === undefined ? {} : { gcRule }),
    ...(localityGroup === undefined ? {} : { localityGroup }),
  };
}

export type TableView = 'NAME_ONLY' | 'SCHEMA_VIEW' | 'REPLICATION_VIEW' | 'ENCRYPTION_VIEW' | 'FULL' | 'VIEW_UNSPECIFIED';

/** The admin `Table` message for a store table in the given view. */
export function tableToWire(name: string, spec: TableSpec | null, view: TableView): Record<string, unknown> {
  const out: Record<string, unknown> = { name };
  if (spec !== null && (view === 'SCHEMA_VIEW' || view === 'FULL')) {
    const columnFamilies: Record<string, unknown> = {};
    for (const [id, fs] of Object.entries(spec.families)) columnFamilies[id] = { gcRule: gcRuleToWire(fs.gcRule) };
    out.columnFamilies = columnFamilies;
    out.granularity = 'MILLIS';
  }
  if (view === 'REPLICATION_VIEW' || view === 'FULL') {
    out.clusterStates = { [CLUSTER_ID]: { replicationState: 'READY' } };
  }
  return out;
}

/** The one synthetic cluster every instance reports (see the instance admin subset). */
export const CLUSTER_ID = 'percolator';
