/**
 * OracleClient ↔ oracle server over loopback, in one process: batching, ranges, reconnects,
 * timeouts, unreachable oracle, bad input from one connection not disturbing others, and start-up
 * (the port bound before the mark is loaded).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OracleClient } from './client.js';
import { isOracleError, OracleError, WireErrorCode } from './errors.js';
import { FileMarkStore, MemoryMarkStore } from './mark-store.js';
import {
  encodeError,
  encodeIncarnation,
  encodeIssued,
  encodeTsRequest,
  encodeWatermark,
  FrameReader,
  MsgType,
  PROTOCOL_VERSION,
  readU64,
} from './protocol.js';
import { keepServed, type RawConnection, rawConnection, until } from './raw-connection.fixture.js';
import { type OracleServer, startOracleServer } from './server.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(options: Parameters<typeof startOracleServer>[0] = {}): Promise<OracleServer> {
  const s = await startOracleServer({ markStore: new MemoryMarkStore(), ...options });
  cleanups.push(() => s.close());
  return s;
}

function client(port: number, options: Partial<ConstructorParameters<typeof OracleClient>[0]> = {}): OracleClient {
  const c = new OracleClient({ port, ...options });
  cleanups.push(() => c.close());
  return c;
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A raw protocol connection for sending arbitrary bytes. */
const raw = (port: number) => rawConnection(port, cleanups);

function isIncreasing(xs: readonly number[]): boolean {
  for (let i = 1; i < xs.length; i++) if (!(xs[i] > xs[i - 1])) return false;
  return true;
}

