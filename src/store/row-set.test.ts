import { describe, expect, it } from 'vitest';
import { intervalContains, planRowSet } from './row-set.js';

const b = (s: string) => Buffer.from(s);
const hex = (u?: Uint8Array) => (u === undefined ? null : Buffer.from(u).toString());

describe('planRowSet', () => {
  it('an empty row set is the whole table', () => {
    expect(planRowSet(undefined, 't')).toEqual([{}]);
    expect(planRowSet({ rowKeys: [], rowRanges: [] }, 't')).toEqual([{}]);
  });

  it('sorts, deduplicates and merges keys and overlapping ranges', () => {
    const plan = planRowSet(
      {
        rowKeys: [b('m'), b('a'), b('a'), b('c')],
        rowRanges: [
          { startKeyClosed: b('b'), endKeyOpen: b('d') },
          { startKeyOpen: b('x'), endKeyClosed: b('z') },
        ],
      },
      't',
    );
    expect(plan.map((iv) => [hex(iv.gte), hex(iv.lt), hex(iv.point)])).toEqual([
      ['a', 'a\0', 'a'],
      ['b', 'd', null],
      ['m', 'm\0', 'm'],
      ['x\0', 'z\0', null],
    ]);
  });

  it('merges ranges that both start at the beginning of the table', () => {
    const plan = planRowSet({ rowRanges: [{ endKeyOpen: b('c') }, { endKeyOpen: b('m') }] }, 't');
    expect(plan.map((iv) => [hex(iv.gte), hex(iv.lt)])).toEqual([[null, 'm']]);
  });

  it('treats empty bounds as unbounded and drops empty intervals', () => {
    const plan = planRowSet(
      {
        rowRanges: [
          { startKeyClosed: b(''), endKeyOpen: b('') },
          { startKeyClosed: b('q'), endKeyOpen: b('q') },
        ],
      },
      't',
    );
    expect(plan).toHaveLength(1);
    expect(plan[0]?.gte).toBeUndefined();
    expect(plan[0]?.lt).toBeUndefined();
  });

  it('rejects start after end and double bounds with INVALID_RANGE', () => {
    expect(() => planRowSet({ rowRanges: [{ startKeyClosed: b('b'), endKeyClosed: b('a') }] }, 't')).toThrowError(
      expect.objectContaining({ code: 'INVALID_RANGE' }),
    );
    expect(() => planRowSet({ rowRanges: [{ startKeyClosed: b('a'), startKeyOpen: b('a') }] }, 't')).toThrowError(
      expect.objectContaining({ code: 'INVALID_RANGE' }),
    );
  });

  it('open and closed bounds include exactly the right keys', () => {
    const [iv] = planRowSet({ rowRanges: [{ startKeyOpen: b('b'), endKeyClosed: b('d') }] }, 't');
    expect(iv).toBeDefined();
    if (!iv) return;
    expect(['b', 'b\0', 'c', 'd', 'd\0'].map((k) => intervalContains(iv, b(k)))).toEqual([false, true, true, true, false]);
  });
});
