/**
 * A TCP proxy whose connections can be cut: a network that drops. Each accepted connection is
 * piped to the target; `cutAll()` resets every open connection at once (both sides), so a
 * request forwarded to the server may be applied there while its reply is lost — the failure a
 * client cannot tell from a request never sent. Listens on 127.0.0.1.
 */
import { type Server, type Socket, createServer, connect } from 'node:net';

export interface ResettingProxy {
  readonly port: number;
  /** Resets every open connection; returns how many pairs were cut. */
  cutAll(): number;
  close(): Promise<void>;
}

/** A proxy on `port` (0: any free one) to 127.0.0.1:`targetPort`. Rejects if the port is taken. */
export function resettingProxy(port: number, targetPort: number): Promise<ResettingProxy> {
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const s of pair) s.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('proxy: no TCP address');
      const cutAll = () => {
        const n = pairs.size;
        for (const [a, b] of [...pairs]) {
          a.resetAndDestroy();
          b.resetAndDestroy();
        }
        pairs.clear();
        return n;
      };
      resolve({
        port: address.port,
        cutAll,
        close() {
          cutAll();
          return new Promise((r) => server.close(() => r()));
        },
      });
    });
  });
}