describe('OracleClient and server', () => {
  it('batches concurrent callers into one request in flight; results strictly increase in resolution order', async () => {
    const s = await server();
    const c = client(s.port);
    await c.getTimestamp();
    const before = c.stats().requests;
    const got: number[] = [];
    await Promise.all(
      Array.from({ length: 1000 }, async () => {
        got.push(await c.getTimestamp());
      }),
    );
    expect(got.length).toBe(1000);
    expect(isIncreasing(got)).toBe(true);
    expect(c.stats().requests - before).toBe(1); // all 1000 arrived together: one request
    expect(c.stats().largestBatch).toBe(1000);

    // Callers that loop: each round's callers join the next request.
    const seq: number[] = [];
    await Promise.all(
      Array.from({ length: 100 }, async () => {
        for (let i = 0; i < 50; i++) seq.push(await c.getTimestamp());
      }),
    );
    expect(seq.length).toBe(5000);
    expect(isIncreasing(seq)).toBe(true);
    expect(c.stats().requests - before).toBeLessThanOrEqual(1 + 60);
  });

  it('serves ranges, start timestamps and singles from one response, contiguous and in order', async () => {
    const s = await server();
    const c = client(s.port);
    const [a, b, r, d] = await Promise.all([c.getTimestamp(), c.getStartTimestamp(), c.getTimestamps(10), c.getTimestamp()]);
    expect(b.timestamp).toBe(a + 1);
    expect(r).toEqual({ first: a + 2, count: 10 });
    expect(d).toBe(a + 12);
    b.release();
    await expect(c.getTimestamps(0)).rejects.toMatchObject({ code: 'ORACLE_BAD_REQUEST' });
  });

  it('a server whose wall clock goes backwards keeps handing out increasing timestamps', async () => {
    let now = 1_800_000_000_000_000;
    const s = await server({ clock: () => now });
    const c = client(s.port);
    const got: number[] = [];
    for (let round = 0; round < 5; round++) {
      got.push(...(await Promise.all(Array.from({ length: 20 }, () => c.getTimestamp()))));
      now -= 60_000_000; // a minute back each round
    }
    expect(got[0]).toBeGreaterThanOrEqual(1_800_000_000_000_000);
    expect(isIncreasing(got)).toBe(true);
    now += 3_600_000_000; // and far ahead: timestamps follow the clock again
    expect(await c.getTimestamp()).toBe(now);
  });

  it('splits a queue larger than maxBatch over several requests', async () => {
    const s = await server();
    const c = client(s.port, { maxBatch: 10 });
    await c.getTimestamp();
    const before = c.stats().requests;
    const results = await Promise.all([
      ...Array.from({ length: 25 }, () => c.getTimestamp()),
      c.getTimestamps(7),
      ...Array.from({ length: 3 }, () => c.getTimestamp()),
    ]);
    expect(c.stats().requests - before).toBe(4); // 10 + 10 + (5) + (7 + 3)
    expect(c.stats().largestBatch).toBe(10);
    const singles = results.filter((x): x is number => typeof x === 'number');
    expect(new Set(singles).size).toBe(28);
    expect(isIncreasing(singles)).toBe(true);
  });

  it('reports an unreachable oracle with ORACLE_UNAVAILABLE within the timeout', async () => {
    const port = await freePort();
    const c = client(port, { timeoutMs: 300 });
    const t0 = Date.now();
    const err = await c.getTimestamp().catch((e: unknown) => e);
    const elapsed = Date.now() - t0;
    expect(isOracleError(err, 'ORACLE_UNAVAILABLE')).toBe(true);
    expect(err).toMatchObject({ details: { host: '127.0.0.1', port, lastError: 'ECONNREFUSED', timeoutMs: 300 } });
    expect((err as { details: { attempts: number } }).details.attempts).toBeGreaterThanOrEqual(1);
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(1500);
    await expect(c.getWatermark()).rejects.toMatchObject({ code: 'ORACLE_UNAVAILABLE' });
  });

  it('times out with ORACLE_TIMEOUT when the oracle accepts but never answers', async () => {
    const silent = net.createServer((socket) => socket.on('error', () => undefined).resume());
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => silent.close(() => r())));
    const c = client((silent.address() as net.AddressInfo).port, { timeoutMs: 200 });
    const t0 = Date.now();
    await expect(c.getTimestamp()).rejects.toMatchObject({ code: 'ORACLE_TIMEOUT', details: { timeoutMs: 200, batch: 1 } });
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('reconnects after the oracle restarts and keeps increasing', async () => {
    const marks = new MemoryMarkStore();
    const s1 = await startOracleServer({ markStore: marks });
    const port = s1.port;
    const c = client(port, { timeoutMs: 5000, backoffInitialMs: 5 });
    const before: number[] = [];
    for (let i = 0; i < 100; i++) before.push(await c.getTimestamp());
    await s1.close();
    // Callers arriving while it is down wait (within their timeout) and are served after restart.
    const pending = Promise.all(Array.from({ length: 50 }, () => c.getTimestamp()));
    const s2 = await startOracleServer({ markStore: marks, port });
    cleanups.push(() => s2.close());
    const after = await pending;
    expect(isIncreasing([...before, ...after])).toBe(true);
    expect(c.stats().connects).toBeGreaterThanOrEqual(2);
  });

  it('closing the client rejects pending callers with ORACLE_CLOSED', async () => {
    const port = await freePort();
    const c = new OracleClient({ port, timeoutMs: 5000 });
    const p = expect(c.getTimestamp()).rejects.toMatchObject({ code: 'ORACLE_CLOSED' });
    await c.close();
    await p;
    await expect(c.getTimestamp()).rejects.toMatchObject({ code: 'ORACLE_CLOSED' });
  });

  it('watermark: leases of remote clients hold it at their oldest active start timestamp', async () => {
    const s = await server({ holdbackMs: 0, leaseMs: 60_000 });
    const c1 = client(s.port);
    const c2 = client(s.port);
    const start = await c1.getStartTimestamp();
    for (let i = 0; i < 10; i++) await c2.getTimestamp();
    expect(await c1.getWatermark()).toBe(start.timestamp);
    expect(await c2.getWatermarkOnly()).toBe(start.timestamp);
    expect(c1.leaseExpiresAt()).toBeGreaterThan(performance.now());
    start.release();
    const w = await c1.getWatermark();
    expect(w).toBeGreaterThan(start.timestamp);
    expect(c1.knownWatermark).toBe(w);
  });

  it("issuedCount: the oracle's count of timestamps handed out to every client", async () => {
    const s = await server();
    const waiter = client(s.port);
    const worker = client(s.port);
    const first = await waiter.issuedCount();
    expect(await waiter.issuedCount()).toBe(first); // asking takes none
    await worker.getTimestamp();
    await worker.getTimestamps(5);
    await worker.getStartTimestamp().then((r) => r.release());
    expect(await waiter.issuedCount()).toBe(first + 7);
    expect(waiter.stats().timestamps).toBe(0);
  });

  it('issuedCount: a server from before ISSUED closes the connection with a protocol error (ORACLE_PROTOCOL)', async () => {
    // What an older server does with a request type it does not know (server.ts › protocolError).
    const older = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', (frame: Buffer) =>
        socket.end(encodeError(frame.readUInt32LE(8), WireErrorCode.PROTOCOL, 'unknown request type 0x4')),
      );
    });
    await new Promise<void>((r) => older.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => older.close(() => r())));
    const c = client((older.address() as net.AddressInfo).port, { timeoutMs: 2000 });
    await expect(c.issuedCount()).rejects.toMatchObject({ code: 'ORACLE_PROTOCOL' });
  });
});

