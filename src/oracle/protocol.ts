/**
 * The oracle wire protocol: lean length-prefixed binary frames over TCP, little-endian.
 *
 *   offset size field
 *   0      4    length     bytes after this field (8 + payload), at most MAX_FRAME_BODY
 *   4      1    version    PROTOCOL_VERSION (1)
 *   5      1    type       MsgType
 *   6      2    reserved   0
 *   8      4    requestId  chosen by the client, echoed in the response (0 = connection-level)
 *   12     …    payload
 *
 * Payloads (u64 = two u32, low word first; values are safe integers < 2^53):
 *   TS_REQUEST        u32 count                      → TS_RESPONSE or ERROR
 *   REPORT            u64 clientId, u64 oldestActive  → WATERMARK (oldestActive = NONE: no active)
 *   WATERMARK_REQUEST (none)                          → WATERMARK
 *   ISSUED_REQUEST    (none)                          → ISSUED
 *   INCARNATION_REQUEST (none)                        → INCARNATION
 *   TS_RESPONSE       u64 first, u32 count            timestamps [first, first + count)
 *   WATERMARK         u64 watermark
 *   ISSUED            u64 handedOut                  timestamps the oracle has handed out since it started
 *   INCARNATION       u64 incarnation                drawn at random when the oracle process started
 *   ERROR             u16 code, u16 messageLength, utf8 message
 *
 * One TS_RESPONSE serves a whole client batch: the client splits the range among its waiters.
 * ISSUED lets a process that holds no timestamps see whether anyone took one meanwhile:
 * `percolator wait` over a shared store counts a pass quiet only if this did not change during it
 * (docs/observers.md › Quiescence). A server from before ISSUED (2026-12-03) takes its request for
 * an unknown type and closes the connection; the client then cannot tell, as before.
 * INCARNATION tells a client whether two of its connections reached the same oracle process: a
 * report acknowledged on a later connection holds a start timestamp issued on an earlier one only
 * if so (client.ts › holds). A server from before it (2026-12-04) closes the connection on it;
 * the client then asks no more and takes every reconnection for a restart, as before.
 * A frame that cannot be parsed (bad length, unknown version or type, wrong payload size, a u64
 * above 2^53) is a protocol error: the receiver answers ERROR (requestId 0, or the frame's own
 * where its header could be read) where it can and closes that connection. A well-formed request
 * with a bad argument gets an ERROR with its requestId and the connection stays open.
 */

export const PROTOCOL_VERSION = 1;
export const HEADER_BYTES = 12;
/** Largest frame body (after the length field) either side accepts. */
export const MAX_FRAME_BODY = 1024;

export const MsgType = {
  TS_REQUEST: 0x01,
  REPORT: 0x02,
  WATERMARK_REQUEST: 0x03,
  ISSUED_REQUEST: 0x04,
  INCARNATION_REQUEST: 0x05,
  TS_RESPONSE: 0x81,
  WATERMARK: 0x82,
  ISSUED: 0x83,
  INCARNATION: 0x84,
  ERROR: 0xff,
} as const;

/** Encodes "no active start timestamp" in REPORT (not a safe integer, so never a timestamp). */
export const NONE_HI = 0xffffffff;

const TWO_32 = 4294967296;

export function writeU64(buf: Buffer, offset: number, value: number): void {
  buf.writeUInt32LE(value % TWO_32, offset);
  buf.writeUInt32LE(Math.floor(value / TWO_32), offset + 4);
}

/** Reads a u64 as a number; returns -1 if it is not a safe integer (the caller decides). */
export function readU64(buf: Buffer, offset: number): number {
  const lo = buf.readUInt32LE(offset);
  const hi = buf.readUInt32LE(offset + 4);
  if (hi >= 0x200000) return -1;
  return hi * TWO_32 + lo;
}

function header(type: number, requestId: number, payloadBytes: number): Buffer {
  const buf = Buffer.allocUnsafe(HEADER_BYTES + payloadBytes);
  buf.writeUInt32LE(8 + payloadBytes, 0);
  buf[4] = PROTOCOL_VERSION;
  buf[5] = type;
  buf.writeUInt16LE(0, 6);
  buf.writeUInt32LE(requestId >>> 0, 8);
  return buf;
}

