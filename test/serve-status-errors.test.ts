/**
 * A healthy deployment shows no gRPC errors on `percolator serve`'s status page: a process that
 * opens Percolator over it, and a createTable of a table that exists, fail no call (they read
 * before they create). Until 2026-12-01 each open counted two ALREADY_EXISTS, and each such
 * createTable one, in `/status.json`'s `grpc.errors` and the dashboard's error chart.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type PercolatorServer, startServer } from '../src/server/server.js';
import { Percolator } from '../src/txn/percolator.js';

let server: PercolatorServer;
beforeAll(async () => {
  server = await startServer({ storeUrl: 'memory:', port: 0, httpPort: null, oraclePort: 0, log: () => undefined });
});
afterAll(async () => {
  await server?.close();
});

it('opening Percolator again and creating a table that exists count no error', async () => {
  const url = `bigtable://127.0.0.1:${server.port}?oracle=127.0.0.1:${server.oraclePort}`;
  // The deployment's first open finds no system table: what that costs is not the point.
  const first = await Percolator.open({ store: url, gcIntervalMs: 0 });
  await first.createTable('docs');
  await first.close();
  const before = server.status().grpc;
  for (let i = 0; i < 2; i++) {
    const db = await Percolator.open({ store: url, gcIntervalMs: 0 });
    try {
      await db.createTable('docs');
      await db.transaction(async (tx) => tx.set('docs', `r${i}`, 'c:v', 'x'));
      expect(await db.getString('docs', `r${i}`, 'c:v')).toBe('x');
    } finally {
      await db.close();
    }
  }
  const after = server.status().grpc;
  expect(after.requests).toBeGreaterThan(before.requests);
  expect(after.errors - before.errors).toBe(0);
});
