/**
 * Input validation, done before any latch is taken or byte written, so bad input never leaves a
 * partial write. Every failure is a StoreError with a stable code and the evidence.
 */
import { compareBytes } from './bytes.js';
import { StoreError, keyHex } from './errors.js';
import type { StoreLimits } from './store.js';
import type { Mutation, ReadModifyWriteRule, RowRange, TableSpec, TimestampRange } from './types.js';

const TABLE_NAME = /^[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,49}$/;
const FAMILY_NAME = /^[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,63}$/;

export function validateTableName(name: string): void {
  if (typeof name !== 'string' || !TABLE_NAME.test(name)) {
    throw new StoreError(
      'INVALID_NAME',
      `invalid table name ${JSON.stringify(name)}: use [_a-zA-Z0-9][-_.a-zA-Z0-9]*, at most 50 characters`,
      { table: name },
    );
  }
}

export function validateFamilyName(name: string, table: string): void {
  if (typeof name !== 'string' || !FAMILY_NAME.test(name)) {
    throw new StoreError(
      'INVALID_NAME',
      `invalid column family name ${JSON.stringify(name)} in table ${table}: use [_a-zA-Z0-9][-_.a-zA-Z0-9]*, at most 64 characters`,
      { table, family: name },
    );
  }
}

export function validateRowKey(key: Uint8Array, limits: StoreLimits, table: string): void {
  if (!(key instanceof Uint8Array)) throw new StoreError('INVALID_ARGUMENT', 'row key must be a Uint8Array', { table });
  if (key.byteLength === 0) throw new StoreError('EMPTY_ROW_KEY', `empty row key in table ${table}`, { table });
  if (key.byteLength > limits.maxRowKeyBytes) {
    throw new StoreError('ROW_KEY_TOO_LARGE', `row key of ${key.byteLength} bytes exceeds the limit of ${limits.maxRowKeyBytes}`, {
      table,
      row: keyHex(key),
      size: key.byteLength,
      limit: limits.maxRowKeyBytes,
    });
  }
}

function isTimestamp(t: unknown): t is number {
  return typeof t === 'number' && Number.isSafeInteger(t) && t >= 0;
}

type Context = Record<string, unknown>;

/** An error's evidence, built only when there is an error (a row key's hex costs ~300 ns). */
type LazyContext = () => Context;

export function validateTimeRange(range: TimestampRange | undefined, evidence: Context | LazyContext): void {
  if (range === undefined) return;
  const context = (): Context => (typeof evidence === 'function' ? evidence() : evidence);
  const start = range.startTimestampMicros ?? 0;
  const end = range.endTimestampMicros ?? 0;
  if (!isTimestamp(start) || !isTimestamp(end)) {
    throw new StoreError('INVALID_TIMESTAMP', 'timestamp range bounds must be non-negative safe integers (microseconds)', {
      ...context(),
      start,
      end,
    });
  }
  if (end !== 0 && start > end) {
    throw new StoreError('INVALID_RANGE', `timestamp range start ${start} is after its end ${end}`, { ...context(), start, end });
  }
}

function checkFamily(spec: TableSpec, table: string, family: string, row: Uint8Array): void {
  // No family has an empty name: malformed, not missing (Cloud Bigtable: INVALID_ARGUMENT).
  if (family === '') throw new StoreError('INVALID_MUTATION', 'a column family name must not be empty', { table, row: keyHex(row) });
  if (typeof family !== 'string' || !Object.hasOwn(spec.families, family)) {
    throw new StoreError('FAMILY_NOT_FOUND', `column family ${JSON.stringify(family)} does not exist in table ${table}`, {
      table,
      family,
      row: keyHex(row),
    });
  }
}

function checkBytes(b: unknown, what: string, context: LazyContext): void {
  if (!(b instanceof Uint8Array)) throw new StoreError('INVALID_MUTATION', `${what} must be a Uint8Array`, context());
}

