/**
 * An in-process `percolator serve` (over `memory:`) on a random port with nothing listening on
 * PORT+2, where a `bigtable://HOST:PORT` client looks for the deployment's oracle by default: tests
 * of where clients find the oracle need that address known to be dead, not taken by chance.
 */
import { connect } from 'node:net';
import { type PercolatorServer, startServer } from '../../src/server/server.js';

/** Whether something accepts connections on 127.0.0.1:port. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** The server, its own oracle on a random port (`0`) or none (`null`); a few tries, then throws. */
export async function serveWithNothingOnPortPlus2(oraclePort: 0 | null): Promise<PercolatorServer> {
  for (let attempt = 0; ; attempt++) {
    const server = await startServer({ storeUrl: 'memory:', port: 0, httpPort: null, oraclePort, log: () => undefined });
    if (!(await listening(server.port + 2))) return server;
    await server.close();
    if (attempt === 5) throw new Error('PORT+2 of every server started was taken');
  }
}
