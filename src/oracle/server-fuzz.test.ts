/**
 * The oracle server under random input: streams of well-formed requests (timestamps, reports,
 * watermarks, issued counts, batches too large or empty) written in chunks split at random
 * points, some ending in a frame that cannot be parsed. Every well-formed request gets exactly one
 * answer with its request id (timestamps: the count asked, strictly increasing across the whole
 * run; an issued count: at least every timestamp answered before it, never less than before), a bad
 * argument gets an ERROR for that request and the connection stays open, a frame that cannot be
 * parsed gets a protocol ERROR and that connection closes — and a client beside them is served
 * throughout. Seeded (ORACLE_FUZZ_SEED, ORACLE_FUZZ_STREAMS for longer hunts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mulberry32, seedFromEnv } from '../util/seeded-random.js';
import { OracleClient } from './client.js';
import { WireErrorCode } from './errors.js';
import { MemoryMarkStore } from './mark-store.js';
import {
  MAX_FRAME_BODY,
  MsgType,
  PROTOCOL_VERSION,
  encodeIncarnationRequest,
  encodeIssuedRequest,
  encodeReport,
  encodeTsRequest,
  encodeWatermarkRequest,
  readU64,
} from './protocol.js';
import { keepServed, rawConnection, until } from './raw-connection.fixture.js';
import { type OracleServer, startOracleServer } from './server.js';

const SEED = seedFromEnv('ORACLE_FUZZ_SEED', 20261129);
const STREAMS = Number(process.env.ORACLE_FUZZ_STREAMS ?? 120);
const MAX_BATCH = 1000;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** What a request must be answered with. */
type Expect =
  | { readonly id: number; readonly kind: 'ts'; readonly count: number }
  | { readonly id: number; readonly kind: 'watermark' | 'issued' | 'incarnation' | 'bad' };

