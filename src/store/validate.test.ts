/**
 * Mutation validation names its evidence — the table and the row key in hex — on every error,
 * though it builds that evidence only when there is an error. Arguments of the wrong runtime type
 * (JavaScript callers pass anything) or ambiguous ones are typed errors, not TypeErrors or a
 * silent guess.
 */
import { describe, expect, it } from 'vitest';
import { isStoreError } from './errors.js';
import { DEFAULT_LIMITS } from './store.js';
import type { DropRowRangeRequest, Mutation, ReadModifyWriteRule, ReadRowsOptions, TableSpec } from './types.js';
import { validateDropRowRange, validateMutations, validateReadRowsOptions, validateRules } from './validate.js';

const spec: TableSpec = { families: { f: {} } };
const row = Buffer.from('row\u00001');
const set = (over: Record<string, unknown>): Mutation =>
  ({
    setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.from('v'), ...over },
  }) as Mutation;

function failure(mutations: unknown): unknown {
  try {
    validateMutations(mutations as Mutation[], spec, 't', row, { ...DEFAULT_LIMITS, maxValueBytes: 8 });
  } catch (e) {
    return e;
  }
  return null;
}

describe('validateMutations', () => {
  it('accepts valid mutations', () => {
    expect(
      failure([set({}), { deleteFromColumn: { familyName: 'f', columnQualifier: Buffer.from('q') } }, { deleteFromRow: {} }]),
    ).toBeNull();
  });

  it('accepts a qualifier of 16 KiB', () => {
    expect(failure([set({ columnQualifier: Buffer.alloc(16384) })])).toBeNull();
  });

  it.each([
    ['a qualifier that is not bytes', [set({ columnQualifier: 'q' })], 'INVALID_MUTATION', {}],
    ['a value that is not bytes', [set({ value: 'v' })], 'INVALID_MUTATION', {}],
    ['a bad timestamp', [set({ timestampMicros: -5 })], 'INVALID_TIMESTAMP', { timestamp: -5 }],
    ['a value over the limit', [set({ value: Buffer.alloc(9) })], 'VALUE_TOO_LARGE', { size: 9, limit: 8 }],
    [
      'a range that ends before it starts',
      [
        {
          deleteFromColumn: {
            familyName: 'f',
            columnQualifier: Buffer.from('q'),
            timeRange: { startTimestampMicros: 5, endTimestampMicros: 2 },
          },
        },
      ],
      'INVALID_RANGE',
      { start: 5, end: 2 },
    ],
    ['an unknown mutation', [{ bogus: {} }], 'INVALID_MUTATION', {}],
    ['a mutation that is not an object', [null], 'INVALID_MUTATION', {}],
    ['an unknown family', [set({ familyName: 'nope' })], 'FAMILY_NOT_FOUND', { family: 'nope' }],
    ['a family name that is not a string', [set({ familyName: 7 })], 'INVALID_MUTATION', {}],
    [
      'a qualifier over 16 KiB',
      [set({ columnQualifier: Buffer.alloc(16385) })],
      'INVALID_MUTATION',
      { family: 'f', size: 16385, limit: 16384 },
    ],
    [
      'a qualifier over 16 KiB to delete',
      [{ deleteFromColumn: { familyName: 'f', columnQualifier: Buffer.alloc(16385) } }],
      'INVALID_MUTATION',
      { size: 16385, limit: 16384 },
    ],
    ['a mutation of two kinds', [{ ...set({}), deleteFromRow: {} }], 'INVALID_MUTATION', { kinds: ['setCell', 'deleteFromRow'] }],
    ['a kind that is null', [{ setCell: null }], 'INVALID_MUTATION', {}],
    ['a kind that is undefined', [{ deleteFromRow: undefined }], 'INVALID_MUTATION', {}],
    // The backends dispatch on `in`: a kind set to undefined beside another would be taken for the mutation.
    [
      'a kind beside another set to undefined',
      [{ setCell: undefined, deleteFromRow: {} }],
      'INVALID_MUTATION',
      { kinds: ['setCell', 'deleteFromRow'] },
    ],
    [
      'a time range that is null',
      [{ deleteFromColumn: { familyName: 'f', columnQualifier: Buffer.from('q'), timeRange: null } }],
      'INVALID_RANGE',
      {},
    ],
  ])('%s: %s with the table and the row', (_what, mutations, code, more) => {
    const e = failure(mutations);
    expect(isStoreError(e) && e.code).toBe(code);
    expect((e as { details: Record<string, unknown> }).details).toMatchObject({ table: 't', row: row.toString('hex'), ...more });
  });
});

