/**
 * Mutation validation names its evidence — the table and the row key in hex — on every error,
 * though it builds that evidence only when there is an error.
 */
import { describe, expect, it } from 'vitest';
import { isStoreError } from './errors.js';
import { DEFAULT_LIMITS } from './store.js';
import type { Mutation, TableSpec } from './types.js';
import { validateMutations } from './validate.js';

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
  ])('%s: %s with the table and the row', (_what, mutations, code, more) => {
    const e = failure(mutations);
    expect(isStoreError(e) && e.code).toBe(code);
    expect((e as { details: Record<string, unknown> }).details).toMatchObject({ table: 't', row: row.toString('hex'), ...more });
  });
});
