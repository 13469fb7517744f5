/**
 * Scanners over a real memory store with a host whose `tryLockRow` always fails (every notified
 * row is held by someone else), so every pass ends with a jump at the first notified row it meets
 * — which is where the previous jump's random origin landed.
 *
 * What src/notify/scanner.ts promises and these check: a jump lands at a random row of the
 * tablet's notified range even in a one-tablet table (an origin of "tablet start + random bytes"
 * once sent every jump to the first row), jumps spread over the tablets of a large table, repeated
 * jumps back off instead of spinning, a backlogged host gets a pass at most every
 * BACKLOG_PAUSE_MS, and passes that find nothing wait twice as long each time, up to
 * EMPTY_PASS_MAX_IDLE_MS (docs/observers.md › Scanning and anti-clumping).
 */
import { describe, expect, it } from 'vitest';
import { BACKLOG_PAUSE_MS, EMPTY_PASS_MAX_IDLE_MS, type ScannerHost, scanLoop } from '../src/notify/scanner.js';
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

/**
 * The first notified row each jump lands on (until `PASSES` jumps, or until `stopAt` if given).
 * `passes` counts the passes begun (each asks for the tables first).
 */
async function jumpLandings(store: Store, stopAt?: number, realIdle = false, backlogged = false, passes = { n: 0 }): Promise<string[]> {
  const landings: string[] = [];
  const host: ScannerHost = {
    store,
    rowLockTtlMs: 1000,
    stats: { rowsScanned: 0, notificationsFound: 0, jumps: 0, emptyPasses: 0 },
    running: () => (stopAt === undefined ? landings.length < PASSES : performance.now() < stopAt),
    tables: async () => {
      passes.n++;
      return ['t'];
    },
    observes: () => true,
    tryLockRow: async (_table, row) => {
      landings.push(Buffer.from(row).toString());
      return false; // held by another scanner: jump
    },
    skip: () => false,
    enqueue: async () => undefined,
    backlogged: () => backlogged,
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

  it('pass at most every BACKLOG_PAUSE_MS while the host is backlogged, and at their own pace when not', async () => {
    const store = await openStore('memory:');
    try {
      await notifiedTable(store);
      const ms = 2.5 * BACKLOG_PAUSE_MS;
      const busy = { n: 0 };
      await jumpLandings(store, performance.now() + ms, true, true, busy);
      // A pause before every pass: two passes begin within 2.5 pauses.
      expect(busy.n).toBeGreaterThanOrEqual(1);
      expect(busy.n).toBeLessThanOrEqual(2);
      const free = { n: 0 };
      await jumpLandings(store, performance.now() + ms, true, false, free);
      // Jumps back off 1, 2, 4 … 50 ms: far more passes in the same time.
      expect(free.n).toBeGreaterThan(5);
    } finally {
      await store.close();
    }
  });

  it('wait twice as long after each pass that found nothing, up to EMPTY_PASS_MAX_IDLE_MS, and woken waits stay short', async () => {
    const store = await openStore('memory:');
    try {
      await store.createTable('t', PERCOLATOR_TABLE_SPEC); // no notifications: every pass is empty
      const waits: { ms: number; wakeable: boolean }[] = [];
      const host: ScannerHost = {
        store,
        rowLockTtlMs: 1000,
        stats: { rowsScanned: 0, notificationsFound: 0, jumps: 0, emptyPasses: 0 },
        running: () => waits.length < 15,
        tables: async () => ['t'],
        observes: () => true,
        tryLockRow: async () => true,
        skip: () => false,
        enqueue: async () => undefined,
        backlogged: () => false,
        idle: async (ms, wakeable = true) => {
          waits.push({ ms, wakeable });
        },
      };
      await scanLoop(host, 'me');
      expect(host.stats.emptyPasses).toBe(15);
      expect(waits.map((w) => w.ms)).toEqual(waits.map((_, i) => Math.min(2 ** (i + 1), EMPTY_PASS_MAX_IDLE_MS)));
      expect(waits.at(-1)?.ms).toBe(EMPTY_PASS_MAX_IDLE_MS);
      // Wakeable: a hint refused because someone else holds its row ends them at once.
      expect(waits.every((w) => w.wakeable)).toBe(true);
    } finally {
      await store.close();
    }
  });
});
