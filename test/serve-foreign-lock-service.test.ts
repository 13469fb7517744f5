/**
 * A lock service on a `percolator serve` over another store than the workers' (`?lockService=`,
 * the deployment of Cloud Bigtable or the emulator with one shared lock service) cannot see their
 * liveness leases: it must not take a live worker's row over. It read the leases in its own
 * store, found none there for them, and — once that store had a `_percolator_workers` table —
 * took every lock held a second or more for a dead process's: each long run ran again in the
 * other worker (2026-12-01, over Google's emulator, every row of a 3 s observer twice).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type PercolatorServer, startServer } from '../src/server/server.js';
import { ensureWorkersTable } from '../src/txn/liveness.js';
import { Percolator } from '../src/txn/percolator.js';

let services: PercolatorServer;
let storeServer: PercolatorServer;
beforeAll(async () => {
  services = await startServer({ storeUrl: 'memory:', port: 0, httpPort: null, oraclePort: 0, log: () => undefined });
  storeServer = await startServer({ storeUrl: 'memory:', port: 0, httpPort: null, oraclePort: null, log: () => undefined });
  // Its own store is used by Percolator clients too: it has leases, none of them the workers'.
  await ensureWorkersTable(services.store);
});
afterAll(async () => {
  await storeServer?.close();
  await services?.close();
});

it("a live worker's row stays its own on a lock service that cannot see its lease", async () => {
  const url = `bigtable://127.0.0.1:${storeServer.port}?oracle=127.0.0.1:${services.oraclePort}&lockService=127.0.0.1:${services.port}`;
  const dbs = [await Percolator.open({ store: url, leaseMs: 2_000 }), await Percolator.open({ store: url, leaseMs: 2_000 })];
  try {
    await dbs[0]?.createTable('docs');
    let runs = 0;
    const workers = dbs.map((db) => {
      const w = db.worker({ threads: 1, scanners: 1 });
      w.observe('c:in', 'slow', async (tx, row) => {
        runs++;
        // Long past RECLAIM_AFTER_MS (1 s), while the other worker's scanner passes over the row.
        await new Promise((r) => setTimeout(r, 3_000));
        tx.set('docs', row, 'c:out', 'done');
      });
      return w;
    });
    for (const w of workers) await w.start();
    // The first process's commit hands the row to its own worker at once.
    await dbs[0]?.transaction(async (tx) => tx.set('docs', 'r', 'c:in', 'x'));
    await dbs[0]?.waitForQuiescence({ timeoutMs: 20_000 });
    expect(await dbs[1]?.getString('docs', 'r', 'c:out')).toBe('done');
    expect(runs).toBe(1);
  } finally {
    for (const db of dbs) await db.close();
  }
}, 30_000);
