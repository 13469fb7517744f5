/** Frame encoding and the incremental reader. */
import { describe, expect, it } from 'vitest';
import {
  encodeError,
  encodeReport,
  encodeTsRequest,
  encodeTsResponse,
  FrameReader,
  MAX_FRAME_BODY,
  MsgType,
  NONE_HI,
  PROTOCOL_VERSION,
  readU64,
} from './protocol.js';

function collect(chunks: Buffer[]) {
  const frames: { type: number; id: number; body: Buffer }[] = [];
  const errors: string[] = [];
  const reader = new FrameReader(
    (buf, start, end) => {
      frames.push({ type: buf[start + 1], id: buf.readUInt32LE(start + 4), body: Buffer.from(buf.subarray(start + 8, end)) });
      return true;
    },
    (reason) => errors.push(reason),
  );
  for (const c of chunks) reader.push(c);
  return { frames, errors };
}

describe('protocol', () => {
  it('encodes the documented layout', () => {
    const req = encodeTsRequest(7, 1000);
    expect([...req]).toEqual([12, 0, 0, 0, PROTOCOL_VERSION, MsgType.TS_REQUEST, 0, 0, 7, 0, 0, 0, 0xe8, 0x03, 0, 0]);
    const res = encodeTsResponse(7, Number.MAX_SAFE_INTEGER - 10, 11);
    expect(res.readUInt32LE(0)).toBe(20);
    expect(readU64(res, 12)).toBe(Number.MAX_SAFE_INTEGER - 10);
    expect(res.readUInt32LE(20)).toBe(11);
    const none = encodeReport(1, 99, null);
    expect(none.readUInt32LE(24)).toBe(NONE_HI);
    expect(readU64(none, 20)).toBe(-1);
    expect(readU64(encodeReport(1, 99, 1234567890123), 20)).toBe(1234567890123);
  });

  it('reassembles frames split at every byte and packed together', () => {
    const all = Buffer.concat([encodeTsRequest(1, 5), encodeTsResponse(2, 1e15, 3), encodeError(3, 2, 'nope')]);
    const bytewise = collect([...all].map((b) => Buffer.from([b])));
    expect(bytewise.frames.map((f) => [f.type, f.id])).toEqual([
      [MsgType.TS_REQUEST, 1],
      [MsgType.TS_RESPONSE, 2],
      [MsgType.ERROR, 3],
    ]);
    expect(bytewise.frames[2].body.toString('utf8', 4)).toBe('nope');
    expect(collect([all]).frames.length).toBe(3);
  });

  it('stops on a frame length below the header or above the cap', () => {
    const tooBig = Buffer.alloc(4);
    tooBig.writeUInt32LE(MAX_FRAME_BODY + 1);
    expect(collect([tooBig, encodeTsRequest(1, 1)])).toEqual({ frames: [], errors: [`bad frame length ${MAX_FRAME_BODY + 1}`] });
    const tiny = Buffer.from([3, 0, 0, 0, 1, 1, 0]);
    expect(collect([tiny]).errors).toEqual(['bad frame length 3']);
  });
});
