/**
 * Up-front validation of a v2 RowFilter tree, so that a bad filter fails the whole request
 * before any row is read (and a checkAndMutate writes nothing), with the path of the offending
 * node in `details.path` (e.g. `chain[1].condition.trueFilter`).
 *
 * Rules (Cloud Bigtable data.proto unless noted):
 * - Every node is an object with exactly one known property; properties whose value is
 *   `undefined` count as absent (so `{ ...a, ...b }` builders behave).
 * - Boolean variants (`sink`, `passAllFilter`, `blockAllFilter`, `stripValueTransformer`)
 *   must be `true` (the emulator rejects `false` the same way).
 * - Chains/interleaves/conditions nest at most 20 deep.
 * - `sink` may not appear anywhere inside a condition (predicate, true or false filter).
 * - A label is 1–15 characters of `[a-z0-9-]`; a chain may have at most one sub-filter that
 *   contains an `applyLabelTransformer` (a cell can carry only one label).
 * - Offsets and limits are int32 ≥ 0; the sample probability is in (0, 1).
 * - Ranges: a side may not have both a closed and an open bound; start > end is an error
 *   (start = end with an open side is just empty). Timestamps are non-negative safe integers,
 *   end 0 = infinity; millisecond granularity is NOT enforced here (the table does that).
 * - `familyNameRegexFilter` may not contain `:` (data.proto), and every regex must compile.
 * Deliberately lenient vs the emulator: chains and interleaves of 0 or 1 filters are accepted
 * (identity / block-all for empty; the lone filter itself for one).
 */
import { compareBytes } from '../bytes.js';
import { StoreError } from '../errors.js';
import type { RowFilter } from '../types.js';
import { compileRegex, latin1Of } from './re2-regex.js';

export const MAX_FILTER_DEPTH = 20;
const INT32_MAX = 0x7fffffff;
const LABEL_RE = /^[a-z0-9-]{1,15}$/;

export const FILTER_KINDS = [
  'chain',
  'interleave',
  'condition',
  'sink',
  'passAllFilter',
  'blockAllFilter',
  'rowKeyRegexFilter',
  'rowSampleFilter',
  'familyNameRegexFilter',
  'columnQualifierRegexFilter',
  'columnRangeFilter',
  'timestampRangeFilter',
  'valueRegexFilter',
  'valueRangeFilter',
  'cellsPerRowOffsetFilter',
  'cellsPerRowLimitFilter',
  'cellsPerColumnLimitFilter',
  'stripValueTransformer',
  'applyLabelTransformer',
] as const;
export type FilterKind = (typeof FILTER_KINDS)[number];
const KNOWN = new Set<string>(FILTER_KINDS);

function bad(path: string, message: string, extra: Record<string, unknown> = {}): StoreError {
  return new StoreError('INVALID_FILTER', `invalid filter at ${path}: ${message}`, { path, ...extra });
}

/** The single variant name of a filter node (throws INVALID_FILTER if there is not exactly one). */
export function filterKind(f: unknown, path = 'filter'): FilterKind {
  if (typeof f !== 'object' || f === null || Array.isArray(f)) throw bad(path, 'a filter must be an object');
  let kind: string | undefined;
  // for-in, not Object.keys: this runs for every node of every filter, and allocates nothing.
  for (const k in f) {
    if (!Object.hasOwn(f, k) || (f as Record<string, unknown>)[k] === undefined) continue;
    if (!KNOWN.has(k)) throw bad(path, `unknown filter property "${k}"`);
    if (kind !== undefined) throw bad(path, `a filter must set exactly one property, found "${kind}" and "${k}"`);
    kind = k;
  }
  if (kind === undefined) throw bad(path, 'a filter must set exactly one property, found none');
  return kind as FilterKind;
}

/** Throws StoreError INVALID_FILTER / INVALID_REGEX if `filter` is not a valid RowFilter. */
export function validateFilter(filter: RowFilter): void {
  check(filter, 'filter', 0, false);
}

