/**
 * `bigtable://…?oracleTimeoutMs=N`: the timeout of the OracleClient a store URL makes — for
 * `Percolator.open` and for a check's supervisor (`openCheckOracle`) — so that CLI users, who pass
 * a URL and no library options, can set it. With an oracle that is unreachable, whatever needs a
 * timestamp fails with the client's ORACLE_UNAVAILABLE after N ms, not the default 5000.
 */
import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openCheckOracle } from '../src/check/check-oracle.js';
import type { PercolatorServer } from '../src/server/server.js';
import { openStore } from '../src/store/open-store.js';
import { Percolator } from '../src/txn/percolator.js';
import { serveWithNothingOnPortPlus2 } from './support/free-port-plus-2.js';

let server: PercolatorServer;
let deadPort: number;

/** A port nothing listens on: one the OS handed out, closed again. */
async function freedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as net.AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  // No oracle of the server's own (oraclePort null), and nothing on its PORT+2: the default
  // oracle address is unreachable too.
  server = await serveWithNothingOnPortPlus2(null);
  deadPort = await freedPort();
});
afterAll(async () => {
  await server?.close();
});

/** How `run` failed, and how long it took. */
async function failure(run: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const t0 = Date.now();
  const error = await run().then(
    () => new Error('expected a rejection'),
    (e: unknown) => e,
  );
  return { error, ms: Date.now() - t0 };
}

for (const [what, url] of [
  ['named by ?oracle=', () => `bigtable://127.0.0.1:${server.port}?oracle=127.0.0.1:${deadPort}&oracleTimeoutMs=300`],
  ['the default PORT+2', () => `bigtable://127.0.0.1:${server.port}?oracleTimeoutMs=300`],
] as const) {
  it(`Percolator.open: an unreachable oracle (${what}) fails a transaction after oracleTimeoutMs, not 5 s`, async () => {
    const db = await Percolator.open({ store: url() });
    try {
      const tx = await failure(() => db.transaction(async () => undefined));
      expect(tx.error).toMatchObject({ code: 'ORACLE_UNAVAILABLE', details: { timeoutMs: 300 } });
      expect(tx.ms).toBeLessThan(2_500);
      const snap = await failure(() => db.snapshot());
      expect(snap.error).toMatchObject({ code: 'ORACLE_UNAVAILABLE', details: { timeoutMs: 300 } });
      expect(snap.ms).toBeLessThan(2_500);
    } finally {
      await db.close();
    }
  }, 20_000);
}

it("openCheckOracle: a check's supervisor takes the URL's oracleTimeoutMs too", async () => {
  const store = await openStore(`bigtable://127.0.0.1:${server.port}?oracle=127.0.0.1:${deadPort}&oracleTimeoutMs=300`);
  try {
    const oracle = await openCheckOracle(store);
    try {
      expect(oracle).toMatchObject({ shared: true, host: '127.0.0.1', port: deadPort });
      const ts = await failure(() => oracle.source.getTimestamp());
      expect(ts.error).toMatchObject({ code: 'ORACLE_UNAVAILABLE', details: { timeoutMs: 300 } });
      expect(ts.ms).toBeLessThan(2_500);
    } finally {
      await oracle.close();
    }
  } finally {
    await store.close();
  }
}, 20_000);