/** Validates one row's mutations against the table's families and the limits. */
export function validateMutations(
  mutations: readonly Mutation[],
  spec: TableSpec,
  table: string,
  row: Uint8Array,
  limits: StoreLimits,
  allowEmpty = false,
): void {
  if (!Array.isArray(mutations)) throw new StoreError('INVALID_MUTATION', 'mutations must be an array', { table, row: keyHex(row) });
  if (mutations.length === 0 && !allowEmpty) throw new StoreError('INVALID_MUTATION', 'no mutations given', { table, row: keyHex(row) });
  if (mutations.length > limits.maxMutationsPerRow) {
    throw new StoreError('TOO_MANY_MUTATIONS', `${mutations.length} mutations exceed the limit of ${limits.maxMutationsPerRow} per row`, {
      table,
      row: keyHex(row),
      count: mutations.length,
      limit: limits.maxMutationsPerRow,
    });
  }
  const ctx = (): Context => ({ table, row: keyHex(row) });
  for (const m of mutations) {
    if (m === null || typeof m !== 'object') throw new StoreError('INVALID_MUTATION', 'a mutation must be an object', ctx());
    if ('setCell' in m) {
      const s = m.setCell;
      checkFamily(spec, table, s.familyName, row);
      checkBytes(s.columnQualifier, 'columnQualifier', ctx);
      checkBytes(s.value, 'value', ctx);
      if (!(s.timestampMicros === -1 || isTimestamp(s.timestampMicros))) {
        throw new StoreError('INVALID_TIMESTAMP', `setCell timestamp must be -1 or a non-negative safe integer, got ${s.timestampMicros}`, {
          ...ctx(),
          timestamp: s.timestampMicros,
        });
      }
      if (s.value.byteLength > limits.maxValueBytes) {
        throw new StoreError('VALUE_TOO_LARGE', `a value of ${s.value.byteLength} bytes exceeds the limit of ${limits.maxValueBytes}`, {
          ...ctx(),
          family: s.familyName,
          size: s.value.byteLength,
          limit: limits.maxValueBytes,
        });
      }
    } else if ('deleteFromColumn' in m) {
      const d = m.deleteFromColumn;
      checkFamily(spec, table, d.familyName, row);
      checkBytes(d.columnQualifier, 'columnQualifier', ctx);
      validateTimeRange(d.timeRange, ctx);
    } else if ('deleteFromFamily' in m) {
      checkFamily(spec, table, m.deleteFromFamily.familyName, row);
    } else if ('deleteFromRow' in m) {
      // nothing to check
    } else {
      throw new StoreError('INVALID_MUTATION', `unknown mutation ${JSON.stringify(Object.keys(m))}`, ctx());
    }
  }
}

export function validateRules(
  rules: readonly ReadModifyWriteRule[],
  spec: TableSpec,
  table: string,
  row: Uint8Array,
  limits: StoreLimits,
): void {
  const ctx = (): Context => ({ table, row: keyHex(row) });
  if (!Array.isArray(rules) || rules.length === 0)
    throw new StoreError('INVALID_MUTATION', 'readModifyWriteRow needs at least one rule', ctx());
  if (rules.length > limits.maxMutationsPerRow) {
    throw new StoreError('TOO_MANY_MUTATIONS', `${rules.length} rules exceed the limit of ${limits.maxMutationsPerRow}`, {
      ...ctx(),
      count: rules.length,
    });
  }
  for (const r of rules) {
    checkFamily(spec, table, r.familyName, row);
    checkBytes(r.columnQualifier, 'columnQualifier', ctx);
    if ('appendValue' in r) checkBytes(r.appendValue, 'appendValue', ctx);
    else if ('incrementAmount' in r) {
      if (typeof r.incrementAmount !== 'bigint' || BigInt.asIntN(64, r.incrementAmount) !== r.incrementAmount) {
        throw new StoreError('INVALID_MUTATION', 'incrementAmount must be a bigint in the signed 64-bit range', ctx());
      }
    } else throw new StoreError('INVALID_MUTATION', 'a rule needs appendValue or incrementAmount', ctx());
  }
}

/** Checks a range's bounds: at most one bound per side, start ≤ end. */
export function validateRowRange(r: RowRange, table: string): void {
  if (r.startKeyClosed !== undefined && r.startKeyOpen !== undefined) {
    throw new StoreError('INVALID_RANGE', 'a row range has both startKeyClosed and startKeyOpen', { table });
  }
  if (r.endKeyClosed !== undefined && r.endKeyOpen !== undefined) {
    throw new StoreError('INVALID_RANGE', 'a row range has both endKeyClosed and endKeyOpen', { table });
  }
  const start = r.startKeyClosed ?? r.startKeyOpen;
  const end = r.endKeyClosed ?? r.endKeyOpen;
  if (start !== undefined && end !== undefined && start.byteLength > 0 && end.byteLength > 0) {
    const c = compareBytes(start, end);
    if (c > 0)
      throw new StoreError('INVALID_RANGE', `row range start ${keyHex(start)} is after its end ${keyHex(end)}`, {
        table,
        start: keyHex(start),
        end: keyHex(end),
      });
  }
}