function codeOf(fn: () => unknown): string | null {
  try {
    fn();
  } catch (e) {
    return isStoreError(e) ? e.code : `not a StoreError: ${String(e)}`;
  }
  return null;
}

describe('validateRules', () => {
  const rules = (r: unknown) => () => validateRules([r as ReadModifyWriteRule], spec, 't', row, DEFAULT_LIMITS);
  it('takes one rule kind of bytes within the limits', () => {
    expect(codeOf(rules({ familyName: 'f', columnQualifier: Buffer.from('n'), incrementAmount: 1n }))).toBeNull();
    expect(codeOf(rules({ familyName: 'f', columnQualifier: Buffer.alloc(16384), appendValue: Buffer.from('x') }))).toBeNull();
  });
  it.each([
    ['both kinds', { familyName: 'f', columnQualifier: Buffer.from('n'), appendValue: Buffer.from('x'), incrementAmount: 1n }],
    ['both kinds, one undefined', { familyName: 'f', columnQualifier: Buffer.from('n'), appendValue: undefined, incrementAmount: 1n }],
    ['null', null],
    ['a qualifier over 16 KiB', { familyName: 'f', columnQualifier: Buffer.alloc(16385), appendValue: Buffer.from('x') }],
  ])('refuses a rule of %s: INVALID_MUTATION', (_what, rule) => {
    expect(codeOf(rules(rule))).toBe('INVALID_MUTATION');
  });
});

describe('validateReadRowsOptions', () => {
  const read = (o: unknown) => () => validateReadRowsOptions(o as ReadRowsOptions, 't');
  it('takes bytes keys and bounds', () => {
    expect(codeOf(read({}))).toBeNull();
    expect(
      codeOf(read({ rows: { rowKeys: [Buffer.from('a')], rowRanges: [{ startKeyClosed: Buffer.from('a') }, {}] }, reversed: true })),
    ).toBeNull();
  });
  it.each([
    ['a string start bound (it read as no bound: the whole table)', { rows: { rowRanges: [{ startKeyClosed: 'm' }] } }],
    ['a string end bound', { rows: { rowRanges: [{ endKeyOpen: 'm' }] } }],
    ['a null range', { rows: { rowRanges: [null] } }],
    ['ranges that are not an array', { rows: { rowRanges: {} } }],
    ['a string row key', { rows: { rowKeys: ['a'] } }],
    ['keys that are a string', { rows: { rowKeys: 'a' } }],
    ['a row set that is a number', { rows: 5 }],
    ['reversed as a string', { reversed: 'yes' }],
    ['options that are null', null],
  ])('refuses %s: INVALID_ARGUMENT', (_what, options) => {
    expect(codeOf(read(options))).toBe('INVALID_ARGUMENT');
  });
});

describe('validateDropRowRange', () => {
  const drop = (r: unknown) => validateDropRowRange(r as DropRowRangeRequest, 't');
  it('returns the prefix, or null for every row', () => {
    expect(drop({ rowKeyPrefix: Buffer.from('a') })).toEqual(Buffer.from('a'));
    expect(drop({ deleteAllDataFromTable: true })).toBeNull();
  });
  it.each([
    ['both (one of them drops every row)', { rowKeyPrefix: Buffer.from('a'), deleteAllDataFromTable: true }],
    ['a string prefix', { rowKeyPrefix: 'a' }],
    ['an empty prefix', { rowKeyPrefix: Buffer.alloc(0) }],
    ['neither', {}],
    ['null', null],
  ])('refuses %s: INVALID_ARGUMENT', (_what, request) => {
    expect(codeOf(() => drop(request))).toBe('INVALID_ARGUMENT');
  });
});
