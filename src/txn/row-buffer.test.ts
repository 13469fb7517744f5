/**
 * RowBuffer: cells in the order their columns were first written, a rewrite replacing its
 * column's cell in place (one cell per column), found by column with one column or many.
 */
import { expect, it } from 'vitest';
import { utf8 } from '../store/bytes.js';
import type { BufferedCell } from './actions/types.js';
import { encodeColumn } from './layout.js';
import { RowBuffer } from './row-buffer.js';

const cell = (column: string, value: string): BufferedCell => ({
  column,
  q: encodeColumn(column),
  kind: 'put',
  value: utf8(value),
  notify: false,
});
const values = (b: RowBuffer) => b.cells.map((c) => `${c.column}=${Buffer.from(c.value ?? new Uint8Array()).toString()}`);

it('keeps first-write order, replaces a rewritten column in place, and finds every column', () => {
  const b = new RowBuffer('t', utf8('r'), 'r', cell('c:a', '1'));
  expect(b.get('c:a')?.value).toEqual(utf8('1'));
  expect(b.get('c:b')).toBeUndefined();
  b.set(cell('c:a', '2')); // one column: replaced without an index
  expect(values(b)).toEqual(['c:a=2']);
  b.set(cell('c:b', '3'));
  b.set(cell('c:c', '4'));
  b.set(cell('c:a', '5'));
  b.set(cell('c:c', '6'));
  expect(values(b)).toEqual(['c:a=5', 'c:b=3', 'c:c=6']);
  for (const [column, v] of [
    ['c:a', '5'],
    ['c:b', '3'],
    ['c:c', '6'],
  ] as const)
    expect(b.get(column)?.value).toEqual(utf8(v));
  expect(b.get('c:d')).toBeUndefined();
  expect([b.table, b.rowKey]).toEqual(['t', 'r']);
});
