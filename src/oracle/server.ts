/**
 * The oracle as a network service: `startOracleServer` listens on TCP (127.0.0.1 by default) and
 * serves the framed protocol of `protocol.ts` from one in-process `Oracle`.
 *
 * Invariants:
 * - Every TS_REQUEST is answered with a contiguous range from `Oracle.tryAllocate`/`allocate`,
 *   so the persistence rule and monotonicity of `oracle.ts` hold for every remote caller.
 * - Requests of one connection are answered in the order they arrived (allocation is FIFO).
 * - A bad frame (length, version, type, payload size) gets an ERROR frame and that connection
 *   is closed; a bad argument (batch size 0 or above the cap) gets an ERROR for that request id
 *   and the connection stays open. Nothing a client sends affects other connections.
 * - A connection whose unread responses exceed 1 MiB (a client that writes but never reads) is
 *   destroyed.
 *
 * - Start-up binds the address before it opens the oracle it owns (loads the mark and saves the
 *   first reservation): a port that cannot be bound is LISTEN_FAILED with nothing created — no
 *   mark file, no lock file, no directory for them. The order is safe for the never-backwards
 *   rule: nothing is answered before `Oracle.open` returned (connections accepted meanwhile are
 *   held unread), so every timestamp still comes from a durable reservation above the loaded
 *   mark. The other order would need the mark removed after a failed listen to leave nothing
 *   behind, and removing a mark is the one thing that can make an oracle go back.
 *
 * Concurrency contract: single JS thread; handlers never await on the hot path (the synchronous
 * `tryAllocate` serves almost every request); `close()` stops accepting, drops connections and
 * closes the oracle if the server opened it.
 */
import * as net from 'node:net';
import { OracleError, WireErrorCode, wireCodeOf } from './errors.js';
import type { MarkStore } from './mark-store.js';
import { Oracle, type OracleOptions } from './oracle.js';
import { checkServerOptions } from './oracle-options.js';
import {
  encodeError,
  encodeIncarnation,
  encodeIssued,
  encodeTsResponse,
  encodeWatermark,
  expectedPayload,
  FrameReader,
  MsgType,
  NONE_HI,
  PROTOCOL_VERSION,
  readU64,
} from './protocol.js';

export interface OracleServerOptions extends Partial<Omit<OracleOptions, 'markStore'>> {
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 0 (an ephemeral port; read it back from the result). */
  readonly port?: number;
  /** Where the oracle's durable mark lives (required unless `oracle` is given). */
  readonly markStore?: MarkStore;
  /** Serve an already open oracle (not closed by `close()`). */
  readonly oracle?: Oracle;
  /** Default 4096. */
  readonly maxConnections?: number;
}

export interface OracleServerStats {
  readonly connections: number;
  readonly requests: number;
  readonly timestamps: number;
  readonly protocolErrors: number;
  readonly badRequests: number;
}

export interface OracleServer {
  readonly host: string;
  readonly port: number;
  readonly oracle: Oracle;
  stats(): OracleServerStats;
  /** Stops listening, drops every connection, closes the oracle if the server opened it. */
  close(): Promise<void>;
}

const MAX_UNREAD_BYTES = 1 << 20;

