/**
 * Clients of a `percolator serve` whose oracle is not on PORT+2 (`--port 0`, `--oracle-port P`):
 * `bigtable://HOST:PORT?oracle=HOST2:PORT2` names it, for the library and for every CLI command
 * taking --store; without it the unreachable-oracle error says the address was PORT+2, the
 * default, and how to name another.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type PercolatorServer, startServer } from '../src/server/server.js';
import { Percolator } from '../src/txn/percolator.js';

let server: PercolatorServer;
let dir: string;

/** Whether something accepts connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'serve-oracle-url-'));
  // Random ports, as `serve --port 0` picks them; the test needs nothing on PORT+2.
  for (let attempt = 0; ; attempt++) {
    server = await startServer({ storeUrl: 'memory:', port: 0, httpPort: null, oraclePort: 0, log: () => undefined });
    if (!(await listening(server.port + 2))) break;
    await server.close();
    if (attempt === 5) throw new Error('PORT+2 of every server started was taken');
  }
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const plainUrl = () => `bigtable://127.0.0.1:${server.port}`;
const namedUrl = () => `bigtable://127.0.0.1:${server.port}?oracle=127.0.0.1:${server.oraclePort}`;

it('the library: without ?oracle= the error says the address is PORT+2, the default; with it transactions and observers run', async () => {
  const guessed = await Percolator.open({ store: plainUrl() });
  try {
    const t0 = Date.now();
    const e = await guessed.transaction(async () => undefined).catch((err: unknown) => err);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(e).toMatchObject({
      code: 'ORACLE_UNAVAILABLE',
      details: { port: server.port + 2, addressSource: expect.stringContaining(`PORT+2 of ${plainUrl()}, the default`) },
    });
    expect((e as Error).message).toContain(`the oracle at 127.0.0.1:${server.port + 2} is unreachable (` /* attempts, last error */);
    expect((e as Error).message).toContain(
      `; that address is PORT+2 of ${plainUrl()}, the default; set ?oracle=HOST:PORT if the server's oracle listens elsewhere`,
    );
  } finally {
    await guessed.close();
  }

  // Named: the server's oracle, and its lock service on the gRPC port (named too, here, as it may be).
  const db = await Percolator.open({ store: `${namedUrl()}&lockService=127.0.0.1:${server.port}` });
  try {
    await db.createTable('lib');
    const worker = db.worker({ threads: 1 });
    worker.observe('c:in', 'copy', async (tx, row) => tx.set('lib', row, 'c:out', `seen ${await tx.getString('lib', row, 'c:in')}`), {
      table: 'lib',
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('lib', 'r', 'c:in', 'v'));
    await db.waitForQuiescence({ tables: ['lib'], timeoutMs: 20_000 });
    expect(await db.getString('lib', 'r', 'c:out')).toBe('seen v');
    expect(server.oracle?.stats().timestamps).toBeGreaterThan(0); // the server's oracle, no other
    await worker.stop();
  } finally {
    await db.close();
  }
}, 60_000);
