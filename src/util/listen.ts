/** Starts a server listening on host:port (0 = an ephemeral port) and resolves with the port. */
import type { Server } from 'node:net';

export async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error(`server on ${host}:${port} has no TCP address`);
  return address.port;
}