export async function startOracleServer(options: OracleServerOptions = {}): Promise<OracleServer> {
  checkServerOptions(options);
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 0;
  const ownsOracle = options.oracle === undefined;
  /** Set once the oracle is open: connections accepted before wait unread in `early` (header). */
  let theOracle: Oracle | null = options.oracle ?? null;
  const early: net.Socket[] = [];

  const sockets = new Set<net.Socket>();
  let requests = 0;
  let timestamps = 0;
  let protocolErrors = 0;
  let badRequests = 0;

  const serve = (socket: net.Socket, oracle: Oracle): void => {
    sockets.add(socket);
    socket.setNoDelay(true);
    let dead = false;

    const send = (buf: Buffer): void => {
      if (dead) return;
      socket.write(buf);
      if (socket.writableLength > MAX_UNREAD_BYTES) kill();
    };
    const kill = (): void => {
      dead = true;
      socket.destroy();
    };
    const protocolError = (requestId: number, message: string): false => {
      protocolErrors++;
      if (!dead) {
        dead = true;
        socket.end(encodeError(requestId, WireErrorCode.PROTOCOL, message));
        setTimeout(() => socket.destroy(), 1000).unref();
      }
      return false;
    };
    const sendError = (requestId: number, err: unknown): void => {
      const code = err instanceof OracleError ? wireCodeOf(err.code) : WireErrorCode.UNAVAILABLE;
      if (code === WireErrorCode.BAD_REQUEST) badRequests++;
      send(encodeError(requestId, code, err instanceof Error ? err.message : String(err)));
    };

    const onFrame = (buf: Buffer, start: number, end: number): boolean => {
      const version = buf[start];
      const type = buf[start + 1];
      const requestId = buf.readUInt32LE(start + 4);
      if (version !== PROTOCOL_VERSION) {
        return protocolError(requestId, `unknown protocol version ${version} (this server speaks ${PROTOCOL_VERSION})`);
      }
      const payload = end - start - 8;
      const expected = expectedPayload(type);
      if (
        type !== MsgType.TS_REQUEST &&
        type !== MsgType.REPORT &&
        type !== MsgType.WATERMARK_REQUEST &&
        type !== MsgType.ISSUED_REQUEST &&
        type !== MsgType.INCARNATION_REQUEST
      ) {
        return protocolError(requestId, `unknown request type 0x${type.toString(16)}`);
      }
      if (payload !== expected) {
        return protocolError(requestId, `request type 0x${type.toString(16)} needs ${expected} payload bytes, got ${payload}`);
      }
      requests++;
      const p = start + 8;
      if (type === MsgType.TS_REQUEST) {
        const count = buf.readUInt32LE(p);
        let first: number;
        try {
          first = oracle.tryAllocate(count);
        } catch (e) {
          sendError(requestId, e);
          return true;
        }
        if (first >= 0) {
          timestamps += count;
          send(encodeTsResponse(requestId, first, count));
        } else {
          oracle.allocate(count).then(
            (f) => {
              timestamps += count;
              send(encodeTsResponse(requestId, f, count));
            },
            (e: unknown) => sendError(requestId, e),
          );
        }
        return true;
      }
      if (type === MsgType.REPORT) {
        const clientId = readU64(buf, p);
        const oldestHi = buf.readUInt32LE(p + 12);
        const oldest = oldestHi === NONE_HI ? Number.POSITIVE_INFINITY : readU64(buf, p + 8);
        if (clientId < 0 || oldest < 0) return protocolError(requestId, 'REPORT carries a value above 2^53');
        send(encodeWatermark(requestId, oracle.reportRemote(clientId, oldest)));
        return true;
      }
      if (type === MsgType.ISSUED_REQUEST) {
        send(encodeIssued(requestId, oracle.stats().handedOut));
        return true;
      }
      if (type === MsgType.INCARNATION_REQUEST) {
        send(encodeIncarnation(requestId, oracle.incarnation));
        return true;
      }
      send(encodeWatermark(requestId, oracle.watermarkNow()));
      return true;
    };

    const reader = new FrameReader(onFrame, (reason) => protocolError(0, reason));
    socket.on('data', (chunk: Buffer) => reader.push(chunk));
    socket.on('error', () => undefined); // a reset client: 'close' follows
    socket.on('close', () => {
      dead = true;
      sockets.delete(socket);
    });
    // Accepted paused (pauseOnConnect): its bytes are read from here on.
    socket.resume();
  };

  const server = net.createServer({ noDelay: true, pauseOnConnect: true }, (socket) => {
    if (theOracle === null) {
      socket.on('error', () => undefined); // a client that gave up waiting: dropped or served as it is
      early.push(socket);
    } else serve(socket, theOracle);
  });
  server.maxConnections = options.maxConnections ?? 4096;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((e: unknown) => {
    const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    throw new OracleError(
      'LISTEN_FAILED',
      `cannot listen on ${address} (oracle): ${(e as Error).message}`,
      { host, port, role: 'oracle', errno: (e as NodeJS.ErrnoException).code },
      { cause: e },
    );
  });

  if (theOracle === null) {
    const { clock, millis, reserveMicros, maxBatch, leaseMs, holdbackMs } = options;
    try {
      theOracle = await Oracle.open({
        markStore: options.markStore as MarkStore,
        clock,
        millis,
        reserveMicros,
        maxBatch,
        leaseMs,
        holdbackMs,
      });
    } catch (e) {
      // No oracle, no service: the port is given back and whoever connected meanwhile is dropped.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of early.splice(0)) s.destroy();
      await closed;
      throw e;
    }
  }
  const oracle = theOracle;
  oracle.enableRemoteClients();
  for (const s of early.splice(0)) if (!s.destroyed) serve(s, oracle);
  const address = server.address() as net.AddressInfo;

  let closing: Promise<void> | null = null;
  return {
    host,
    port: address.port,
    oracle,
    stats: () => ({ connections: sockets.size, requests, timestamps, protocolErrors, badRequests }),
    close(): Promise<void> {
      if (closing === null) {
        closing = (async () => {
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          for (const s of sockets) s.destroy();
          await closed;
          if (ownsOracle) await oracle.close();
        })();
      }
      return closing;
    },
  };
}
