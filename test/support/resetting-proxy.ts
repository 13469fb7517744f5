/**
 * A TCP proxy whose connections can be cut: a network that drops. Each accepted connection is
 * piped to the target; `cutAll()` resets every open connection at once (both sides), so a
 * request forwarded to the server may be applied there while its reply is lost — the failure a
 * client cannot tell from a request never sent. `cutAt('reply')` makes that happen for sure:
 * the server's next bytes (the answer to a request it took, so one in flight) are dropped and
 * every connection is reset instead; `cutAt('request')` drops the client's next bytes (a request:
 * never applied) and resets every connection. Listens on 127.0.0.1.
 *
 * A connection reset while nothing is in flight costs a client nothing (it connects again for its
 * next call); only calls in flight fail. So a test of "a call cut mid-flight" needs the second
 * form: a timer-driven cut hits a call only by chance.
 */
import { type Server, type Socket, createServer, connect } from 'node:net';

export interface ResettingProxy {
  readonly port: number;
  /** Resets every open connection; returns how many pairs were cut. */
  cutAll(): number;
  /**
   * Arms a cut at the next bytes the server sends (`reply`) or the client sends (`request`), on
   * any connection: those bytes are dropped and every connection reset. Resolves once done.
   * Arming again before that cut happens shares it (whichever side it was armed for first).
   */
  cutAt(side: 'reply' | 'request'): Promise<void>;
  /** Cuts made by `cutAt` so far. */
  readonly armedCuts: number;
  close(): Promise<void>;
}

/** A proxy on `port` (0: any free one) to 127.0.0.1:`targetPort`. Rejects if the port is taken. */
export function resettingProxy(port: number, targetPort: number): Promise<ResettingProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let armed: { side: 'reply' | 'request'; promise: Promise<void>; resolve: () => void } | null = null;
  let armedCuts = 0;
  const cutAll = () => {
    const n = pairs.size;
    for (const [a, b] of [...pairs]) {
      a.resetAndDestroy();
      b.resetAndDestroy();
    }
    pairs.clear();
    return n;
  };
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
    // Not piped: bytes may have to be dropped (cutAt).
    const forward = (from: Socket, to: Socket, side: 'reply' | 'request') =>
      from.on('data', (chunk: Buffer) => {
        if (armed?.side === side) {
          const { resolve } = armed;
          armed = null;
          armedCuts++;
          cutAll();
          resolve();
          return;
        }
        if (!to.write(chunk)) {
          from.pause();
          to.once('drain', () => from.resume());
        }
      });
    forward(client, upstream, 'request');
    forward(upstream, client, 'reply');
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('proxy: no TCP address');
      resolve({
        port: address.port,
        cutAll,
        cutAt(side) {
          if (armed === null) {
            let done!: () => void;
            const promise = new Promise<void>((r) => (done = r));
            armed = { side, promise, resolve: done };
          }
          return armed.promise;
        },
        get armedCuts() {
          return armedCuts;
        },
        close() {
          cutAll();
          armed?.resolve();
          armed = null;
          return new Promise((r) => server.close(() => r()));
        },
      });
    });
  });
}
