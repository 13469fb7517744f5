import { describe, expect, it, vi } from 'vitest';
import { CellRecord, compareCells } from '../cells.js';
import { isStoreError, type StoreErrorCode } from '../errors.js';
import type { Cell, RowFilter } from '../types.js';
import { compileFilter } from './row-filter.js';
import { mulberry32 } from '../../util/seeded-random.js';

// ---------------------------------------------------------------------------------------------
// Helpers

const enc = new TextEncoder();
const bytes = (x: string | Uint8Array | number[]): Uint8Array =>
  typeof x === 'string' ? enc.encode(x) : x instanceof Uint8Array ? x : new Uint8Array(x);

function cell(family: string, qualifier: string | number[], timestamp: number, value: string | number[] = ''): Cell {
  return { family, qualifier: bytes(qualifier), timestamp, value: bytes(value), labels: [] };
}

/** Printable form: family:qualifier@ts=value[labels], bytes outside printable ASCII as \xNN. */
function esc(b: Uint8Array): string {
  let s = '';
  for (const x of b) s += x >= 0x20 && x < 0x7f && x !== 0x5c ? String.fromCharCode(x) : `\\x${x.toString(16).padStart(2, '0')}`;
  return s;
}
function show(cells: readonly Cell[]): string[] {
  return cells.map(
    (c) => `${c.family}:${esc(c.qualifier)}@${c.timestamp}=${esc(c.value)}${c.labels.length ? `[${c.labels.join(',')}]` : ''}`,
  );
}

const KEY = bytes('row#1');

/**
 * The reference row, in canonical order. Family b's qualifiers sort \x00 < q1 < \xff.
 */
const ROW: readonly Cell[] = [
  cell('a', 'q1', 30, 'v30'),
  cell('a', 'q1', 20, 'v20'),
  cell('a', 'q1', 10, 'v10'),
  cell('a', 'q2', 15, 'x\ny'),
  cell('b', [0x00], 5, [0xff, 0x00]),
  cell('b', 'q1', 25, ''),
  cell('b', [0xff], 7, 'bin'),
  cell('c', 'lock', 100, 'L'),
];
const ALL = show(ROW);
const A_Q1_30 = 'a:q1@30=v30';
const A_Q1_20 = 'a:q1@20=v20';
const A_Q1_10 = 'a:q1@10=v10';
const A_Q2 = 'a:q2@15=x\\x0ay';
const B_00 = 'b:\\x00@5=\\xff\\x00';
const B_Q1 = 'b:q1@25=';
const B_FF = 'b:\\xff@7=bin';
const C_LOCK = 'c:lock@100=L';

function run(f: RowFilter, cells: readonly Cell[] = ROW, key: Uint8Array = KEY, random?: () => number): string[] {
  return show(compileFilter(f).apply(key, cells, random));
}

function expectError(f: unknown, code: StoreErrorCode, path?: string): void {
  let err: unknown;
  try {
    compileFilter(f as RowFilter);
  } catch (e) {
    err = e;
  }
  expect(err, `expected ${code} for ${JSON.stringify(f)}`).toBeDefined();
  expect(isStoreError(err, code), String(err)).toBe(true);
  if (path !== undefined) expect((err as { details: { path?: string } }).details.path).toBe(path);
}

it('the reference row is canonical', () => {
  for (let i = 1; i < ROW.length; i++) expect(compareCells(ROW[i - 1] as Cell, ROW[i] as Cell)).toBeLessThan(0);
});

// ---------------------------------------------------------------------------------------------
// Simple variants

describe('pass / block', () => {
  it('passAllFilter returns every cell, without copying', () => {
    const out = compileFilter({ passAllFilter: true }).apply(KEY, ROW);
    expect(out).toBe(ROW);
  });
  it('blockAllFilter returns nothing', () => {
    expect(run({ blockAllFilter: true })).toEqual([]);
  });
  it('an empty row stays empty', () => {
    expect(compileFilter({ passAllFilter: true }).apply(KEY, [])).toEqual([]);
  });
});

describe('rowKeyRegexFilter', () => {
  it('passes the whole row when the key fully matches, else nothing', () => {
    expect(run({ rowKeyRegexFilter: 'row#\\d' })).toEqual(ALL);
    expect(run({ rowKeyRegexFilter: 'row' })).toEqual([]); // a prefix is not a full match
    expect(run({ rowKeyRegexFilter: '.*#2' })).toEqual([]);
  });
  it('matches binary keys byte by byte', () => {
    const key = bytes([0xff, 0x00, 0x0a]);
    expect(run({ rowKeyRegexFilter: '\\C*' }, ROW, key)).toEqual(ALL);
    expect(run({ rowKeyRegexFilter: '\\C\\C\\C' }, ROW, key)).toEqual(ALL);
    expect(run({ rowKeyRegexFilter: '.*' }, ROW, key)).toEqual([]); // . does not match \n
    expect(run({ rowKeyRegexFilter: '\\xff\\x00\\n' }, ROW, key)).toEqual(ALL);
    expect(run({ rowKeyRegexFilter: bytes([0xff, 0x00, 0x5c, 0x6e]) }, ROW, key)).toEqual(ALL); // raw bytes "\xff\x00\n"
  });
});

