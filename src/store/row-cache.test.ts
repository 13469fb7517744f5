import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ABSENT_ROW } from './encoded-row-cache.js';
import { CELL_OVERHEAD_BYTES, DERIVED_OVERHEAD_BYTES, ENTRY_OVERHEAD_BYTES, RowCache } from './row-cache.js';
import { encodeRowCells } from './row-codec.js';
import type { Cell } from './types.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapBytes(): number {
  gc();
  gc();
  const u = process.memoryUsage();
  return u.heapUsed + u.external + u.arrayBuffers;
}

/** A row as Percolator writes them: a few small lock / write cells. */
function encodedRow(i: number): { cells: Cell[]; bytes: number } {
  const cells: Cell[] = [];
  for (let c = 0; c < 4; c++) {
    cells.push({
      family: 'w',
      qualifier: Buffer.from(`c:col${c}`),
      timestamp: 1_700_000_000_000_000 + i * 4 + c,
      value: Buffer.from(`value-${i}-${c}`),
      labels: [],
    });
  }
  const { value, cells: views } = encodeRowCells(cells);
  return { cells: views, bytes: value.byteLength };
}

describe('RowCache', () => {
  it('keeps its real heap cost near its budget, also for rows of small cells', () => {
    const budget = 4 * 1024 * 1024;
    const cache = new RowCache(budget);
    const before = heapBytes();
    for (let i = 0; i < 100_000; i++) {
      const { cells, bytes } = encodedRow(i);
      cache.set(`row-${i}`, cells, bytes);
    }
    const grown = heapBytes() - before;
    // Counting encoded bytes alone, this cache grew to ~9x its budget.
    expect(grown).toBeLessThan(budget * 1.5);
    expect(grown).toBeGreaterThan(budget * 0.3);
    expect(cache.get('row-99999')).toBeDefined();
    expect(cache.get('row-0')).toBeUndefined();
  });

  it('a replaced or deleted row is not kept alive by the eviction queue', async () => {
    // Dead entries wait in the queue until they reach its head or it is compacted (up to twice as
    // many as live ones, for rows rewritten over and over): they must let go of their rows.
    const cache = new RowCache(64 * 1024 * 1024);
    const refs: WeakRef<object>[] = [];
    // In a function of its own, so that no local of this test keeps the rows.
    const fill = () => {
      for (let round = 0; round < 3; round++) {
        for (let r = 0; r < 10; r++) {
          const { cells, bytes } = encodedRow(round * 10 + r);
          if (round < 2) refs.push(new WeakRef(cells));
          cache.set(`row-${r}`, cells, bytes);
          cache.derive(`row-${r}`, (c) => ({ c })); // a derived value holding the cells
        }
      }
      cache.delete('row-9');
    };
    fill();
    await new Promise((r) => setImmediate(r)); // WeakRef targets stay alive until the turn ends
    gc();
    expect(refs.filter((w) => w.deref() !== undefined)).toHaveLength(0);
    expect(cache.get('row-0')).toBeDefined();
  });

  it('gives a row read since its insertion a second chance', () => {
    const { cells, bytes } = encodedRow(0);
    const entry = bytes + 4 + ENTRY_OVERHEAD_BYTES + cells.length * CELL_OVERHEAD_BYTES;
    const cache = new RowCache(entry * 10);
    cache.set('aaaa', cells, bytes);
    cache.set('bbbb', cells, bytes);
    expect(cache.get('aaaa')).toBeDefined();
    for (let i = 0; i < 9; i++) cache.set(`f00${i}`, cells, bytes); // the 11th entry evicts one
    expect(cache.get('bbbb')).toBeUndefined();
    expect(cache.get('aaaa')).toBeDefined();
    expect(cache.get('f000')).toBeDefined();
  });

  it('caches absent rows and forgets deleted ones', () => {
    const cache = new RowCache(1024 * 1024);
    cache.set('absent', [], 0);
    expect(cache.get('absent')).toEqual([]);
    cache.delete('absent');
    expect(cache.get('absent')).toBeUndefined();
    cache.set('x', [], 0);
    cache.clear();
    expect(cache.get('x')).toBeUndefined();
  });

  it('derives a value once per cached row and forgets it with the row', () => {
    const cache = new RowCache(1024 * 1024);
    let calls = 0;
    const count = (cells: readonly Cell[]) => {
      calls++;
      return { n: cells.length };
    };
    expect(cache.derive('r', count)).toBeUndefined(); // not cached: nothing to keep it with
    const { cells, bytes } = encodedRow(1);
    cache.set('r', cells, bytes);
    const d = cache.derive('r', count);
    expect(d).toEqual({ n: 4 });
    expect(cache.derive('r', count)).toBe(d);
    expect(calls).toBe(1);
    cache.set('r', cells.slice(1), bytes); // the row changed
    expect(cache.derive('r', count)).toEqual({ n: 3 });
    cache.delete('r');
    expect(cache.derive('r', count)).toBeUndefined();
    cache.set('r', [], 0);
    expect(cache.derive('r', count)).toEqual({ n: 0 });
    expect(calls).toBe(3);
  });

  it('charges a derived value to the budget', () => {
    const { cells, bytes } = encodedRow(0);
    const entry = bytes + 4 + ENTRY_OVERHEAD_BYTES + cells.length * CELL_OVERHEAD_BYTES;
    const cache = new RowCache(entry * 10 + DERIVED_OVERHEAD_BYTES / 2);
    const keys = Array.from({ length: 10 }, (_, i) => `r00${i}`);
    for (const k of keys) cache.set(k, cells, bytes);
    expect(keys.filter((k) => cache.get(k) !== undefined)).toHaveLength(10);
    cache.derive('r009', () => ({}));
    // Every entry was hot: the clock cleared them all, then took the oldest.
    expect(keys.filter((k) => cache.get(k) !== undefined)).toEqual(keys.slice(1));
  });

  it('keeps the rows it evicts in its second tier as their encoded bytes, if it was given them', () => {
    const row = (i: number) =>
      encodeRowCells([{ family: 'f', qualifier: Buffer.from('c'), timestamp: i, value: Buffer.from(`v${i}`), labels: [] }]);
    const r0 = row(0);
    const entry = r0.value.byteLength + 4 + ENTRY_OVERHEAD_BYTES + CELL_OVERHEAD_BYTES;
    const cache = new RowCache(entry * 8, 1024 * 1024);
    const fill = (from: number) => {
      for (let i = from; i < from + 8; i++) {
        const r = row(i);
        cache.set(`f${String(i).padStart(3, '0')}`, r.cells, r.value.byteLength, r.value);
      }
    };
    cache.set('r000', r0.cells, r0.value.byteLength, r0.value);
    cache.set('r001', r0.cells, r0.value.byteLength); // without its bytes: cannot be demoted
    cache.set('gone', [], 0); // absent rows need no bytes
    fill(100); // evicts the three
    expect(cache.get('r000')).toBeUndefined();
    expect(cache.takeEncoded('r000')).toEqual(r0.value); // a copy
    expect(cache.takeEncoded('r000')).toBeUndefined(); // handed back once
    expect(cache.takeEncoded('r001')).toBeUndefined();
    expect(cache.takeEncoded('gone')).toBe(ABSENT_ROW);
    fill(200); // demotes f100..f107
    cache.delete('f100');
    expect(cache.takeEncoded('f100')).toBeUndefined();
    cache.set('f101', r0.cells, r0.value.byteLength, r0.value); // back in the decoded tier: not in both
    expect(cache.takeEncoded('f101')).toBeUndefined();
    cache.clear();
    expect(cache.takeEncoded('f102')).toBeUndefined();
  });

  it('caches nothing with a budget of 0', () => {
    const cache = new RowCache(0);
    const { cells, bytes } = encodedRow(1);
    cache.set('r', cells, bytes);
    expect(cache.get('r')).toBeUndefined();
  });
});
