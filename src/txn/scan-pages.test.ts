/**
 * A transactional scan with a limit asks the store for rows in pages (snapshot-read.ts ›
 * limitedRows): a remote store streams what it is asked for, so an unlimited read stopped after a
 * few rows would have read and sent many more.
 */
import { afterEach, expect, it } from 'vitest';
import { openStore } from '../store/open-store.js';
import { Percolator } from './percolator.js';
import { recordingReads } from './recording-reads.fixture.js';

let db: Percolator | null = null;
afterEach(async () => {
  await db?.close();
  db = null;
});

const key = (i: number) => `r${String(i).padStart(3, '0')}`;

it('asks for the rows a limit wants, then 8x more a page past rows with nothing visible; the range end holds', async () => {
  const inner = await openStore('memory:');
  const { store, reads } = recordingReads(inner, (table) => table === 't');
  db = await Percolator.open({ store });
  const p = db;
  await p.createTable('t');
  await p.transaction(async (tx) => {
    for (let i = 0; i < 100; i++) tx.set('t', key(i), 'f:c', String(i));
  });
  // Rows 0–9 deleted: their rows hold write records, nothing visible.
  await p.transaction(async (tx) => {
    for (let i = 0; i < 10; i++) tx.delete('t', key(i), 'f:c');
  });
  const scanned = async (range: { start?: string; end?: string }, limit: number) => {
    reads.length = 0;
    const snap = await p.begin();
    try {
      const out: string[] = [];
      for await (const r of snap.scan('t', range, { limit })) out.push(Buffer.from(r.row).toString());
      return out;
    } finally {
      snap.release();
    }
  };
  // From row 20 every row is visible: one page of exactly the limit.
  expect(await scanned({ start: key(20) }, 3)).toEqual([key(20), key(21), key(22)]);
  expect(reads).toEqual([{ limit: 3, rows: 3 }]);
  // From row 0: a page of 3 deleted rows, then 24 (7 deleted, 3 visible taken), the rest never asked for.
  expect(await scanned({}, 3)).toEqual([key(10), key(11), key(12)]);
  expect(reads).toEqual([
    { limit: 3, rows: 3 },
    { limit: 24, rows: 10 },
  ]);
  // A range's end holds across pages: rows 5–14 hold 5 visible, fewer than the limit.
  expect(await scanned({ start: key(5), end: key(15) }, 8)).toEqual([10, 11, 12, 13, 14].map(key));
  expect(reads).toEqual([
    { limit: 8, rows: 8 },
    { limit: 64, rows: 2 },
  ]);
});
