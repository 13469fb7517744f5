/**
 * A healthy deployment shows no gRPC errors on `percolator serve`'s status page: a process that
 * opens Percolator over it, and a createTable of a table that exists, fail no call (they read
 * before they create). Until 2026-12-01 each open counted two ALREADY_EXISTS, and each such
 * createTable one, in `/status.json`'s `grpc.errors` and the dashboard's error chart. Nor is a
 * read the client stopped early (a scan's limit) an error of the server's: it counts as cancelled.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type PercolatorServer, startServer } from '../src/server/server.js';
import { Percolator } from '../src/txn/percolator.js';
import { openStore } from '../src/store/open-store.js';

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

it('a read the client stops early counts as cancelled, not as an error', async () => {
  const store = await openStore(`bigtable://127.0.0.1:${server.port}`);
  try {
    await store.createTable('many', { families: { f: {} } });
    for (let i = 0; i < 4_000; i += 500)
      await store.mutateRows(
        'many',
        Array.from({ length: 500 }, (_, j) => ({
          key: Buffer.from(`r${String(i + j).padStart(5, '0')}`),
          mutations: [{ setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 0, value: Buffer.alloc(512) } }],
        })),
      );
    const before = server.status().grpc;
    let seen = 0;
    for await (const _ of store.readRows('many', {})) if (++seen === 3) break;
    // The server learns of the cancel asynchronously.
    const deadline = Date.now() + 5_000;
    while (server.status().grpc.cancelled === before.cancelled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const after = server.status().grpc;
    expect(after.cancelled - before.cancelled).toBe(1);
    expect(after.errors - before.errors).toBe(0);
  } finally {
    await store.close();
  }
});
