/**
 * Test fixture: an oracle server and two clients on clocks the test moves — `worker` (a process
 * running transactions, on the client clock) and `gc` (another process asking for the watermark,
 * as a GC pass does, on the server's clock) — to make a worker's lease lapse without waiting.
 * Reports are sent every ten minutes of real time, so within a test only those it asks for are.
 */
import * as net from 'node:net';
import { OracleClient } from './client.js';
import { WireErrorCode } from './errors.js';
import { MemoryMarkStore } from './mark-store.js';
import { encodeError, MsgType } from './protocol.js';
import { startOracleServer } from './server.js';

export const REPORT_INTERVAL_MS = 600_000;
export const LEASE_MS = 1_000;
/** The oracle's holdback must exceed its clients' report interval (oracle.ts); equal is enough here. */
export const HOLDBACK_MS = REPORT_INTERVAL_MS;

export interface LeaseClocks {
  readonly clock: { server: number; client: number };
  readonly worker: OracleClient;
  readonly gc: OracleClient;
  /** Stops the oracle and starts a new one on the same port (a restart: what it handed out is forgotten). */
  restart(): Promise<void>;
  /** Requests the oracle has received (every kind), since it last started. */
  requests(): number;
  /** Drops the worker's connection (a network blip: the oracle stays up); the worker reconnects. */
  cut(): void;
  /** Connections on which the worker asked which incarnation the oracle is. */
  incarnationAsks(): number;
}

interface Proxy {
  readonly port: number;
  cut(): void;
  incarnationAsks(): number;
  close(): Promise<void>;
}

/**
 * A TCP relay to the oracle at `port()`, which the test can cut. `olderServer`: it answers the
 * first frame of a connection, if an INCARNATION_REQUEST (what the client sends first), as a
 * server from before that request does — an ERROR, and the connection closed.
 */
async function relay(port: () => number, olderServer: boolean): Promise<Proxy> {
  const sockets = new Set<net.Socket>();
  let asks = 0;
  const server = net.createServer((down) => {
    const up = net.connect({ port: port(), host: '127.0.0.1' });
    for (const sock of [down, up]) {
      sockets.add(sock);
      sock.on('error', () => undefined);
      sock.on('close', () => {
        sockets.delete(sock);
        down.destroy();
        up.destroy();
      });
    }
    let first = true;
    down.on('data', (chunk: Buffer) => {
      if (first && chunk[5] === MsgType.INCARNATION_REQUEST) {
        asks++;
        if (olderServer) {
          down.end(encodeError(chunk.readUInt32LE(8), WireErrorCode.PROTOCOL, 'unknown request type 0x5'));
          up.destroy();
          return;
        }
      }
      first = false;
      up.write(chunk);
    });
    up.on('data', (chunk: Buffer) => down.write(chunk));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => {
      for (const sock of sockets) sock.destroy();
    },
    incarnationAsks: () => asks,
    close: () => {
      for (const sock of sockets) sock.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * `workerLeaseMs`: the lease the worker's client counts on (the server's is LEASE_MS); the worker
 * reaches the oracle through a relay (`olderServer`: see `relay`). Closed by what it pushes onto `cleanups`.
 */
export async function leaseClocks(
  cleanups: (() => Promise<unknown>)[],
  workerLeaseMs = LEASE_MS,
  olderServer = false,
): Promise<LeaseClocks> {
  const clock = { server: 0, client: 0 };
  const start = (port = 0) =>
    startOracleServer({ port, markStore: new MemoryMarkStore(), leaseMs: LEASE_MS, holdbackMs: HOLDBACK_MS, millis: () => clock.server });
  let s = await start();
  cleanups.push(() => s.close());
  const proxy = await relay(() => s.port, olderServer);
  cleanups.push(() => proxy.close());
  const client = (millis: () => number, leaseMs: number, port = s.port) => {
    const c = new OracleClient({ port, reportIntervalMs: REPORT_INTERVAL_MS, leaseMs, millis });
    cleanups.push(() => c.close());
    return c;
  };
  const restart = async () => {
    await s.close();
    s = await start(s.port);
  };
  const worker = client(() => clock.client, workerLeaseMs, proxy.port);
  return {
    clock,
    worker,
    gc: client(() => clock.server, LEASE_MS),
    restart,
    requests: () => s.stats().requests,
    cut: () => proxy.cut(),
    incarnationAsks: () => proxy.incarnationAsks(),
  };
}

/** How far `stallPastLease` moves the clocks: past the holdback and the lease. */
export const STALL_MS = HOLDBACK_MS + 2 * LEASE_MS;

/**
 * The worker stalls past its lease and the holdback (its clock and the server's move on) while the
 * `gc` process asks for the watermark at every holdback step. Returns the last watermark it got.
 */
export async function stallPastLease(s: LeaseClocks): Promise<number> {
  s.clock.client += STALL_MS;
  let w = 0;
  for (let t = 0; t <= STALL_MS + HOLDBACK_MS; t += HOLDBACK_MS) {
    s.clock.server += HOLDBACK_MS;
    w = await s.gc.getWatermarkOnly();
  }
  return w;
}