/** Validates `f`; returns whether it contains an applyLabelTransformer. */
function check(f: RowFilter, path: string, depth: number, inCondition: boolean): boolean {
  const kind = filterKind(f, path);
  const v = (f as Record<string, unknown>)[kind];
  switch (kind) {
    case 'chain':
    case 'interleave': {
      if (depth >= MAX_FILTER_DEPTH) throw bad(path, `filters nest deeper than ${MAX_FILTER_DEPTH}`);
      if (!Array.isArray(v)) throw bad(path, `${kind} must be an array of filters`);
      let labelled: number | undefined;
      let any = false;
      for (let i = 0; i < v.length; i++) {
        const has = check(v[i] as RowFilter, `${path}.${kind}[${i}]`, depth + 1, inCondition);
        if (has && kind === 'chain' && labelled !== undefined) {
          throw bad(path, `a chain may contain at most one sub-filter with applyLabelTransformer (found in [${labelled}] and [${i}])`);
        }
        if (has) labelled ??= i;
        any ||= has;
      }
      return any;
    }
    case 'condition': {
      if (depth >= MAX_FILTER_DEPTH) throw bad(path, `filters nest deeper than ${MAX_FILTER_DEPTH}`);
      if (typeof v !== 'object' || v === null) throw bad(path, 'condition must be an object');
      const c = v as Record<string, unknown>;
      for (const k of Object.keys(c)) {
        if (c[k] !== undefined && k !== 'predicateFilter' && k !== 'trueFilter' && k !== 'falseFilter') {
          throw bad(path, `unknown condition property "${k}"`);
        }
      }
      if (c.predicateFilter === undefined) throw bad(path, 'condition.predicateFilter is required');
      let any = check(c.predicateFilter as RowFilter, `${path}.condition.predicateFilter`, depth + 1, true);
      if (c.trueFilter !== undefined) any = check(c.trueFilter as RowFilter, `${path}.condition.trueFilter`, depth + 1, true) || any;
      if (c.falseFilter !== undefined) any = check(c.falseFilter as RowFilter, `${path}.condition.falseFilter`, depth + 1, true) || any;
      return any;
    }
    case 'sink':
      if (v !== true) throw bad(path, 'sink must be true');
      if (inCondition) throw bad(path, 'sink cannot be used inside a condition');
      return false;
    case 'passAllFilter':
    case 'blockAllFilter':
    case 'stripValueTransformer':
      if (v !== true) throw bad(path, `${kind} must be true`);
      return false;
    case 'rowKeyRegexFilter':
    case 'columnQualifierRegexFilter':
    case 'valueRegexFilter':
      if (typeof v !== 'string' && !(v instanceof Uint8Array)) throw bad(path, `${kind} must be a string or bytes`);
      regex(v, path, kind);
      return false;
    case 'familyNameRegexFilter':
      if (typeof v !== 'string') throw bad(path, 'familyNameRegexFilter must be a string');
      if (v.includes(':')) {
        throw new StoreError('INVALID_REGEX', `invalid filter at ${path}: familyNameRegexFilter may not contain ':'`, { path, pattern: v });
      }
      regex(v, path, kind);
      return false;
    case 'rowSampleFilter':
      if (typeof v !== 'number' || !(v > 0 && v < 1))
        throw bad(path, 'rowSampleFilter must be a probability strictly between 0 and 1', { value: v });
      return false;
    case 'cellsPerRowOffsetFilter':
    case 'cellsPerRowLimitFilter':
    case 'cellsPerColumnLimitFilter':
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > INT32_MAX) {
        throw bad(path, `${kind} must be an integer in [0, 2^31-1]`, { value: v });
      }
      return false;
    case 'applyLabelTransformer':
      if (typeof v !== 'string' || !LABEL_RE.test(v)) throw bad(path, 'a label must be 1-15 characters of [a-z0-9-]', { label: v });
      return true;
    case 'columnRangeFilter': {
      const r = object(v, path, kind);
      unknownKeys(r, COLUMN_RANGE_KEYS, path, kind);
      if (typeof r.familyName !== 'string' || r.familyName === '')
        throw bad(path, 'columnRangeFilter.familyName must be a non-empty string');
      range(r, QUALIFIER_BOUNDS, path);
      return false;
    }
    case 'valueRangeFilter': {
      const r = object(v, path, kind);
      unknownKeys(r, VALUE_RANGE_KEYS, path, kind);
      range(r, VALUE_RANGE_KEYS, path);
      return false;
    }
    case 'timestampRangeFilter': {
      const r = object(v, path, kind);
      unknownKeys(r, TIMESTAMP_RANGE_KEYS, path, kind);
      const start = r.startTimestampMicros ?? 0;
      const end = r.endTimestampMicros ?? 0;
      if (typeof start !== 'number' || !Number.isSafeInteger(start) || start < 0)
        throw bad(path, 'startTimestampMicros must be a non-negative safe integer', { value: start });
      if (typeof end !== 'number' || !Number.isSafeInteger(end) || end < 0)
        throw bad(path, 'endTimestampMicros must be a non-negative safe integer', { value: end });
      if ((end as number) !== 0 && (start as number) > (end as number))
        throw bad(path, 'timestamp range start is after its end', { start, end });
      return false;
    }
  }
}