export function encodeTsRequest(requestId: number, count: number): Buffer {
  const buf = header(MsgType.TS_REQUEST, requestId, 4);
  buf.writeUInt32LE(count >>> 0, 12);
  return buf;
}

export function encodeReport(requestId: number, clientId: number, oldestActive: number | null): Buffer {
  const buf = header(MsgType.REPORT, requestId, 16);
  writeU64(buf, 12, clientId);
  if (oldestActive === null) {
    buf.writeUInt32LE(0xffffffff, 20);
    buf.writeUInt32LE(NONE_HI, 24);
  } else {
    writeU64(buf, 20, oldestActive);
  }
  return buf;
}

export function encodeWatermarkRequest(requestId: number): Buffer {
  return header(MsgType.WATERMARK_REQUEST, requestId, 0);
}

export function encodeIssuedRequest(requestId: number): Buffer {
  return header(MsgType.ISSUED_REQUEST, requestId, 0);
}

export function encodeIncarnationRequest(requestId: number): Buffer {
  return header(MsgType.INCARNATION_REQUEST, requestId, 0);
}

export function encodeIncarnation(requestId: number, incarnation: number): Buffer {
  const buf = header(MsgType.INCARNATION, requestId, 8);
  writeU64(buf, 12, incarnation);
  return buf;
}

export function encodeIssued(requestId: number, handedOut: number): Buffer {
  const buf = header(MsgType.ISSUED, requestId, 8);
  writeU64(buf, 12, handedOut);
  return buf;
}

export function encodeTsResponse(requestId: number, first: number, count: number): Buffer {
  const buf = header(MsgType.TS_RESPONSE, requestId, 12);
  writeU64(buf, 12, first);
  buf.writeUInt32LE(count >>> 0, 20);
  return buf;
}

export function encodeWatermark(requestId: number, watermark: number): Buffer {
  const buf = header(MsgType.WATERMARK, requestId, 8);
  writeU64(buf, 12, watermark);
  return buf;
}

export function encodeError(requestId: number, code: number, message: string): Buffer {
  const msg = Buffer.from(message.length > 300 ? `${message.slice(0, 300)}…` : message, 'utf8');
  const buf = header(MsgType.ERROR, requestId, 4 + msg.length);
  buf.writeUInt16LE(code, 12);
  buf.writeUInt16LE(msg.length, 14);
  msg.copy(buf, 16);
  return buf;
}

/** Payload size each type must have (ERROR: at least 4, checked separately). */
export function expectedPayload(type: number): number {
  switch (type) {
    case MsgType.TS_REQUEST:
      return 4;
    case MsgType.REPORT:
      return 16;
    case MsgType.WATERMARK_REQUEST:
    case MsgType.ISSUED_REQUEST:
    case MsgType.INCARNATION_REQUEST:
      return 0;
    case MsgType.TS_RESPONSE:
      return 12;
    case MsgType.WATERMARK:
    case MsgType.ISSUED:
    case MsgType.INCARNATION:
      return 8;
    case MsgType.ERROR:
      return -2;
    default:
      return -1;
  }
}

/**
 * Incremental frame reader: feed chunks, get complete frames back through `onFrame(buf, start,
 * end)` where [start, end) is the frame body after the length field (version at `start`). A
 * bad length stops the reader and reports through `onError`; the caller closes the connection.
 */
export class FrameReader {
  private pending: Buffer | null = null;
  private failed = false;

  constructor(
    private readonly onFrame: (buf: Buffer, start: number, end: number) => boolean,
    private readonly onError: (reason: string, details: Record<string, unknown>) => void,
    private readonly maxBody = MAX_FRAME_BODY,
  ) {}

  push(chunk: Buffer): void {
    if (this.failed) return;
    let buf = chunk;
    if (this.pending !== null) {
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    let off = 0;
    const n = buf.length;
    while (n - off >= 4) {
      const len = buf.readUInt32LE(off);
      if (len < 8 || len > this.maxBody) {
        this.failed = true;
        this.onError(`bad frame length ${len}`, { length: len, maxBody: this.maxBody });
        return;
      }
      if (n - off - 4 < len) break;
      const start = off + 4;
      off = start + len;
      if (!this.onFrame(buf, start, off)) {
        this.failed = true;
        return;
      }
    }
    if (off < n) this.pending = buf.subarray(off);
  }
}
