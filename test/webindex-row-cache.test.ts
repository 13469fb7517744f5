/**
 * A reproduction of an unbounded-memory bug in the store's row cache (src/store/engine-store.ts,
 * src/store/row-cache.ts), found while measuring the web index: RSS grew by ~100 KB per indexed
 * document (1.6 GB at 4 000 synthetic documents; flat at ~340 MB with `cacheBytes: 0`).
 *
 * Cause: after a row mutation, `rewriteRow` caches the *mutation's* cells and accounts only the
 * encoded row size. Those cells' values are views into whatever buffers the caller built them
 * from — Node's 8 KiB allocation pool (every small `Buffer.from(string)`), encoding scratch
 * buffers — so one cached row can keep several KiB alive per cell while being counted as a few
 * dozen bytes, and the budget bounds nothing.
 *
 * Fixed: `rewriteRow` caches views into the encoded row, which has its own exact-size allocation.
 */
import { expect, it } from 'vitest';
import { openStore } from '../src/store/open-store.js';
import type { Cell } from '../src/store/types.js';
import { Percolator } from '../src/txn/percolator.js';

it('the row cache keeps no more memory alive than its budget (values are compact copies)', async () => {
  const budget = 256 * 1024;
  const store = await openStore('memory:', { cacheBytes: budget });
  const db = await Percolator.open({ store, leaseMs: 2_000 });
  try {
    await db.createTable('t');
    for (let i = 0; i < 2_000; i++) await db.transaction(async (tx) => tx.set('t', `row${i}`, 'f:c', `value ${i}`));
    // What the cache retains: the distinct ArrayBuffers behind the cached cells' values and keys.
    const cache = (store as unknown as { cache: { map: Map<string, { cells: readonly Cell[] }> } }).cache;
    const seen = new Set<ArrayBufferLike>();
    let retained = 0;
    for (const e of cache.map.values()) {
      for (const c of e.cells) {
        for (const b of [c.value.buffer, c.qualifier.buffer]) {
          if (seen.has(b)) continue;
          seen.add(b);
          retained += b.byteLength;
        }
      }
    }
    expect(retained).toBeLessThanOrEqual(2 * budget);
  } finally {
    await db.close();
    await store.close();
  }
});