function regex(pattern: string | Uint8Array, path: string, kind: string): void {
  try {
    compileRegex(pattern);
  } catch (e) {
    if (e instanceof StoreError) {
      throw new StoreError(
        'INVALID_REGEX',
        `invalid filter at ${path}: ${kind}: ${e.message}`,
        { path, pattern: latin1Of(pattern) },
        { cause: e },
      );
    }
    throw e;
  }
}

function object(v: unknown, path: string, kind: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array) throw bad(path, `${kind} must be an object`);
  return v as Record<string, unknown>;
}

const COLUMN_RANGE_KEYS = ['familyName', 'startQualifierClosed', 'startQualifierOpen', 'endQualifierClosed', 'endQualifierOpen'] as const;
const VALUE_RANGE_KEYS = ['startValueClosed', 'startValueOpen', 'endValueClosed', 'endValueOpen'] as const;
const TIMESTAMP_RANGE_KEYS = ['startTimestampMicros', 'endTimestampMicros'] as const;
const QUALIFIER_BOUNDS = ['startQualifierClosed', 'startQualifierOpen', 'endQualifierClosed', 'endQualifierOpen'] as const;

function unknownKeys(r: Record<string, unknown>, known: readonly string[], path: string, kind: string): void {
  for (const k in r)
    if (Object.hasOwn(r, k) && r[k] !== undefined && !known.includes(k)) throw bad(path, `unknown ${kind} property "${k}"`);
}

/** bounds: [startClosed, startOpen, endClosed, endOpen] property names. */
function range(r: Record<string, unknown>, bounds: readonly [string, string, string, string], path: string): void {
  const [sc, so, ec, eo] = bounds;
  for (const k of bounds) {
    if (r[k] !== undefined && !(r[k] instanceof Uint8Array)) throw bad(path, `${k} must be bytes`);
  }
  if (r[sc] !== undefined && r[so] !== undefined) throw bad(path, `only one of ${sc} and ${so} may be set`);
  if (r[ec] !== undefined && r[eo] !== undefined) throw bad(path, `only one of ${ec} and ${eo} may be set`);
  const start = (r[sc] ?? r[so]) as Uint8Array | undefined;
  const end = (r[ec] ?? r[eo]) as Uint8Array | undefined;
  if (start !== undefined && end !== undefined && compareBytes(start, end) > 0) throw bad(path, 'range start is after its end');
}
