/**
 * A transaction that spans connection resets, over `bigtable://` to `percolator serve` through a
 * proxy that cuts (test/support/resetting-proxy.ts): each of its calls fits between two resets, so
 * it must commit in one attempt — every read, prewrite and commit that a reset cut off sent again,
 * not the whole transaction failed with IO_ERROR and run again from scratch. A reset between two
 * calls costs nothing (the next call connects again); only calls in flight fail. So here every
 * step of the transaction meets a reset in the middle of its call: its reply lost (the request
 * was applied) or its request lost (it was not).
 *
 * Until 2026-12-02 a cut GetTable (the schema, read again every 10 s), prewrite, commit point whose
 * request was lost, or MutateRow (a worker's notification clearing) failed the call, and with it
 * the transaction or the observer run. A run re-armed on every attempt — a slow run under CI load
 * on a network reset every 0.2–1.2 s (test/webindex-crash.test.ts) — never completed.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type PercolatorServer, startServer } from '../src/server/server.js';
import { LOCK } from '../src/txn/layout.js';
import { Percolator } from '../src/txn/percolator.js';
import type { ProtocolPoint } from '../src/txn/transaction.js';
import { type ResettingProxy, resettingProxy } from './support/resetting-proxy.js';

let server: PercolatorServer;
let proxy: ResettingProxy;
/** A client straight to the server: setup and checks, never cut. */
let direct: Percolator;
const opened: Percolator[] = [];

beforeEach(async () => {
  server = await startServer({ storeUrl: 'memory:', port: 0, httpPort: null, oraclePort: 0, log: () => undefined });
  proxy = await resettingProxy(0, server.port);
  direct = await Percolator.open({ store: `bigtable://127.0.0.1:${server.port}?oracle=127.0.0.1:${server.oraclePort}`, gcIntervalMs: 0 });
  await direct.createTable('t');
});
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
  await direct.close();
  await proxy.close();
  await server.close();
});

/**
 * A client through the proxy (the oracle reached directly: it re-sends on its own, and is not
 * the subject). `onPoint` sees each protocol point of its commits.
 */
async function cutClient(onPoint: (p: ProtocolPoint) => void): Promise<Percolator> {
  const db = await Percolator.open({
    store: `bigtable://127.0.0.1:${proxy.port}?oracle=127.0.0.1:${server.oraclePort}`,
    gcIntervalMs: 0,
    onProtocolPoint: onPoint,
  });
  opened.push(db);
  return db;
}

/** Cells of the lock family left in table t. */
async function locksLeft(): Promise<number> {
  let n = 0;
  for await (const r of direct.store.readRows('t', { filter: { familyNameRegexFilter: LOCK } })) n += r.cells.length;
  return n;
}

describe.each(['reply', 'request'] as const)('every call of a transaction cut off (its %s lost)', (side) => {
  it('commits in one attempt: the cut calls are sent again', async () => {
    await direct.transaction(async (tx) => {
      for (const r of ['a', 'b', 'c']) tx.set('t', r, 'c:v', '1');
    });
    const cuts: Promise<void>[] = [];
    const cut = () => void cuts.push(proxy.cutAt(side));
    let armAt: ProtocolPoint | null = null;
    const db = await cutClient((p) => {
      if (p === armAt) cut();
    });
    let attempts = 0;
    const sum = await db.transaction(
      async (tx) => {
        attempts++;
        cut(); // its first call: the table's check and schema (GetTable), then the read
        const a = Number(await tx.getString('t', 'a', 'c:v'));
        cut();
        const b = Number(await tx.getString('t', 'b', 'c:v'));
        cut();
        let scanned = 0;
        for await (const _ of tx.scan('t', {}, { columns: ['c:v'] })) scanned++;
        tx.set('t', 'a', 'c:v', String(a + 1));
        tx.set('t', 'b', 'c:v', String(b + 1));
        tx.set('t', 'c', 'c:v', String(scanned));
        cut(); // the prewrites (one batched call)
        armAt = 'before-primary-commit'; // the commit point
        return a + b;
      },
      { maxAttempts: 1 },
    );
    armAt = null;
    expect(sum).toBe(2);
    expect(attempts).toBe(1);
    await Promise.all(cuts);
    expect(proxy.armedCuts).toBe(5);
    expect(cuts.length).toBe(5);
    for (const [r, v] of [
      ['a', '2'],
      ['b', '2'],
      ['c', '3'],
    ] as const)
      expect(await direct.getString('t', r, 'c:v')).toBe(v);
    expect(await locksLeft()).toBe(0);
  }, 30_000);
});

it('an observer run whose every call is cut off runs once and commits', async () => {
  let runs = 0;
  let cutting = true;
  let armCommit = false;
  const cut = (side: 'reply' | 'request' = 'reply') => {
    if (cutting) void proxy.cutAt(side);
  };
  const db = await cutClient((p) => {
    if (armCommit && p === 'before-primary-commit') {
      armCommit = false;
      cut('request'); // not applied: without a resend, the commit is rolled back
    }
  });
  const worker = db.worker({ threads: 1, scanners: 1 });
  worker.observe(
    'c:src',
    'copy',
    async (tx, row, _column, table) => {
      runs++;
      cut();
      const src = await tx.getString(table, row, 'c:src');
      cut();
      const other = await tx.getString(table, 'other', 'c:v');
      tx.set(table, row, 'c:dst', `${src}/${other}`);
      tx.set(table, 'other', 'c:v', 'seen');
      cut(); // its prewrites
      armCommit = true; // and its commit point
    },
    { table: 't' },
  );
  await worker.start();
  try {
    // Written by the worker's own client (it knows the column is observed), before any cut.
    await db.transaction(async (tx) => tx.set('t', 'r', 'c:src', 'x'));
    await db.waitForQuiescence({ timeoutMs: 20_000, tables: ['t'] });
    cutting = false;
    expect(await direct.getString('t', 'r', 'c:dst')).toBe('x/null');
    expect(runs).toBe(1);
    expect(worker.metrics.failures).toBe(0);
    expect(proxy.armedCuts).toBeGreaterThanOrEqual(4);
    expect(await locksLeft()).toBe(0);
  } finally {
    cutting = false;
    await worker.stop();
  }
}, 40_000);