describe('bad input to the server', () => {
  it('malformed frames get an ERROR and that connection is closed; other clients keep getting timestamps', async () => {
    const s = await server();
    const good = client(s.port);
    const beside = keepServed(good);

    const cases: [string, Buffer][] = [
      ['oversized length', Buffer.from([0xff, 0xff, 0xff, 0x7f, 1, 1, 0, 0])],
      ['short length', Buffer.from([2, 0, 0, 0, 1, 1])],
      [
        'unknown version',
        (() => {
          const b = encodeTsRequest(9, 1);
          b[4] = 77;
          return b;
        })(),
      ],
      [
        'unknown type',
        (() => {
          const b = encodeTsRequest(9, 1);
          b[5] = 0x42;
          return b;
        })(),
      ],
      ['wrong payload size', Buffer.from([9, 0, 0, 0, PROTOCOL_VERSION, MsgType.TS_REQUEST, 0, 0, 9, 0, 0, 0, 1])],
    ];
    for (const [name, bytes] of cases) {
      const conn = await raw(s.port);
      const servedBefore = beside.served();
      conn.socket.write(bytes);
      await until(() => conn.isClosed(), `${name}: connection closed`);
      expect(conn.frames.length, name).toBe(1);
      expect(conn.frames[0].type, name).toBe(MsgType.ERROR);
      expect(conn.frames[0].payload.readUInt16LE(0), name).toBe(WireErrorCode.PROTOCOL);
      await until(() => beside.served() > servedBefore + 100, `${name}: the good client keeps being served`);
    }
    await beside.stop();
    expect(s.stats().protocolErrors).toBe(cases.length);
  });

  it('a huge batch gets ORACLE_BAD_REQUEST for that request and the connection stays usable', async () => {
    const s = await server({ maxBatch: 1000 });
    const conn = await raw(s.port);
    conn.socket.write(encodeTsRequest(5, 0x7fffffff));
    conn.socket.write(encodeTsRequest(6, 0));
    conn.socket.write(encodeTsRequest(7, 1000));
    await until(() => conn.frames.length === 3, 'three answers');
    expect(conn.frames.map((f) => [f.type, f.id])).toEqual([
      [MsgType.ERROR, 5],
      [MsgType.ERROR, 6],
      [MsgType.TS_RESPONSE, 7],
    ]);
    expect(conn.frames[0].payload.readUInt16LE(0)).toBe(WireErrorCode.BAD_REQUEST);
    expect(conn.frames[0].payload.toString('utf8', 4)).toContain('2147483647');
    expect(conn.frames[2].payload.readUInt32LE(8)).toBe(1000);
    expect(readU64(conn.frames[2].payload, 0)).toBeGreaterThan(0);
    expect(conn.isClosed()).toBe(false);

    // Through the client: a bad request is a typed error, not a dead connection.
    const c = client(s.port, { maxBatch: 5000 });
    await expect(c.getTimestamps(2000)).rejects.toMatchObject({
      code: 'ORACLE_BAD_REQUEST',
      details: { wireCode: WireErrorCode.BAD_REQUEST },
    });
    expect(await c.getTimestamp()).toBeGreaterThan(0);
    expect(s.stats().badRequests).toBe(3);
  });

  it('the client reports garbage from the server as ORACLE_PROTOCOL', async () => {
    const liar = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => socket.write(Buffer.from([12, 0, 0, 0, 9, 0x81, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0])));
    });
    await new Promise<void>((r) => liar.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => liar.close(() => r())));
    const c = client((liar.address() as net.AddressInfo).port, { timeoutMs: 2000 });
    await expect(c.getTimestamp()).rejects.toMatchObject({ code: 'ORACLE_PROTOCOL', details: { version: 9 } });
  });

  it.each([
    ['WATERMARK', encodeWatermark],
    ['ISSUED', encodeIssued],
    ['INCARNATION', encodeIncarnation],
  ] as const)('an answer of the wrong kind (%s for a timestamp request) is ORACLE_PROTOCOL', async (name, encode) => {
    const liar = net.createServer((socket) => {
      socket.on('error', () => undefined);
      // The client may ask for the incarnation first: that one is answered truly.
      const reader = new FrameReader(
        (buf, start) => {
          const id = buf.readUInt32LE(start + 4);
          const truly = buf[start + 1] === MsgType.INCARNATION_REQUEST && name !== 'INCARNATION';
          socket.write(truly ? encodeIncarnation(id, 7) : encode(id, 5));
          return true;
        },
        () => socket.destroy(),
      );
      socket.on('data', (chunk: Buffer) => reader.push(chunk));
    });
    await new Promise<void>((r) => liar.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => liar.close(() => r())));
    const c = client((liar.address() as net.AddressInfo).port, { timeoutMs: 2000 });
    await expect(c.getTimestamp()).rejects.toMatchObject({
      code: 'ORACLE_PROTOCOL',
      message: expect.stringContaining(`unexpected ${name}`),
    });
  });
});

