/**
 * Where does an anti-clumping jump land? src/notify/scanner.ts promises that a scanner that meets
 * another scanner's row "jumps to a new random place". These tests drive the real `scanLoop`
 * over a real memory store with a host whose `tryLockRow` always fails (every notified row is
 * held by someone else), so every pass ends with a jump at the first notified row it meets —
 * which is where the previous jump's random origin landed.
 *
 * KNOWN BUG (reported, not fixed here — src/notify is not this file's to change): the random
 * origin is "tablet start + 1–4 random bytes". With the default store a table below 64 MiB is ONE
 * tablet whose start is the empty key, so the origin is a random 1–4-byte key; row keys with a
 * common prefix (`row-0000` … `row-0999`) almost never sort between such keys (the first byte
 * must be exactly 'r', then 'o', …), so the scan starts before every row or after every row and
 * in both cases meets `row-0000` first. Every "random" jump lands on the table's first notified
 * row: scanners re-clump at the beginning of each tablet. The first test below fails until the
 * scanner draws origins from the tablet's actual key range (see the proposed fix in
 * docs/observers.md); the second shows the same scanner spreads out once the table has many
 * tablets, as a large Bigtable table does.
 *
 * SECOND KNOWN ISSUE (performance): a jump is followed at once by a new pass (one setImmediate
 * in between). When every notified row a scanner meets is held by others — few notifications,
 * many scanners, slow observers — the scanners spin at full speed, re-reading the notify group
 * and competing with the observers for the event loop (`percolator bench clumping` measured
 * ~7 500 jumps/s for 300 notifications/s with 8 scanners). The third test fails until repeated
 * jumps back off the way empty passes do.
 */
import { describe, expect, it } from 'vitest';
import { type ScannerHost, scanLoop } from '../src/notify/scanner.js';
import { openStore } from '../src/store/open-store.js';
import type { Store } from '../src/store/store.js';
import { encodeColumn, NOTIFY, PERCOLATOR_TABLE_SPEC } from '../src/txn/layout.js';

const ROWS = 1000;
const PASSES = 300;

async function notifiedTable(store: Store): Promise<void> {
  await store.createTable('t', PERCOLATOR_TABLE_SPEC);
  for (let i = 0; i < ROWS; i++) {
    await store.mutateRow('t', Buffer.from(`row-${String(i).padStart(4, '0')}`), [
      { setCell: { familyName: NOTIFY, columnQualifier: encodeColumn('c:value'), timestampMicros: 1000, value: Buffer.from('s') } },
    ]);
  }
}

/** The first notified row each jump lands on (until `PASSES` jumps, or until `stopAt` if given). */
async function jumpLandings(store: Store, stopAt?: number, realIdle = false): Promise<string[]> {
  const landings: string[] = [];
  const host: ScannerHost = {
    store,
    rowLockTtlMs: 1000,
    stats: { rowsScanned: 0, notificationsFound: 0, jumps: 0, emptyPasses: 0 },
    running: () => (stopAt === undefined ? landings.length < PASSES : performance.now() < stopAt),
    tables: async () => ['t'],
    observes: () => true,
    tryLockRow: async (_table, row) => {
      landings.push(Buffer.from(row).toString());
      return false; // held by another scanner: jump
    },
    skip: () => false,
    enqueue: async () => undefined,
    // realIdle: like the worker's, a real wait (woken early only by new work, which never comes
    // here); otherwise instant, to count where jumps land without waiting for their backoff.
    idle: (ms) => (realIdle ? new Promise<void>((r) => setTimeout(r, ms)) : Promise.resolve()),
  };
  await scanLoop(host, 'me');
  return landings;
}

describe('scanner anti-clumping jumps', () => {
  it('land at random rows of a one-tablet table', async () => {
    const store = await openStore('memory:');
    try {
      await notifiedTable(store);
      expect((await store.sampleRowKeys('t')).length).toBe(1);
      const landings = await jumpLandings(store);
      const distinct = new Set(landings).size;
      // Uniform landings would give ~260 distinct rows out of 300 jumps over 1000 rows.
      expect(distinct).toBeGreaterThan(100);
    } finally {
      await store.close();
    }
  });

  it('land at many different rows when the table has many tablets', async () => {
    const store = await openStore('memory:', { tabletSplitBytes: 2048 });
    try {
      await notifiedTable(store);
      // Splits happen in the background: wait until the table has many tablets.
      for (let i = 0; i < 200 && (await store.sampleRowKeys('t')).length < 10; i++) await new Promise((r) => setTimeout(r, 10));
      const tablets = (await store.sampleRowKeys('t')).length;
      expect(tablets).toBeGreaterThanOrEqual(10);
      const landings = await jumpLandings(store);
      expect(new Set(landings).size).toBeGreaterThanOrEqual(Math.min(tablets, PASSES) / 2);
    } finally {
      await store.close();
    }
  });

  it('back off when every notified row they meet is held', async () => {
    const store = await openStore('memory:', { tabletSplitBytes: 2048 });
    try {
      await notifiedTable(store);
      // Every notified row stays held by other scanners for 300 ms: nothing can be queued.
      const landings = await jumpLandings(store, performance.now() + 300, true);
      // Backing off like empty passes (1, 2, 4 … 50 ms) allows a few dozen passes; spinning does thousands.
      expect(landings.length).toBeLessThan(100);
    } finally {
      await store.close();
    }
  });
});
