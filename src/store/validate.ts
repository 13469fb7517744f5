/**
 * Input validation, done before any latch is taken or byte written, so bad input never leaves a
 * partial write. Every failure is a StoreError with a stable code and the evidence.
 *
 * JavaScript callers can pass anything, so what the types promise is checked at run time, with
 * cheap type tests: bytes are Uint8Arrays (a string bound would otherwise read as "unbounded"),
 * a mutation is exactly one of its four kinds and a read-modify-write rule exactly one of its two
 * (a key present counts, even set to undefined: the backends dispatch on `in`). Wrong types in read arguments
 * are INVALID_ARGUMENT; in mutations INVALID_MUTATION. Sizes follow Cloud Bigtable's limits:
 * row keys up to 4 KiB, qualifiers up to 16 KiB (`StoreLimits`).
 */
import { compareBytes } from './bytes.js';
import { StoreError, keyHex } from './errors.js';
import type { StoreLimits } from './store.js';
import { describeType } from '../util/describe-type.js';
import { unknownKey, unknownOption } from '../util/options.js';
import type {
  CheckAndMutateRequest,
  DropRowRangeRequest,
  FamilyModification,
  Mutation,
  ReadModifyWriteRule,
  ReadRowsOptions,
  RowRange,
  TableSpec,
  TimestampRange,
  WriteOptions,
} from './types.js';

const TABLE_NAME = /^[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,49}$/;
const FAMILY_NAME = /^[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,63}$/;

/**
 * A table argument that is not a string (a number, null, an object): INVALID_ARGUMENT naming its
 * type. The stores test `typeof` only where a lookup missed, so a valid name costs nothing; it
 * was TABLE_NOT_FOUND for "table 5", as if a table of that name could exist.
 */
export function tableTypeError(table: unknown): StoreError {
  return new StoreError('INVALID_ARGUMENT', `a table name must be a string, not ${describeType(table)}`, {
    ...(typeof table === 'number' || typeof table === 'boolean' ? { table } : {}),
    type: describeType(table),
  });
}

