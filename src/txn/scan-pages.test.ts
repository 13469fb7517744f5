/**
 * A transactional scan with a limit asks the store for rows in pages (snapshot-read.ts ›
 * limitedRows): a remote store streams what it is asked for, so an unlimited read stopped after a
 * few rows would have read and sent many more.
 */
import { afterEach, expect, it } from 'vitest';
import { openStore } from '../store/open-store.js';
import { mulberry32 } from '../util/seeded-random.js';
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

it('returns exactly the first rows the unlimited scan returns, over random rows, ranges, limits and columns (seed 20261206)', async () => {
  const random = mulberry32(20261206);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const inner = await openStore('memory:');
  const { store, reads } = recordingReads(inner, (table) => table === 't');
  db = await Percolator.open({ store });
  const p = db;
  await p.createTable('t');
  // Rows under a few prefixes; each visible, deleted, or holding only a column the scans may leave out.
  const keys = Array.from({ length: 300 }, (_, i) => `${pick(['a', 'b', 'ba', 'c'])}${String(i).padStart(3, '0')}`);
  await p.transaction(async (tx) => {
    for (const k of keys) tx.set('t', k, random() < 0.7 ? 'f:a' : 'f:b', 'v');
  });
  await p.transaction(async (tx) => {
    for (const k of keys) if (random() < 0.3) tx.delete('t', k, 'f:a');
  });
  const snap = await p.begin();
  try {
    const rowsOf = async (range: Parameters<typeof snap.scan>[1], options: Parameters<typeof snap.scan>[2]) => {
      const out: string[] = [];
      for await (const r of snap.scan('t', range, options)) out.push(`${Buffer.from(r.row).toString()}:${[...r.columns.keys()].join(',')}`);
      return out;
    };
    for (let trial = 0; trial < 60; trial++) {
      const [start, end] = [pick(keys), pick(keys)].sort();
      const range = pick([{}, { prefix: pick(['a', 'b', 'ba', 'c']) }, { start: start as string, end: end as string }, { start }]);
      const columns = pick([undefined, ['f:a'], ['f:b'], ['f:']]);
      const limit = 1 + Math.floor(random() * 40);
      const all = await rowsOf(range, columns === undefined ? {} : { columns });
      reads.length = 0;
      const limited = await rowsOf(range, { limit, ...(columns === undefined ? {} : { columns }) });
      expect(limited, JSON.stringify({ trial, range, columns, limit })).toEqual(all.slice(0, limit));
      // Every read asked for a number of rows.
      expect(reads.every((r) => r.limit !== undefined)).toBe(true);
    }
  } finally {
    snap.release();
  }
});