describe('rowSampleFilter', () => {
  it('keeps the row iff random() < p', () => {
    expect(run({ rowSampleFilter: 0.5 }, ROW, KEY, () => 0.3)).toEqual(ALL);
    expect(run({ rowSampleFilter: 0.5 }, ROW, KEY, () => 0.7)).toEqual([]);
    expect(run({ rowSampleFilter: 0.5 }, ROW, KEY, () => 0.5)).toEqual([]);
  });
  it('draws once per row and defaults to Math.random', () => {
    const spy = vi.spyOn(Math, 'random').mockReturnValue(0.1);
    try {
      expect(run({ rowSampleFilter: 0.2 })).toEqual(ALL);
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('familyNameRegexFilter', () => {
  it('keeps cells of fully matching families', () => {
    expect(run({ familyNameRegexFilter: 'a|c' })).toEqual([A_Q1_30, A_Q1_20, A_Q1_10, A_Q2, C_LOCK]);
    expect(run({ familyNameRegexFilter: '[ab]' })).toEqual(ALL.slice(0, 7));
    expect(run({ familyNameRegexFilter: 'b' })).toEqual([B_00, B_Q1, B_FF]);
    expect(run({ familyNameRegexFilter: 'a.' })).toEqual([]);
    expect(run({ familyNameRegexFilter: '.' })).toEqual(ALL);
  });
});

describe('columnQualifierRegexFilter', () => {
  it('matches the qualifier bytes in full', () => {
    expect(run({ columnQualifierRegexFilter: 'q1' })).toEqual([A_Q1_30, A_Q1_20, A_Q1_10, B_Q1]);
    expect(run({ columnQualifierRegexFilter: 'q.' })).toEqual([A_Q1_30, A_Q1_20, A_Q1_10, A_Q2, B_Q1]);
    expect(run({ columnQualifierRegexFilter: 'q' })).toEqual([]);
    expect(run({ columnQualifierRegexFilter: 'lo' })).toEqual([]);
  });
  it('addresses single bytes 0x00 and 0xff', () => {
    expect(run({ columnQualifierRegexFilter: '\\x00' })).toEqual([B_00]);
    expect(run({ columnQualifierRegexFilter: '\\xff' })).toEqual([B_FF]);
    expect(run({ columnQualifierRegexFilter: bytes([0xff]) })).toEqual([B_FF]);
    expect(run({ columnQualifierRegexFilter: '\\C' })).toEqual([B_00, B_FF]);
    expect(run({ columnQualifierRegexFilter: '.' })).toEqual([B_00, B_FF]); // Latin-1: . is any byte but \n
  });
  it('handles the empty qualifier', () => {
    const row = [cell('a', '', 3, 'e'), cell('a', 'x', 3, 'f')];
    expect(run({ columnQualifierRegexFilter: '' }, row)).toEqual(['a:@3=e']);
    expect(run({ columnQualifierRegexFilter: '\\C*' }, row)).toEqual(['a:@3=e', 'a:x@3=f']);
    expect(run({ columnQualifierRegexFilter: '\\C+' }, row)).toEqual(['a:x@3=f']);
  });
});

describe('columnRangeFilter', () => {
  it('requires the family and applies closed/open bounds', () => {
    expect(run({ columnRangeFilter: { familyName: 'a', startQualifierClosed: bytes('q1'), endQualifierOpen: bytes('q2') } })).toEqual([
      A_Q1_30,
      A_Q1_20,
      A_Q1_10,
    ]);
    expect(run({ columnRangeFilter: { familyName: 'a', startQualifierOpen: bytes('q1') } })).toEqual([A_Q2]);
    expect(run({ columnRangeFilter: { familyName: 'a', endQualifierClosed: bytes('q2') } })).toEqual([A_Q1_30, A_Q1_20, A_Q1_10, A_Q2]);
    expect(run({ columnRangeFilter: { familyName: 'a', endQualifierOpen: bytes('q1') } })).toEqual([]);
    expect(run({ columnRangeFilter: { familyName: 'b' } })).toEqual([B_00, B_Q1, B_FF]);
    expect(run({ columnRangeFilter: { familyName: 'zz' } })).toEqual([]);
  });
  it('compares qualifiers as unsigned bytes', () => {
    expect(run({ columnRangeFilter: { familyName: 'b', startQualifierClosed: bytes([0x00]), endQualifierClosed: bytes([0x00]) } })).toEqual(
      [B_00],
    );
    expect(run({ columnRangeFilter: { familyName: 'b', startQualifierOpen: bytes([0x00]), endQualifierOpen: bytes([0xff]) } })).toEqual([
      B_Q1,
    ]);
    expect(run({ columnRangeFilter: { familyName: 'b', startQualifierClosed: bytes([0x80]) } })).toEqual([B_FF]);
    expect(run({ columnRangeFilter: { familyName: 'b', startQualifierClosed: bytes('q1'), endQualifierOpen: bytes('q1') } })).toEqual([]);
  });
  it('the empty qualifier is inside an unbounded start and outside an open empty start', () => {
    const row = [cell('a', '', 3, 'e'), cell('a', 'x', 3, 'f')];
    expect(run({ columnRangeFilter: { familyName: 'a' } }, row)).toEqual(['a:@3=e', 'a:x@3=f']);
    expect(run({ columnRangeFilter: { familyName: 'a', startQualifierOpen: bytes('') } }, row)).toEqual(['a:x@3=f']);
  });
});

describe('timestampRangeFilter', () => {
  it('is [start, end) with end 0 or absent meaning infinity', () => {
    expect(run({ timestampRangeFilter: { startTimestampMicros: 10, endTimestampMicros: 25 } })).toEqual([A_Q1_20, A_Q1_10, A_Q2]);
    expect(run({ timestampRangeFilter: { startTimestampMicros: 25 } })).toEqual([A_Q1_30, B_Q1, C_LOCK]);
    expect(run({ timestampRangeFilter: { startTimestampMicros: 25, endTimestampMicros: 0 } })).toEqual([A_Q1_30, B_Q1, C_LOCK]);
    expect(run({ timestampRangeFilter: { endTimestampMicros: 8 } })).toEqual([B_00, B_FF]);
    expect(run({ timestampRangeFilter: {} })).toEqual(ALL);
    expect(run({ timestampRangeFilter: { startTimestampMicros: 20, endTimestampMicros: 20 } })).toEqual([]);
  });
  it('accepts timestamps that are not multiples of 1000', () => {
    expect(run({ timestampRangeFilter: { startTimestampMicros: 7, endTimestampMicros: 11 } })).toEqual([A_Q1_10, B_FF]);
  });
});

describe('valueRegexFilter', () => {
  it('matches values in full, as bytes', () => {
    expect(run({ valueRegexFilter: 'v.*' })).toEqual([A_Q1_30, A_Q1_20, A_Q1_10]);
    expect(run({ valueRegexFilter: 'v' })).toEqual([]);
    expect(run({ valueRegexFilter: '' })).toEqual([B_Q1]);
    expect(run({ valueRegexFilter: '\\xff\\x00' })).toEqual([B_00]);
    expect(run({ valueRegexFilter: bytes([0xff, 0x00]) })).toEqual([B_00]);
  });
  it('. does not match a newline; \\C does', () => {
    expect(run({ valueRegexFilter: '.*' })).toEqual(ALL.filter((s) => s !== A_Q2));
    expect(run({ valueRegexFilter: '\\C*' })).toEqual(ALL);
    expect(run({ valueRegexFilter: 'x\\Cy' })).toEqual([A_Q2]);
  });
});

describe('valueRangeFilter', () => {
  it('applies closed/open bounds over unsigned bytes', () => {
    expect(run({ valueRangeFilter: { startValueClosed: bytes('v10'), endValueOpen: bytes('v30') } })).toEqual([A_Q1_20, A_Q1_10]);
    expect(run({ valueRangeFilter: { startValueOpen: bytes('v10'), endValueClosed: bytes('v30') } })).toEqual([A_Q1_30, A_Q1_20]);
    expect(run({ valueRangeFilter: { startValueOpen: bytes('') } })).toEqual(ALL.filter((s) => s !== B_Q1));
    expect(run({ valueRangeFilter: { endValueClosed: bytes('') } })).toEqual([B_Q1]);
    expect(run({ valueRangeFilter: { startValueClosed: bytes([0x80]) } })).toEqual([B_00]);
    expect(run({ valueRangeFilter: {} })).toEqual(ALL);
  });
});

describe('cells per row / per column', () => {
  it('cellsPerRowOffsetFilter skips the first N cells in canonical order, across families', () => {
    expect(run({ cellsPerRowOffsetFilter: 2 })).toEqual(ALL.slice(2));
    expect(run({ cellsPerRowOffsetFilter: 4 })).toEqual([B_00, B_Q1, B_FF, C_LOCK]);
    expect(run({ cellsPerRowOffsetFilter: 0 })).toEqual(ALL);
    expect(run({ cellsPerRowOffsetFilter: 8 })).toEqual([]);
    expect(run({ cellsPerRowOffsetFilter: 1000 })).toEqual([]);
  });
  it('cellsPerRowLimitFilter keeps the first N cells in canonical order, across families', () => {
    expect(run({ cellsPerRowLimitFilter: 2 })).toEqual([A_Q1_30, A_Q1_20]);
    expect(run({ cellsPerRowLimitFilter: 5 })).toEqual([A_Q1_30, A_Q1_20, A_Q1_10, A_Q2, B_00]);
    expect(run({ cellsPerRowLimitFilter: 0 })).toEqual([]);
    expect(compileFilter({ cellsPerRowLimitFilter: 8 }).apply(KEY, ROW)).toBe(ROW);
  });
  it('cellsPerColumnLimitFilter keeps the newest N versions of each column', () => {
    expect(run({ cellsPerColumnLimitFilter: 1 })).toEqual([A_Q1_30, A_Q2, B_00, B_Q1, B_FF, C_LOCK]);
    expect(run({ cellsPerColumnLimitFilter: 2 })).toEqual([A_Q1_30, A_Q1_20, A_Q2, B_00, B_Q1, B_FF, C_LOCK]);
    expect(run({ cellsPerColumnLimitFilter: 0 })).toEqual([]);
    expect(compileFilter({ cellsPerColumnLimitFilter: 3 }).apply(KEY, ROW)).toBe(ROW);
  });
  it('the same qualifier in two families is two columns', () => {
    const row = [cell('a', 'q', 2), cell('a', 'q', 1), cell('b', 'q', 2), cell('b', 'q', 1)];
    expect(run({ cellsPerColumnLimitFilter: 1 }, row)).toEqual(['a:q@2=', 'b:q@2=']);
  });
  it('duplicates from an interleave count separately', () => {
    const dup: RowFilter = { interleave: [{ passAllFilter: true }, { passAllFilter: true }] };
    expect(run({ chain: [dup, { cellsPerColumnLimitFilter: 1 }] })).toEqual([A_Q1_30, A_Q2, B_00, B_Q1, B_FF, C_LOCK]);
    expect(run({ chain: [dup, { cellsPerColumnLimitFilter: 2 }] })).toEqual([
      A_Q1_30,
      A_Q1_30,
      A_Q2,
      A_Q2,
      B_00,
      B_00,
      B_Q1,
      B_Q1,
      B_FF,
      B_FF,
      C_LOCK,
      C_LOCK,
    ]);
    expect(run({ chain: [dup, { cellsPerRowLimitFilter: 3 }] })).toEqual([A_Q1_30, A_Q1_30, A_Q1_20]);
    expect(run({ chain: [dup, { cellsPerRowOffsetFilter: 13 }] })).toEqual([B_FF, C_LOCK, C_LOCK]);
  });
});

describe('transformers', () => {
  it('stripValueTransformer empties values and keeps everything else', () => {
    expect(run({ stripValueTransformer: true })).toEqual(ALL.map((s) => s.replace(/=.*$/, '=')));
  });
  it('stripValueTransformer keeps labels (the emulator drops them)', () => {
    expect(run({ chain: [{ familyNameRegexFilter: 'c' }, { applyLabelTransformer: 'lbl' }, { stripValueTransformer: true }] })).toEqual([
      'c:lock@100=[lbl]',
    ]);
    expect(run({ chain: [{ familyNameRegexFilter: 'c' }, { stripValueTransformer: true }, { applyLabelTransformer: 'lbl' }] })).toEqual([
      'c:lock@100=[lbl]',
    ]);
  });
  it('transformers make their cells through CellRecord (see CellRecord)', () => {
    for (const filter of [{ stripValueTransformer: true }, { applyLabelTransformer: 'x' }] as const) {
      const out = compileFilter(filter).apply(KEY, ROW);
      expect(out.length).toBe(ROW.length);
      // A cell the transformer leaves as it was (an already-empty value) is the input's own.
      const made = out.filter((c, i) => c !== ROW[i]);
      expect(made.length).toBeGreaterThan(ROW.length / 2);
      for (const c of made) expect(c).toBeInstanceOf(CellRecord);
    }
  });
  it('stripValueTransformer on already-empty values does not copy', () => {
    const row = [cell('a', 'q', 1), cell('a', 'r', 1)];
    expect(compileFilter({ stripValueTransformer: true }).apply(KEY, row)).toBe(row);
  });
  it('applyLabelTransformer labels every cell once and leaves the input untouched', () => {
    expect(run({ applyLabelTransformer: 'x-1' })).toEqual(ALL.map((s) => `${s}[x-1]`));
    for (const c of ROW) expect(c.labels).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Composition

describe('chain', () => {
  it('applies filters in sequence', () => {
    expect(run({ chain: [{ familyNameRegexFilter: 'a' }, { cellsPerColumnLimitFilter: 1 }] })).toEqual([A_Q1_30, A_Q2]);
    expect(run({ chain: [{ cellsPerRowLimitFilter: 3 }, { familyNameRegexFilter: 'b' }] })).toEqual([]);
    expect(run({ chain: [{ familyNameRegexFilter: 'b' }, { cellsPerRowLimitFilter: 1 }] })).toEqual([B_00]);
    expect(
      run({
        chain: [{ timestampRangeFilter: { startTimestampMicros: 10 } }, { cellsPerColumnLimitFilter: 1 }, { valueRegexFilter: 'v.*' }],
      }),
    ).toEqual([A_Q1_30]);
  });
  it('fused predicates behave like their sequence', () => {
    const f: RowFilter = {
      chain: [
        { familyNameRegexFilter: 'a|b' },
        { columnQualifierRegexFilter: 'q\\d' },
        { timestampRangeFilter: { startTimestampMicros: 15 } },
        { valueRangeFilter: { startValueClosed: bytes('') } },
      ],
    };
    expect(run(f)).toEqual([A_Q1_30, A_Q1_20, A_Q2, B_Q1]);
  });
  it('an empty chain passes everything and a one-element chain is its element', () => {
    expect(run({ chain: [] })).toEqual(ALL);
    expect(run({ chain: [{ familyNameRegexFilter: 'c' }] })).toEqual([C_LOCK]);
  });
  it('returns the input array when every step keeps everything (hot path, no allocation)', () => {
    const row = ROW.slice(0, 4);
    const f = compileFilter({
      chain: [
        { columnRangeFilter: { familyName: 'a' } },
        { timestampRangeFilter: { startTimestampMicros: 0 } },
        { cellsPerColumnLimitFilter: 5 },
      ],
    });
    expect(f.apply(KEY, row)).toBe(row);
  });
  it('nested chains', () => {
    expect(
      run({
        chain: [
          { chain: [{ familyNameRegexFilter: 'a' }, { chain: [{ columnQualifierRegexFilter: 'q1' }] }] },
          { cellsPerRowOffsetFilter: 1 },
        ],
      }),
    ).toEqual([A_Q1_20, A_Q1_10]);
  });
});

describe('interleave', () => {
  it('runs each branch on the input and merges in canonical order', () => {
    expect(
      run({ interleave: [{ familyNameRegexFilter: 'c' }, { columnRangeFilter: { familyName: 'a', startQualifierClosed: bytes('q2') } }] }),
    ).toEqual([A_Q2, C_LOCK]);
    expect(run({ interleave: [{ cellsPerRowLimitFilter: 1 }, { cellsPerRowOffsetFilter: 7 }] })).toEqual([A_Q1_30, C_LOCK]);
  });
  it('keeps duplicates', () => {
    expect(run({ interleave: [{ passAllFilter: true }, { familyNameRegexFilter: 'c' }] })).toEqual([...ALL, C_LOCK]);
    expect(run({ interleave: [{ familyNameRegexFilter: 'c' }, { familyNameRegexFilter: 'c' }, { familyNameRegexFilter: 'c' }] })).toEqual([
      C_LOCK,
      C_LOCK,
      C_LOCK,
    ]);
  });
  it('labelled copies of the same cell both appear (the data.proto example shape)', () => {
    const f: RowFilter = {
      interleave: [
        { chain: [{ columnRangeFilter: { familyName: 'a', startQualifierClosed: bytes('q2') } }, { applyLabelTransformer: 'one' }] },
        { chain: [{ columnRangeFilter: { familyName: 'a', startQualifierClosed: bytes('q2') } }, { applyLabelTransformer: 'two' }] },
        { columnRangeFilter: { familyName: 'a', startQualifierClosed: bytes('q2') } },
      ],
    };
    expect(run(f)).toEqual([`${A_Q2}[one]`, `${A_Q2}[two]`, A_Q2]);
  });
  it('empty interleave yields nothing; a single branch is that branch', () => {
    expect(run({ interleave: [] })).toEqual([]);
    expect(run({ interleave: [{ familyNameRegexFilter: 'b' }] })).toEqual([B_00, B_Q1, B_FF]);
  });
  it('nested inside chains and vice versa', () => {
    const f: RowFilter = {
      chain: [
        { interleave: [{ familyNameRegexFilter: 'a' }, { familyNameRegexFilter: 'c' }] },
        {
          interleave: [
            { chain: [{ cellsPerColumnLimitFilter: 1 }, { applyLabelTransformer: 'latest' }] },
            { timestampRangeFilter: { endTimestampMicros: 20 } },
          ],
        },
      ],
    };
    expect(run(f)).toEqual([`${A_Q1_30}[latest]`, A_Q1_10, `${A_Q2}[latest]`, A_Q2, `${C_LOCK}[latest]`]);
  });
});

describe('condition', () => {
  const lockPresent: RowFilter = { chain: [{ familyNameRegexFilter: 'c' }, { valueRegexFilter: 'L' }] };
  it('evaluates the true filter on the input row when the predicate emits any cell', () => {
    expect(
      run({
        condition: { predicateFilter: lockPresent, trueFilter: { familyNameRegexFilter: 'a' }, falseFilter: { blockAllFilter: true } },
      }),
    ).toEqual([A_Q1_30, A_Q1_20, A_Q1_10, A_Q2]);
  });
  it('evaluates the false filter when the predicate emits nothing', () => {
    const row = ROW.slice(0, 7);
    expect(
      run(
        { condition: { predicateFilter: lockPresent, trueFilter: { blockAllFilter: true }, falseFilter: { familyNameRegexFilter: 'b' } } },
        row,
      ),
    ).toEqual([B_00, B_Q1, B_FF]);
  });
  it('a missing branch yields no cells', () => {
    expect(run({ condition: { predicateFilter: lockPresent, falseFilter: { passAllFilter: true } } })).toEqual([]);
    expect(run({ condition: { predicateFilter: { blockAllFilter: true }, trueFilter: { passAllFilter: true } } })).toEqual([]);
  });
  it('the predicate sees the condition input (the chain so far), and its own output is never emitted', () => {
    const f: RowFilter = {
      chain: [
        { familyNameRegexFilter: 'a' },
        {
          condition: {
            predicateFilter: { familyNameRegexFilter: 'c' },
            trueFilter: { applyLabelTransformer: 'locked' },
            falseFilter: { chain: [{ cellsPerColumnLimitFilter: 1 }, { applyLabelTransformer: 'free' }] },
          },
        },
      ],
    };
    expect(run(f)).toEqual([`${A_Q1_30}[free]`, `${A_Q2}[free]`]);
    // Predicate emits c:lock, but only the true filter's output (family b) appears.
    expect(run({ condition: { predicateFilter: { familyNameRegexFilter: 'c' }, trueFilter: { familyNameRegexFilter: 'b' } } })).toEqual([
      B_00,
      B_Q1,
      B_FF,
    ]);
  });
  it('predicate may use row-level filters, and conditions nest', () => {
    const f: RowFilter = {
      condition: {
        predicateFilter: { rowKeyRegexFilter: 'row#\\d+' },
        trueFilter: {
          condition: {
            predicateFilter: { chain: [{ cellsPerRowOffsetFilter: 7 }, { valueRegexFilter: 'L' }] },
            trueFilter: { cellsPerRowLimitFilter: 1 },
          },
        },
        falseFilter: { passAllFilter: true },
      },
    };
    expect(run(f)).toEqual([A_Q1_30]);
    expect(run(f, ROW, bytes('other'))).toEqual(ALL);
  });
  it('labels in the predicate do not conflict with labels in a branch', () => {
    const f: RowFilter = {
      condition: {
        predicateFilter: { applyLabelTransformer: 'p' },
        trueFilter: { chain: [{ familyNameRegexFilter: 'c' }, { applyLabelTransformer: 't' }] },
      },
    };
    expect(run(f)).toEqual([`${C_LOCK}[t]`]);
  });
});

describe('sink', () => {
  it('the data.proto example: sunk labelled copies bypass the rest of the chain', () => {
    const row = [cell('A', 'A', 1, 'w'), cell('A', 'B', 2, 'x'), cell('B', 'B', 4, 'z')];
    const f: RowFilter = {
      chain: [
        { familyNameRegexFilter: 'A' },
        { interleave: [{ passAllFilter: true }, { chain: [{ applyLabelTransformer: 'foo' }, { sink: true }] }] },
        { columnQualifierRegexFilter: 'B' },
      ],
    };
    expect(run(f, row)).toEqual(['A:A@1=w[foo]', 'A:B@2=x', 'A:B@2=x[foo]']);
  });
  it('a top-level sink outputs its input', () => {
    expect(run({ sink: true })).toEqual(ALL);
  });
  it('sunk cells survive a later blockAll, and appear in addition to the normal output', () => {
    expect(run({ chain: [{ familyNameRegexFilter: 'c' }, { sink: true }, { blockAllFilter: true }] })).toEqual([C_LOCK]);
    expect(
      run({
        chain: [{ familyNameRegexFilter: 'b' }, { interleave: [{ sink: true }, { passAllFilter: true }] }, { cellsPerRowLimitFilter: 1 }],
      }),
    ).toEqual([B_00, B_00, B_Q1, B_FF]);
  });
  it('a sink sends nothing to its parent', () => {
    expect(run({ chain: [{ familyNameRegexFilter: 'c' }, { sink: true }, { applyLabelTransformer: 'never' }] })).toEqual([C_LOCK]);
  });
  it('several sinks merge into canonical order', () => {
    const f: RowFilter = {
      interleave: [
        { chain: [{ familyNameRegexFilter: 'c' }, { sink: true }] },
        { chain: [{ familyNameRegexFilter: 'a' }, { cellsPerColumnLimitFilter: 1 }, { sink: true }] },
        { familyNameRegexFilter: 'b' },
      ],
    };
    expect(run(f)).toEqual([A_Q1_30, A_Q2, B_00, B_Q1, B_FF, C_LOCK]);
  });
});

describe('labels: one per cell', () => {
  it('a chain with two label transformers is rejected at compile time', () => {
    expectError({ chain: [{ applyLabelTransformer: 'a' }, { applyLabelTransformer: 'b' }] }, 'INVALID_FILTER', 'filter');
    expectError(
      { chain: [{ applyLabelTransformer: 'a' }, { interleave: [{ passAllFilter: true }, { applyLabelTransformer: 'b' }] }] },
      'INVALID_FILTER',
    );
    expectError(
      { interleave: [{ chain: [{ chain: [{ applyLabelTransformer: 'a' }] }, { applyLabelTransformer: 'b' }] }] },
      'INVALID_FILTER',
      'filter.interleave[0]',
    );
    expectError(
      {
        chain: [
          { condition: { predicateFilter: { passAllFilter: true }, trueFilter: { applyLabelTransformer: 'a' } } },
          { applyLabelTransformer: 'b' },
        ],
      },
      'INVALID_FILTER',
    );
  });
  it('an interleave may label each branch', () => {
    expect(
      run({ chain: [{ familyNameRegexFilter: 'c' }, { interleave: [{ applyLabelTransformer: 'a' }, { applyLabelTransformer: 'b' }] }] }),
    ).toEqual([`${C_LOCK}[a]`, `${C_LOCK}[b]`]);
  });
  it('labelling an already-labelled cell fails when applied', () => {
    const labelled: Cell = { ...cell('a', 'q', 1, 'v'), labels: ['old'] };
    const f = compileFilter({ applyLabelTransformer: 'new' });
    let err: unknown;
    try {
      f.apply(KEY, [labelled]);
    } catch (e) {
      err = e;
    }
    expect(isStoreError(err, 'INVALID_FILTER')).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// Validation

describe('validation', () => {
  it('requires exactly one known property', () => {
    expectError({}, 'INVALID_FILTER', 'filter');
    expectError(null, 'INVALID_FILTER');
    expectError([], 'INVALID_FILTER');
    expectError('passAllFilter', 'INVALID_FILTER');
    expectError({ passAllFilter: true, blockAllFilter: true }, 'INVALID_FILTER');
    expectError({ noSuchFilter: true }, 'INVALID_FILTER');
    expectError({ chain: [{ passAllFilter: true }, {}] }, 'INVALID_FILTER', 'filter.chain[1]');
    // A property set to undefined counts as absent.
    expect(run({ passAllFilter: true, blockAllFilter: undefined } as unknown as RowFilter)).toEqual(ALL);
  });
  it('boolean variants must be true', () => {
    for (const k of ['passAllFilter', 'blockAllFilter', 'sink', 'stripValueTransformer']) expectError({ [k]: false }, 'INVALID_FILTER');
  });
  it('chain and interleave take arrays', () => {
    expectError({ chain: { passAllFilter: true } }, 'INVALID_FILTER');
    expectError({ interleave: 'x' }, 'INVALID_FILTER');
  });
  it('limits and offsets are int32 >= 0', () => {
    for (const k of ['cellsPerRowOffsetFilter', 'cellsPerRowLimitFilter', 'cellsPerColumnLimitFilter']) {
      for (const v of [-1, 1.5, Number.NaN, 2 ** 31, Number.POSITIVE_INFINITY, '3']) expectError({ [k]: v }, 'INVALID_FILTER');
      expect(() => compileFilter({ [k]: 2 ** 31 - 1 } as unknown as RowFilter)).not.toThrow();
    }
  });
  it('rowSampleFilter must be in (0, 1)', () => {
    for (const v of [0, 1, 1.5, -0.1, Number.NaN, '0.5']) expectError({ rowSampleFilter: v }, 'INVALID_FILTER');
    expect(() => compileFilter({ rowSampleFilter: 0.001 })).not.toThrow();
  });
  it('labels are 1-15 characters of [a-z0-9-]', () => {
    for (const v of ['', 'ABC', 'a_b', 'a b', 'x'.repeat(16), 'é', 3]) expectError({ applyLabelTransformer: v }, 'INVALID_FILTER');
    expect(() => compileFilter({ applyLabelTransformer: 'a-0'.padEnd(15, 'z') })).not.toThrow();
  });
  it('column ranges: one bound per side, start <= end, a family', () => {
    const q = bytes('q');
    expectError({ columnRangeFilter: { familyName: 'a', startQualifierClosed: q, startQualifierOpen: q } }, 'INVALID_FILTER');
    expectError({ columnRangeFilter: { familyName: 'a', endQualifierClosed: q, endQualifierOpen: q } }, 'INVALID_FILTER');
    expectError(
      { columnRangeFilter: { familyName: 'a', startQualifierClosed: bytes('b'), endQualifierClosed: bytes('a') } },
      'INVALID_FILTER',
    );
    expectError(
      { columnRangeFilter: { familyName: 'a', startQualifierOpen: bytes([0xff]), endQualifierOpen: bytes([0x01]) } },
      'INVALID_FILTER',
    );
    expectError({ columnRangeFilter: { familyName: '' } }, 'INVALID_FILTER');
    expectError({ columnRangeFilter: { startQualifierClosed: q } }, 'INVALID_FILTER');
    expectError({ columnRangeFilter: { familyName: 'a', startQualifierClosed: 'q' } }, 'INVALID_FILTER');
    expectError({ columnRangeFilter: { familyName: 'a', extra: 1 } }, 'INVALID_FILTER');
    expect(() => compileFilter({ columnRangeFilter: { familyName: 'a', startQualifierOpen: q, endQualifierOpen: q } })).not.toThrow(); // empty, not invalid
  });
  it('value ranges: one bound per side, start <= end', () => {
    const v = bytes('v');
    expectError({ valueRangeFilter: { startValueClosed: v, startValueOpen: v } }, 'INVALID_FILTER');
    expectError({ valueRangeFilter: { endValueClosed: v, endValueOpen: v } }, 'INVALID_FILTER');
    expectError({ valueRangeFilter: { startValueClosed: bytes([0x80]), endValueClosed: bytes([0x7f]) } }, 'INVALID_FILTER');
    expectError({ valueRangeFilter: 'x' }, 'INVALID_FILTER');
  });
  it('timestamp ranges: non-negative integers, start <= end unless end is 0', () => {
    expectError({ timestampRangeFilter: { startTimestampMicros: 2000, endTimestampMicros: 1000 } }, 'INVALID_FILTER');
    expectError({ timestampRangeFilter: { startTimestampMicros: -1 } }, 'INVALID_FILTER');
    expectError({ timestampRangeFilter: { endTimestampMicros: 1.5 } }, 'INVALID_FILTER');
    expectError({ timestampRangeFilter: { startTimestampMicros: 2 ** 53 } }, 'INVALID_FILTER');
    expect(() => compileFilter({ timestampRangeFilter: { startTimestampMicros: 2000, endTimestampMicros: 0 } })).not.toThrow();
    expect(() => compileFilter({ timestampRangeFilter: { startTimestampMicros: 1001, endTimestampMicros: 1999 } })).not.toThrow();
  });
  it('bad regexes are INVALID_REGEX wherever they are', () => {
    expectError({ rowKeyRegexFilter: 'a(' }, 'INVALID_REGEX', 'filter');
    expectError({ familyNameRegexFilter: '[a' }, 'INVALID_REGEX');
    expectError({ columnQualifierRegexFilter: bytes('*') }, 'INVALID_REGEX');
    expectError({ valueRegexFilter: '(?=x)' }, 'INVALID_REGEX');
    expectError(
      { chain: [{ passAllFilter: true }, { interleave: [{ valueRegexFilter: 'a)|(b' }] }] },
      'INVALID_REGEX',
      'filter.chain[1].interleave[0]',
    );
    expectError({ familyNameRegexFilter: 'a:b' }, 'INVALID_REGEX'); // ':' is forbidden in family regexes
    expectError({ valueRegexFilter: 7 }, 'INVALID_FILTER');
  });
  it('conditions: predicate required, known keys only, no sink anywhere inside', () => {
    expectError({ condition: { trueFilter: { passAllFilter: true } } }, 'INVALID_FILTER');
    expectError({ condition: { predicateFilter: { passAllFilter: true }, otherwise: {} } }, 'INVALID_FILTER');
    expectError({ condition: { predicateFilter: { sink: true } } }, 'INVALID_FILTER', 'filter.condition.predicateFilter');
    expectError({ condition: { predicateFilter: { passAllFilter: true }, trueFilter: { chain: [{ sink: true }] } } }, 'INVALID_FILTER');
    expectError(
      { condition: { predicateFilter: { passAllFilter: true }, falseFilter: { interleave: [{ sink: true }] } } },
      'INVALID_FILTER',
    );
    expectError(
      { condition: { predicateFilter: { blockAllFilter: true }, trueFilter: { cellsPerRowLimitFilter: -2 } } },
      'INVALID_FILTER',
      'filter.condition.trueFilter',
    );
  });
  it('nesting deeper than 20 is rejected', () => {
    const nest = (n: number): RowFilter => (n === 0 ? { passAllFilter: true } : { chain: [nest(n - 1)] });
    expect(() => compileFilter(nest(20))).not.toThrow();
    expectError(nest(21), 'INVALID_FILTER');
  });
  it('errors carry the INVALID_ARGUMENT gRPC status', () => {
    try {
      compileFilter({ cellsPerRowLimitFilter: -1 });
    } catch (e) {
      expect((e as { grpcStatus: number }).grpcStatus).toBe(3);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Family analysis

describe('families', () => {
  const fam = (f: RowFilter) => {
    const s = compileFilter(f).families;
    return s === null ? null : [...s].sort();
  };
  it('narrows only on column ranges and family regexes', () => {
    expect(fam({ passAllFilter: true })).toBeNull();
    expect(fam({ blockAllFilter: true })).toEqual([]);
    expect(fam({ columnRangeFilter: { familyName: 'lock' } })).toEqual(['lock']);
    expect(fam({ familyNameRegexFilter: 'lock|write' })).toEqual(['lock', 'write']);
    expect(fam({ familyNameRegexFilter: '^(data|w\\.x)$' })).toEqual(['data', 'w.x']);
    expect(fam({ familyNameRegexFilter: 'l.ck' })).toBeNull();
    expect(fam({ familyNameRegexFilter: '.*' })).toBeNull();
    expect(fam({ columnQualifierRegexFilter: 'q' })).toBeNull();
  });
  it('composes through chains, interleaves, conditions and sinks', () => {
    expect(fam({ chain: [{ familyNameRegexFilter: 'a|b' }, { columnRangeFilter: { familyName: 'b' } }] })).toEqual(['b']);
    expect(fam({ chain: [{ columnRangeFilter: { familyName: 'a' } }, { familyNameRegexFilter: '.*' }] })).toEqual(['a']);
    expect(fam({ chain: [{ columnRangeFilter: { familyName: 'a' } }, { columnRangeFilter: { familyName: 'b' } }] })).toEqual([]);
    expect(fam({ chain: [{ familyNameRegexFilter: 'a|b' }, { familyNameRegexFilter: 'b|c' }] })).toEqual(['b']);
    expect(fam({ interleave: [{ columnRangeFilter: { familyName: 'a' } }, { columnRangeFilter: { familyName: 'b' } }] })).toEqual([
      'a',
      'b',
    ]);
    expect(fam({ interleave: [{ columnRangeFilter: { familyName: 'a' } }, { passAllFilter: true }] })).toBeNull();
    expect(
      fam({ condition: { predicateFilter: { passAllFilter: true }, trueFilter: { columnRangeFilter: { familyName: 'a' } } } }),
    ).toEqual(['a']);
    expect(fam({ condition: { predicateFilter: { passAllFilter: true }, falseFilter: { familyNameRegexFilter: 'b' } } })).toEqual(['b']);
    expect(
      fam({
        chain: [
          { familyNameRegexFilter: 'a|b' },
          { interleave: [{ chain: [{ columnRangeFilter: { familyName: 'a' } }, { sink: true }] }, { passAllFilter: true }] },
          { familyNameRegexFilter: 'b' },
        ],
      }),
    ).toEqual(['a', 'b']);
    expect(fam({ chain: [{ sink: true }, { blockAllFilter: true }] })).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------
// Randomized algebraic properties

const FAMS = ['a', 'b', 'c'];
const ALPHABET = [0x00, 0x0a, 0x61, 0x62, 0x80, 0xff];

function randomBytes(rnd: () => number, max: number): Uint8Array {
  const n = Math.floor(rnd() * (max + 1));
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = ALPHABET[Math.floor(rnd() * ALPHABET.length)] as number;
  return out;
}

function randomRow(rnd: () => number): Cell[] {
  const n = Math.floor(rnd() * 14);
  const seen = new Set<string>();
  const out: Cell[] = [];
  for (let i = 0; i < n; i++) {
    const c: Cell = {
      family: FAMS[Math.floor(rnd() * FAMS.length)] as string,
      qualifier: randomBytes(rnd, 2),
      timestamp: Math.floor(rnd() * 5) * 1000,
      value: randomBytes(rnd, 3),
      labels: [],
    };
    const id = `${c.family}/${esc(c.qualifier)}/${c.timestamp}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(c);
  }
  return out.sort(compareCells);
}

/** Random filters without labels (so chains never double-label) and, when asked, without sinks. */
function randomFilter(rnd: () => number, depth: number, allowSink: boolean): RowFilter {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const bound = () => (rnd() < 0.5 ? undefined : randomBytes(rnd, 2));
  const leaves: (() => RowFilter)[] = [
    () => ({ passAllFilter: true }),
    () => ({ blockAllFilter: true }),
    () => ({ familyNameRegexFilter: pick(['a', 'a|b', '.', 'c|b', 'x']) }),
    () => ({ columnQualifierRegexFilter: pick(['', '\\C', 'a\\C*', '.*', '\\xff|b', '[^a]*']) }),
    () => ({ valueRegexFilter: pick(['', '\\C*', '.*', 'a.', '\\x00\\C*']) }),
    () => {
      const s = bound();
      const e = bound();
      const [lo, hi] = s && e && Buffer.compare(s, e) > 0 ? [e, s] : [s, e];
      return { columnRangeFilter: { familyName: pick(FAMS), startQualifierClosed: lo, endQualifierOpen: hi } };
    },
    () => {
      const s = bound();
      const e = bound();
      const [lo, hi] = s && e && Buffer.compare(s, e) > 0 ? [e, s] : [s, e];
      return { valueRangeFilter: { startValueOpen: lo, endValueClosed: hi } };
    },
    () => {
      const s = Math.floor(rnd() * 4) * 1000;
      return { timestampRangeFilter: { startTimestampMicros: s, endTimestampMicros: rnd() < 0.3 ? 0 : s + Math.floor(rnd() * 4) * 1000 } };
    },
    () => ({ cellsPerRowOffsetFilter: Math.floor(rnd() * 5) }),
    () => ({ cellsPerRowLimitFilter: Math.floor(rnd() * 5) }),
    () => ({ cellsPerColumnLimitFilter: Math.floor(rnd() * 3) }),
    () => ({ rowSampleFilter: 0.5 }),
    () => ({ rowKeyRegexFilter: pick(['k.*', '\\C*', 'x']) }),
    () => ({ stripValueTransformer: true }),
  ];
  if (allowSink) leaves.push(() => ({ sink: true }));
  if (depth <= 0 || rnd() < 0.45) return (pick(leaves) as () => RowFilter)();
  const kids = () => Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => randomFilter(rnd, depth - 1, allowSink));
  const r = rnd();
  if (r < 0.4) return { chain: kids() };
  if (r < 0.8) return { interleave: kids() };
  return {
    condition: {
      predicateFilter: randomFilter(rnd, depth - 1, false),
      trueFilter: rnd() < 0.8 ? randomFilter(rnd, depth - 1, false) : undefined,
      falseFilter: rnd() < 0.8 ? randomFilter(rnd, depth - 1, false) : undefined,
    },
  };
}

function isCanonical(cells: readonly Cell[]): boolean {
  for (let i = 1; i < cells.length; i++) if (compareCells(cells[i - 1] as Cell, cells[i] as Cell) > 0) return false;
  return true;
}

describe('randomized properties', () => {
  const ROUNDS = 400;
  const key = bytes('key');

  it('identities, prefixes, canonical order, families — over random rows and filters', () => {
    const rnd = mulberry32(0xb16b00b5);
    for (let round = 0; round < ROUNDS; round++) {
      const row = randomRow(rnd);
      const f = randomFilter(rnd, 3, true);
      const seed = Math.floor(rnd() * 2 ** 32);
      const eval_ = (g: RowFilter) => compileFilter(g).apply(key, row, mulberry32(seed));
      const ctx = `round ${round}: ${JSON.stringify(f, (_k, v) => (v instanceof Uint8Array ? esc(v) : v))}`;

      const base = eval_(f);
      const baseShown = show(base);
      expect(isCanonical(base), ctx).toBe(true);

      expect(show(eval_({ chain: [{ passAllFilter: true }, f] })), ctx).toEqual(baseShown);
      expect(show(eval_({ chain: [f, { passAllFilter: true }] })), ctx).toEqual(baseShown);
      expect(show(eval_({ chain: [f] })), ctx).toEqual(baseShown);
      expect(show(eval_({ interleave: [f] })), ctx).toEqual(baseShown);
      expect(show(eval_({ interleave: [f, { blockAllFilter: true }] })), ctx).toEqual(baseShown);
      expect(eval_({ blockAllFilter: true })).toEqual([]);

      // interleave[f, g] is the multiset union of f and g.
      const g = randomFilter(rnd, 2, true);
      const rng = mulberry32(seed);
      const fo = compileFilter(f).apply(key, row, rng);
      const go = compileFilter(g).apply(key, row, rng);
      const both = eval_({ interleave: [f, g] });
      expect(isCanonical(both), ctx).toBe(true);
      expect(show(both).sort(), ctx).toEqual([...show(fo), ...show(go)].sort());

      // cellsPerRowLimit(n) yields a prefix of its input (no sinks inside f here).
      const h = randomFilter(rnd, 3, false);
      const ho = compileFilter(h).apply(key, row, mulberry32(seed));
      const n = Math.floor(rnd() * 6);
      const limited = compileFilter({ chain: [h, { cellsPerRowLimitFilter: n }] }).apply(key, row, mulberry32(seed));
      expect(show(limited), ctx).toEqual(show(ho).slice(0, n));
      const offset = compileFilter({ chain: [h, { cellsPerRowOffsetFilter: n }] }).apply(key, row, mulberry32(seed));
      expect(show(offset), ctx).toEqual(show(ho).slice(n));
      expect(compileFilter({ chain: [h, { blockAllFilter: true }] }).apply(key, row, mulberry32(seed))).toEqual([]);

      // condition(passAll, t, e) ≡ t on non-empty rows; condition(blockAll, t, e) ≡ e.
      const t = randomFilter(rnd, 2, false);
      const e = randomFilter(rnd, 2, false);
      const tOut = show(compileFilter(t).apply(key, row, mulberry32(seed)));
      const eOut = show(compileFilter(e).apply(key, row, mulberry32(seed)));
      const condT = show(
        compileFilter({ condition: { predicateFilter: { passAllFilter: true }, trueFilter: t, falseFilter: e } }).apply(
          key,
          row,
          mulberry32(seed),
        ),
      );
      const condE = show(
        compileFilter({ condition: { predicateFilter: { blockAllFilter: true }, trueFilter: t, falseFilter: e } }).apply(
          key,
          row,
          mulberry32(seed),
        ),
      );
      expect(condT, ctx).toEqual(row.length > 0 ? tOut : []);
      expect(condE, ctx).toEqual(eOut);

      // The family analysis is conservative: every output family is announced.
      const fams = compileFilter(f).families;
      if (fams !== null) for (const c of base) expect(fams.has(c.family), ctx).toBe(true);

      // Without transformers or sinks, every output cell is an input cell (same object).
      const inputs = new Set(row);
      if (!JSON.stringify(h).includes('stripValue')) for (const c of ho) expect(inputs.has(c), ctx).toBe(true);
    }
  });

  it('cellsPerColumnLimit(n) keeps exactly the newest n of every column', () => {
    const rnd = mulberry32(42);
    for (let round = 0; round < ROUNDS; round++) {
      const row = randomRow(rnd);
      const n = 1 + Math.floor(rnd() * 3);
      const out = compileFilter({ cellsPerColumnLimitFilter: n }).apply(key, row);
      const counts = new Map<string, number>();
      const expected = row.filter((c) => {
        const id = `${c.family}/${esc(c.qualifier)}`;
        const k = (counts.get(id) ?? 0) + 1;
        counts.set(id, k);
        return k <= n;
      });
      expect(show(out)).toEqual(show(expected));
    }
  });
});