describe('server start-up', () => {
  it('a port in use is LISTEN_FAILED with host and port, and leaves no mark file, lock or directory behind', async () => {
    const holder = net.createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => holder.close(() => r())));
    const port = (holder.address() as net.AddressInfo).port;
    const dir = mkdtempSync(join(tmpdir(), 'oracle-listen-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const e = await startOracleServer({ port, markStore: new FileMarkStore(join(dir, 'sub', 'oracle.mark')) }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(isOracleError(e, 'LISTEN_FAILED')).toBe(true);
    expect((e as Error).message).toMatch(new RegExp(`^cannot listen on 127\\.0\\.0\\.1:${port} \\(oracle\\): .*EADDRINUSE`));
    expect((e as { details: unknown }).details).toMatchObject({ host: '127.0.0.1', port, role: 'oracle', errno: 'EADDRINUSE' });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a connection made while the oracle opens its mark is answered once it is open, above the mark', async () => {
    const port = await freePort();
    const early: RawConnection[] = [];
    // The server listens before it loads the mark: a client can connect and ask meanwhile.
    const markStore = new MemoryMarkStore(5_000_000);
    const load = markStore.load.bind(markStore);
    markStore.load = async () => {
      const conn = await raw(port);
      conn.socket.write(encodeTsRequest(7, 3));
      early.push(conn);
      return load();
    };
    await server({ port, markStore, clock: () => 0 });
    expect(early).toHaveLength(1);
    const conn = early[0] as RawConnection;
    await until(() => conn.frames.length > 0, 'the early request to be answered');
    expect(conn.frames[0]).toMatchObject({ type: MsgType.TS_RESPONSE, id: 7 });
    expect(readU64(conn.frames[0].payload, 0)).toBeGreaterThan(5_000_000);
  });

  it('a mark that cannot be loaded fails the start with its own error and gives the port back', async () => {
    const port = await freePort();
    const markStore = new MemoryMarkStore();
    markStore.load = () => Promise.reject(new OracleError('ORACLE_MARK_CORRUPTED', 'the test says so'));
    await expect(startOracleServer({ port, markStore })).rejects.toMatchObject({ code: 'ORACLE_MARK_CORRUPTED' });
    const s = await server({ port });
    expect(s.port).toBe(port);
  });
});