describe('the oracle server under random input', () => {
  it(`answers every well-formed request once, refuses the rest, and keeps serving (seed ${SEED}, ${STREAMS} streams)`, async () => {
    const s: OracleServer = await startOracleServer({ markStore: new MemoryMarkStore(), maxBatch: MAX_BATCH });
    cleanups.push(() => s.close());
    const good = new OracleClient({ port: s.port });
    cleanups.push(() => good.close());
    const beside = keepServed(good);

    const rnd = mulberry32(SEED);
    const int = (n: number) => Math.floor(rnd() * n);
    /** A frame that cannot be parsed, of one of the kinds the protocol names. */
    const BROKEN_ID = 0xfffffff0; // never a request's id here
    const unparsable = (): Buffer => {
      const b = encodeTsRequest(BROKEN_ID, 1);
      switch (int(5)) {
        case 0:
          b.writeUInt32LE(MAX_FRAME_BODY + 1 + int(1 << 20), 0); // oversized length
          return b;
        case 1:
          return Buffer.from([int(8), 0, 0, 0, PROTOCOL_VERSION, MsgType.TS_REQUEST]); // shorter than a header
        case 2:
          b[4] = PROTOCOL_VERSION + 1 + int(200); // unknown version
          return b;
        case 3:
          b[5] = [0x00, 0x06, 0x42, MsgType.TS_RESPONSE, MsgType.ISSUED, MsgType.ERROR][int(6)] as number; // not a request
          return b;
        default: {
          const longer = Buffer.alloc(b.length + 1 + int(8)); // wrong payload size
          b.copy(longer);
          longer.writeUInt32LE(longer.length - 4, 0);
          return longer;
        }
      }
    };

    const handedOut: [number, number][] = []; // [first, count] of every TS_RESPONSE
    let protocolErrors = 0;
    let badRequests = 0;
    let issuedAnswers = 0;
    for (let stream = 0; stream < STREAMS; stream++) {
      const conn = await rawConnection(s.port, cleanups);
      const expects: Expect[] = [];
      const parts: Buffer[] = [];
      const n = 1 + int(12);
      for (let i = 0; i < n; i++) {
        const id = stream * 100 + i + 1;
        const r = rnd();
        if (r < 0.5) {
          const count = 1 + int(r < 0.1 ? MAX_BATCH : 20);
          parts.push(encodeTsRequest(id, count));
          expects.push({ id, kind: 'ts', count });
        } else if (r < 0.6) {
          parts.push(encodeWatermarkRequest(id));
          expects.push({ id, kind: 'watermark' });
        } else if (r < 0.7) {
          parts.push(encodeIssuedRequest(id));
          expects.push({ id, kind: 'issued' });
        } else if (r < 0.74) {
          parts.push(encodeIncarnationRequest(id));
          expects.push({ id, kind: 'incarnation' });
        } else if (r < 0.8) {
          parts.push(encodeReport(id, int(1 << 30), rnd() < 0.5 ? null : int(1000)));
          expects.push({ id, kind: 'watermark' });
        } else {
          parts.push(encodeTsRequest(id, rnd() < 0.5 ? 0 : MAX_BATCH + 1 + int(1 << 30)));
          expects.push({ id, kind: 'bad' });
          badRequests++;
        }
      }
      const broken = rnd() < 0.3;
      if (broken) {
        parts.push(unparsable());
        protocolErrors++;
      }
      // Written in chunks split anywhere, frames straddling chunks.
      const bytes = Buffer.concat(parts);
      for (let at = 0; at < bytes.length;) {
        const len = 1 + int(rnd() < 0.5 ? 8 : 64);
        conn.socket.write(bytes.subarray(at, at + len));
        at += len;
        if (rnd() < 0.3) await new Promise((r) => setImmediate(r));
      }

      const what = `stream ${stream} (${n} requests${broken ? ', then an unparsable frame' : ''})`;
      if (broken) {
        // ERROR (requestId 0, or the frame's own where its header could be read), then the server
        // closes the connection; answers to the requests before it may have gone out first (a
        // closed connection drops those still being allocated).
        await until(() => conn.isClosed(), `${what}: closed`, 10_000);
        expect(conn.unparsable(), what).toBe(false);
        const last = conn.frames.at(-1);
        expect(last?.type, what).toBe(MsgType.ERROR);
        expect([0, BROKEN_ID], what).toContain(last?.id);
        expect(last?.payload.readUInt16LE(0), what).toBe(WireErrorCode.PROTOCOL);
      } else {
        await until(() => conn.frames.length >= expects.length, `${what}: every answer`, 10_000);
        await new Promise((r) => setTimeout(r, 5)); // anything extra would arrive now
        expect(conn.isClosed(), what).toBe(false);
        expect(conn.frames.length, what).toBe(expects.length);
      }
      const byId = new Map(expects.map((e) => [e.id, e]));
      const answered = new Set<number>();
      // ISSUED counts every timestamp handed out before it was answered: at least those of every
      // earlier stream and those answered ahead of it on this connection, and never fewer than before.
      let received = handedOut.reduce((n, [, count]) => n + count, 0);
      let lastIssued = 0;
      for (const f of conn.frames) {
        if (broken && f === conn.frames.at(-1)) continue;
        const e = byId.get(f.id);
        expect(e, `${what}: an answer to request ${f.id}, which was never asked`).toBeDefined();
        expect(answered.has(f.id), `${what}: request ${f.id} answered twice`).toBe(false);
        answered.add(f.id);
        if (e?.kind === 'ts') {
          expect(f.type, `${what}: request ${f.id}`).toBe(MsgType.TS_RESPONSE);
          expect(f.payload.readUInt32LE(8), `${what}: request ${f.id}`).toBe(e.count);
          handedOut.push([readU64(f.payload, 0), e.count]);
          received += e.count;
        } else if (e?.kind === 'issued') {
          expect(f.type, `${what}: request ${f.id}`).toBe(MsgType.ISSUED);
          const issued = readU64(f.payload, 0);
          expect(issued, `${what}: request ${f.id}`).toBeGreaterThanOrEqual(Math.max(received, lastIssued));
          lastIssued = issued;
          issuedAnswers++;
        } else if (e?.kind === 'incarnation') {
          expect([f.type, readU64(f.payload, 0)], `${what}: request ${f.id}`).toEqual([MsgType.INCARNATION, s.oracle.incarnation]);
        } else if (e?.kind === 'watermark') {
          expect(f.type, `${what}: request ${f.id}`).toBe(MsgType.WATERMARK);
        } else {
          expect([f.type, f.payload.readUInt16LE(0)], `${what}: request ${f.id}`).toEqual([MsgType.ERROR, WireErrorCode.BAD_REQUEST]);
        }
      }
      conn.socket.destroy();
    }

    // No timestamp was handed out twice: the ranges, sorted, do not overlap.
    handedOut.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < handedOut.length; i++) {
      const [prevFirst, prevCount] = handedOut[i - 1] as [number, number];
      expect((handedOut[i] as [number, number])[0]).toBeGreaterThanOrEqual(prevFirst + prevCount);
    }
    const servedBefore = beside.served();
    await until(() => beside.served() > servedBefore + 50, 'the client beside them keeps being served', 10_000);
    await beside.stop();
    expect(s.stats().protocolErrors).toBe(protocolErrors);
    expect(s.stats().badRequests).toBe(badRequests);
    expect(protocolErrors).toBeGreaterThan(STREAMS / 10);
    expect(handedOut.length).toBeGreaterThan(STREAMS);
    expect(issuedAnswers).toBeGreaterThan(STREAMS / 10);
  });
});