export function validateTableName(name: string): void {
  if (typeof name !== 'string') throw tableTypeError(name);
  if (!TABLE_NAME.test(name)) {
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

/** EMPTY_ROW_KEY: the store's, the transaction layer's and the command line's refusal of an empty row key. */
export function emptyRowKey(table: string): StoreError {
  return new StoreError('EMPTY_ROW_KEY', `empty row key in table ${table}`, { table });
}

export function validateRowKey(key: Uint8Array, limits: StoreLimits, table: string): void {
  if (!(key instanceof Uint8Array)) throw new StoreError('INVALID_ARGUMENT', 'row key must be a Uint8Array', { table });
  if (key.byteLength === 0) throw emptyRowKey(table);
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
  if (range === null || typeof range !== 'object') {
    throw new StoreError('INVALID_RANGE', `a timestamp range must be an object, not ${describeType(range)}`, context());
  }
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
  if (typeof family !== 'string') {
    throw new StoreError('INVALID_MUTATION', `a column family name must be a string, not ${describeType(family)}`, {
      table,
      row: keyHex(row),
    });
  }
  if (!Object.hasOwn(spec.families, family)) {
    throw new StoreError('FAMILY_NOT_FOUND', `column family ${JSON.stringify(family)} does not exist in table ${table}`, {
      table,
      family,
      row: keyHex(row),
    });
  }
}

function checkBytes(b: unknown, what: string, context: LazyContext): void {
  if (!(b instanceof Uint8Array))
    throw new StoreError('INVALID_MUTATION', `${what} must be a Uint8Array, not ${describeType(b)}`, context());
}

/** A column qualifier: bytes, at most `limits.maxQualifierBytes` of them (Cloud Bigtable: 16 KiB). */
function checkQualifier(q: unknown, family: string, limits: StoreLimits, context: LazyContext): void {
  // The test alone here, the error apart: inlined, it costs next to nothing per mutation.
  if (!(q instanceof Uint8Array) || q.length > limits.maxQualifierBytes) throw qualifierError(q, family, limits, context);
}

function qualifierError(q: unknown, family: string, limits: StoreLimits, context: LazyContext): StoreError {
  if (!(q instanceof Uint8Array))
    return new StoreError('INVALID_MUTATION', `columnQualifier must be a Uint8Array, not ${describeType(q)}`, context());
  return new StoreError(
    'INVALID_MUTATION',
    `a column qualifier of ${q.byteLength} bytes exceeds the limit of ${limits.maxQualifierBytes}`,
    {
      ...context(),
      family,
      size: q.byteLength,
      limit: limits.maxQualifierBytes,
    },
  );
}

const MUTATION_KINDS = ['setCell', 'deleteFromColumn', 'deleteFromFamily', 'deleteFromRow'] as const;

/** A mutation as JavaScript may pass it: any of the kinds' fields, of any type. */
type MutationFields = { readonly [K in (typeof MUTATION_KINDS)[number]]?: unknown };

/**
 * A mutation with no kind, or with two (ambiguous: the first one checked used to win silently,
 * and the other was dropped), or whose payload is not an object: INVALID_MUTATION.
 */
function badMutation(m: object, context: LazyContext): StoreError {
  const x = m as MutationFields;
  const kinds = MUTATION_KINDS.filter((k) => k in x);
  if (kinds.length === 0) {
    return new StoreError(
      'INVALID_MUTATION',
      `a mutation needs one of ${MUTATION_KINDS.join(', ')}; got the keys ${JSON.stringify(Object.keys(m))}`,
      context(),
    );
  }
  if (kinds.length > 1) {
    return new StoreError(
      'INVALID_MUTATION',
      `a mutation must be one of ${MUTATION_KINDS.join(', ')}; this one is ${kinds.join(' and ')}`,
      {
        ...context(),
        kinds,
      },
    );
  }
  const kind = kinds[0] as (typeof MUTATION_KINDS)[number];
  return new StoreError('INVALID_MUTATION', `${kind} must be an object, not ${describeType(x[kind])}`, context());
}

/** Whether a value typed as an object is one at run time (JavaScript callers pass anything). */
const isObject = <T>(v: T): v is T & object => typeof v === 'object' && v !== null;

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
    // Presence by `in`, as the backends dispatch on it: a kind set to undefined still counts.
    // (Plain tests, not a loop over the kind names: keyed lookups cost more than the rest.)
    const set = 'setCell' in m;
    const column = 'deleteFromColumn' in m;
    const family = 'deleteFromFamily' in m;
    const whole = 'deleteFromRow' in m;
    if ((set ? 1 : 0) + (column ? 1 : 0) + (family ? 1 : 0) + (whole ? 1 : 0) !== 1) throw badMutation(m, ctx);
    if (set) {
      const s = (m as Extract<Mutation, { setCell: unknown }>).setCell;
      if (!isObject(s)) throw badMutation(m, ctx);
      checkFamily(spec, table, s.familyName, row);
      checkQualifier(s.columnQualifier, s.familyName, limits, ctx);
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
    } else if (column) {
      const d = (m as Extract<Mutation, { deleteFromColumn: unknown }>).deleteFromColumn;
      if (!isObject(d)) throw badMutation(m, ctx);
      checkFamily(spec, table, d.familyName, row);
      checkQualifier(d.columnQualifier, d.familyName, limits, ctx);
      validateTimeRange(d.timeRange, ctx);
    } else if (family) {
      const f = (m as Extract<Mutation, { deleteFromFamily: unknown }>).deleteFromFamily;
      if (!isObject(f)) throw badMutation(m, ctx);
      checkFamily(spec, table, f.familyName, row);
    } else if (!isObject((m as Extract<Mutation, { deleteFromRow: unknown }>).deleteFromRow)) throw badMutation(m, ctx);
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
    if (r === null || typeof r !== 'object')
      throw new StoreError('INVALID_MUTATION', `a rule must be an object, not ${describeType(r)}`, ctx());
    checkFamily(spec, table, r.familyName, row);
    checkQualifier(r.columnQualifier, r.familyName, limits, ctx);
    // Presence by `in`, as the backends dispatch on it.
    const append = 'appendValue' in r;
    const increment = 'incrementAmount' in r;
    if (append && increment) {
      throw new StoreError('INVALID_MUTATION', 'a rule must have appendValue or incrementAmount, not both', ctx());
    }
    if (append) checkBytes(r.appendValue, 'appendValue', ctx);
    else if (increment) {
      if (typeof r.incrementAmount !== 'bigint' || BigInt.asIntN(64, r.incrementAmount) !== r.incrementAmount) {
        throw new StoreError('INVALID_MUTATION', 'incrementAmount must be a bigint in the signed 64-bit range', ctx());
      }
    } else throw new StoreError('INVALID_MUTATION', 'a rule needs appendValue or incrementAmount', ctx());
  }
}

