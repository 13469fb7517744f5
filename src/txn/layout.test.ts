import { describe, expect, it } from 'vitest';
import { type WriteRecord, decodeWrite, encodeWrite } from './layout.js';

/** A small deterministic generator, so a failure names its case. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomRecord(r: () => number): WriteRecord {
  const kind = (['put', 'delete', 'rollback'] as const)[Math.floor(r() * 3)] as WriteRecord['kind'];
  // Microsecond timestamps, and doubles whose bytes exercise every position.
  const startTs = r() < 0.5 ? Math.floor(r() * 2 ** 52) : (r() - 0.5) * 1e300;
  const m = Math.floor(r() * 3);
  if (m === 0) return { kind, startTs, value: { mode: 'none' } };
  if (m === 1) return { kind, startTs, value: { mode: 'data' } };
  const len = r() < 0.2 ? 0 : Math.floor(r() * 300);
  return { kind, startTs, value: { mode: 'inline', value: Buffer.from(Array.from({ length: len }, () => Math.floor(r() * 256))) } };
}

describe('write records', () => {
  it('decode what encodeWrite wrote (2 000 random records), also from a view at an offset', () => {
    const r = rng(7);
    for (let i = 0; i < 2000; i++) {
      const w = randomRecord(r);
      const bytes = encodeWrite(w);
      // The row codec hands out views into a larger row buffer.
      const row = Buffer.alloc(bytes.byteLength + 13, 0xee);
      row.set(bytes, 5);
      const view = row.subarray(5, 5 + bytes.byteLength);
      for (const b of [bytes, view]) {
        const d = decodeWrite(b);
        expect(d.kind).toBe(w.kind);
        expect(Object.is(d.startTs, w.startTs)).toBe(true);
        expect(d.value.mode).toBe(w.value.mode);
        if (w.value.mode === 'inline' && d.value.mode === 'inline')
          expect(Buffer.from(d.value.value).equals(Buffer.from(w.value.value))).toBe(true);
      }
    }
  });

  it('are the bytes docs/format.md gives (stores written before keep reading)', () => {
    const hex = (w: WriteRecord) => Buffer.from(encodeWrite(w)).toString('hex');
    // version 1, kind, startTs as a big-endian f64, value mode (0 none, 1 inline: u32 length and bytes, 2 data)
    expect(hex({ kind: 'put', startTs: 5, value: { mode: 'inline', value: Uint8Array.of(0x61, 0x62) } })).toBe(
      '0100401400000000000001000000026162',
    );
    expect(hex({ kind: 'delete', startTs: 5, value: { mode: 'none' } })).toBe('01014014000000000000' + '00');
    expect(hex({ kind: 'rollback', startTs: 1, value: { mode: 'data' } })).toBe('01023ff0000000000000' + '02');
  });

  it('reject every truncation, a trailing byte, and an unknown version, kind or value mode with CORRUPTED_RECORD', () => {
    const r = rng(11);
    for (let i = 0; i < 200; i++) {
      const bytes = Buffer.from(encodeWrite(randomRecord(r)));
      for (let n = 0; n < bytes.length; n++)
        expect(() => decodeWrite(bytes.subarray(0, n))).toThrow(expect.objectContaining({ code: 'CORRUPTED_RECORD' }));
      expect(() => decodeWrite(Buffer.concat([bytes, Buffer.from([0])]))).toThrow(expect.objectContaining({ code: 'CORRUPTED_RECORD' }));
    }
    const good = Buffer.from(encodeWrite({ kind: 'put', startTs: 5, value: { mode: 'none' } }));
    for (const [at, byte] of [
      [0, 9],
      [1, 3],
      [10, 3],
    ] as const) {
      const bad = Buffer.from(good);
      bad[at] = byte;
      expect(() => decodeWrite(bad)).toThrow(expect.objectContaining({ code: 'CORRUPTED_RECORD' }));
    }
  });
});
