/**
 * MemLocks: a reader finds the in-memory locks of a one-phase commit in flight whether it names
 * the row by its bytes or by its bytesKey (an ASCII string row is its own), only for the columns
 * and start timestamps the locks cover, and no longer once they are released.
 */
import { expect, it } from 'vitest';
import { bytesKey, utf8 } from '../store/bytes.js';
import type { BufferedRow } from './actions/types.js';
import { encodeColumn } from './layout.js';
import { MemLocks } from './mem-locks.js';

const q = (c: string) => encodeColumn(c);

it('is found by the row as bytes or as its bytesKey, for the locked columns of readers above the commit', () => {
  const locks = new MemLocks();
  const rows = [utf8('row-1'), Uint8Array.of(0x72, 0xe9, 0xff)]; // ASCII, and bytes that are no UTF-8
  const buffered: BufferedRow[] = rows.map((row) => ({
    table: 't',
    row,
    cells: [{ column: 'c:a', q: q('c:a'), kind: 'put', value: utf8('v'), notify: false }],
  }));
  const release = locks.acquire(100, buffered);
  for (const row of rows) {
    const asKey = bytesKey(row);
    for (const r of [row, asKey]) {
      expect(locks.blocking('t', r, [q('c:a')], 101)).not.toBeNull();
      expect(locks.blocking('t', r, null, 101)).not.toBeNull();
      expect(locks.blocking('t', r, [q('c:b')], 101)).toBeNull(); // another column
      expect(locks.blocking('t', r, [q('c:a')], 100)).toBeNull(); // a reader at or below the start ts
      expect(locks.blocking('u', r, [q('c:a')], 101)).toBeNull(); // another table
    }
  }
  expect(locks.blocking('t', 'row-2', [q('c:a')], 101)).toBeNull();
  expect(locks.blocking('t', 'row-1', [q('c:a')], 101)).toBe(locks.blocking('t', utf8('row-1'), [q('c:a')], 101));
  release();
  expect(locks.size).toBe(0);
  for (const row of rows) expect(locks.blocking('t', bytesKey(row), null, 101)).toBeNull();
});

it('holds several commits on one row, each released on its own in any order', () => {
  const locks = new MemLocks();
  const row = (ts: number): BufferedRow[] => [
    {
      table: 't',
      row: utf8('r'),
      rowKey: 'r',
      cells: [{ column: 'c:a', q: q('c:a'), kind: 'put', value: utf8(String(ts)), notify: false }],
    },
  ];
  const r10 = locks.acquire(10, row(10));
  const r20 = locks.acquire(20, row(20));
  const r30 = locks.acquire(30, row(30));
  expect(locks.size).toBe(3);
  const at = (ts: number) => locks.blocking('t', 'r', [q('c:a')], ts);
  const table = (ts: number) => locks.blockingTable('t', ts);
  // A reader sees the end of a commit below its start ts; the one it waits for is one of them.
  expect(at(10)).toBeNull();
  expect(at(11)).not.toBeNull();
  expect(at(11)).toBe(table(11));
  r10();
  expect(at(11)).toBeNull();
  expect(table(11)).toBeNull();
  expect(at(21)).not.toBeNull();
  r30();
  expect(at(100)).toBe(at(21)); // only the commit of 20 is left
  expect(table(100)).toBe(at(21));
  r30(); // a second release changes nothing
  expect(locks.size).toBe(1);
  r20();
  expect(locks.size).toBe(0);
  expect(at(100)).toBeNull();
  expect(table(100)).toBeNull();
  // The row is locked again after all that.
  const again = locks.acquire(40, row(40));
  expect(at(41)).not.toBeNull();
  again();
  expect(at(41)).toBeNull();
});