function checkBound(b: unknown, name: string, table: string): void {
  if (b !== undefined && !(b instanceof Uint8Array)) {
    throw new StoreError('INVALID_ARGUMENT', `a row range's ${name} must be a Uint8Array, not ${describeType(b)}`, { table, bound: name });
  }
}

const RANGE_KEYS: ReadonlySet<string> = new Set(['startKeyClosed', 'startKeyOpen', 'endKeyClosed', 'endKeyOpen']);
const READ_ROWS_KEYS: ReadonlySet<string> = new Set(['rows', 'filter', 'rowsLimit', 'reversed']);
const ROW_SET_KEYS: ReadonlySet<string> = new Set(['rowKeys', 'rowRanges']);

/** An option name `what` does not take is INVALID_ARGUMENT (util/options.ts). */
function checkKnown(o: object, known: ReadonlySet<string>, what: string, table: string): void {
  const unknown = unknownOption(what, o, known);
  if (unknown !== undefined) throw new StoreError('INVALID_ARGUMENT', unknown.message, { table, option: unknown.option });
}

/**
 * `modifyColumnFamilies`' list: an array of objects (each one's kind and family are checked with
 * the table's schema). Anything else was a TypeError of the loop over it.
 */
export function validateModifications(modifications: readonly FamilyModification[], table: string): void {
  if (!Array.isArray(modifications)) {
    throw new StoreError('INVALID_ARGUMENT', `modifyColumnFamilies needs an array of modifications, not ${describeType(modifications)}`, {
      table,
    });
  }
  for (const m of modifications as readonly unknown[]) {
    if (m === null || typeof m !== 'object')
      throw new StoreError('INVALID_ARGUMENT', `a column family modification must be an object, not ${describeType(m)}`, { table });
  }
}

/** Checks a range's bounds: bytes, at most one bound per side, start ≤ end. */
export function validateRowRange(r: RowRange, table: string): void {
  if (r === null || typeof r !== 'object') {
    throw new StoreError('INVALID_ARGUMENT', `a row range must be an object, not ${describeType(r)}`, { table });
  }
  // A bound of another type (a string) was taken for an absent one: the scan read the whole table.
  // So was a misspelt one (`startKey`).
  checkKnown(r, RANGE_KEYS, 'a row range', table);
  checkBound(r.startKeyClosed, 'startKeyClosed', table);
  checkBound(r.startKeyOpen, 'startKeyOpen', table);
  checkBound(r.endKeyClosed, 'endKeyClosed', table);
  checkBound(r.endKeyOpen, 'endKeyOpen', table);
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

/**
 * `readRows` options: an object (or absent), its row set an object of arrays of bytes keys and
 * valid ranges, `reversed` a boolean. (`rowsLimit` and the filter are each backend's to check.)
 * A key longer than the row-key limit names no row, like the empty key: it reads nothing.
 */
export function validateReadRowsOptions(options: ReadRowsOptions, table: string): void {
  if (options === null || typeof options !== 'object') {
    throw new StoreError('INVALID_ARGUMENT', `readRows options must be an object, not ${describeType(options)}`, { table });
  }
  // A misspelt option (`rowKeys` beside `rows`, `limit`) was ignored: the read covered the whole table.
  checkKnown(options, READ_ROWS_KEYS, 'readRows options', table);
  const { rows, reversed } = options;
  if (reversed !== undefined && typeof reversed !== 'boolean') {
    throw new StoreError('INVALID_ARGUMENT', `reversed must be a boolean, not ${describeType(reversed)}`, { table });
  }
  if (rows === undefined) return;
  if (rows === null || typeof rows !== 'object') {
    throw new StoreError('INVALID_ARGUMENT', `a row set must be an object, not ${describeType(rows)}`, { table });
  }
  checkKnown(rows, ROW_SET_KEYS, 'a row set', table);
  const { rowKeys, rowRanges } = rows;
  if (rowKeys !== undefined) {
    if (!Array.isArray(rowKeys))
      throw new StoreError('INVALID_ARGUMENT', `rowKeys must be an array, not ${describeType(rowKeys)}`, { table });
    for (const k of rowKeys) {
      if (!(k instanceof Uint8Array))
        throw new StoreError('INVALID_ARGUMENT', `a row key must be a Uint8Array, not ${describeType(k)}`, { table });
    }
  }
  if (rowRanges !== undefined) {
    if (!Array.isArray(rowRanges)) {
      throw new StoreError('INVALID_ARGUMENT', `rowRanges must be an array, not ${describeType(rowRanges)}`, { table });
    }
    for (const r of rowRanges) validateRowRange(r, table);
  }
}

const WRITE_OPTIONS: ReadonlySet<string> = new Set(['durability']);

/**
 * Whether a write is deferred (`WriteOptions`): `options` undefined, or an object whose
 * `durability` is 'durable', 'deferred' or absent — anything else is INVALID_ARGUMENT. A number
 * or a string (`'deferred'` itself) as options, or a misspelt name (`durabilty`), used to be
 * ignored and the write made durable. `request`: a checkAndMutateRow request, whose other keys are
 * its own (not checked here). The common cases return after one or two comparisons.
 */
export function isDeferredWrite(options: WriteOptions | undefined, table: string, request = false): boolean {
  if (options === undefined) return false;
  if (options === null || typeof options !== 'object') {
    throw new StoreError('INVALID_ARGUMENT', `write options must be an object, not ${describeType(options)}`, {
      table,
      option: 'options',
      ...(typeof options === 'string' || typeof options === 'number' ? { value: options } : {}),
    });
  }
  const d = options.durability;
  if (d === 'deferred') return true;
  if (d === 'durable') return false;
  if (d !== undefined) {
    throw new StoreError('INVALID_ARGUMENT', `durability must be 'durable' or 'deferred', not ${JSON.stringify(d) ?? describeType(d)}`, {
      table,
      option: 'durability',
    });
  }
  const key = request ? undefined : unknownKey(options, WRITE_OPTIONS);
  if (key !== undefined) {
    throw new StoreError('INVALID_ARGUMENT', `write options have no option ${JSON.stringify(key)} (they take durability)`, {
      table,
      option: key,
    });
  }
  return false;
}

/** A `checkAndMutateRow` request: an object (its mutations are checked with the table's families). */
export function validateCheckAndMutateRequest(request: CheckAndMutateRequest, table: string, row: Uint8Array): void {
  if (request === null || typeof request !== 'object') {
    throw new StoreError('INVALID_ARGUMENT', `a checkAndMutateRow request must be an object, not ${describeType(request)}`, {
      table,
      row: keyHex(row),
    });
  }
}

/**
 * A `dropRowRange` request: exactly one of a non-empty `rowKeyPrefix` (bytes) and
 * `deleteAllDataFromTable: true`. Returns the prefix, or null to drop every row.
 */
export function validateDropRowRange(request: DropRowRangeRequest, table: string): Uint8Array | null {
  if (request === null || typeof request !== 'object') {
    throw new StoreError('INVALID_ARGUMENT', `a dropRowRange request must be an object, not ${describeType(request)}`, { table });
  }
  const prefix = (request as { rowKeyPrefix?: unknown }).rowKeyPrefix;
  const all = (request as { deleteAllDataFromTable?: unknown }).deleteAllDataFromTable;
  if (prefix !== undefined && all !== undefined) {
    // Which one was meant is anyone's guess, and one of them deletes the whole table.
    throw new StoreError('INVALID_ARGUMENT', 'dropRowRange takes rowKeyPrefix or deleteAllDataFromTable, not both', { table });
  }
  if (prefix !== undefined) {
    if (!(prefix instanceof Uint8Array) || prefix.byteLength === 0) {
      throw new StoreError('INVALID_ARGUMENT', 'dropRowRange needs a non-empty rowKeyPrefix or deleteAllDataFromTable', { table });
    }
    return prefix;
  }
  if (all !== true) throw new StoreError('INVALID_ARGUMENT', 'dropRowRange needs rowKeyPrefix or deleteAllDataFromTable', { table });
  return null;
}
