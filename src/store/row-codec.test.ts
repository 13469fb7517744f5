import { describe, expect, it } from 'vitest';
import { crc32 } from 'node:zlib';
import { CellRecord, makeCell } from './cells.js';
import { isStoreError } from './errors.js';
import { decodeRow, encodeRow, encodeRowCells } from './row-codec.js';
import type { Cell } from './types.js';

const b = (s: string) => Buffer.from(s);

function plain(cells: readonly Cell[]) {
  return cells.map((c) => [c.family, Buffer.from(c.qualifier).toString('hex'), c.timestamp, Buffer.from(c.value).toString('hex')]);
}

describe('row codec', () => {
  const cells = [
    makeCell('a', b(''), 9_007_199_254_740_991, b('')),
    makeCell('a', Uint8Array.from([0x00]), 5, Uint8Array.from([0xff, 0x00])),
    makeCell('a', Uint8Array.from([0x00]), 0, b('old')),
    makeCell('b', Uint8Array.from([0xff]), 1_700_000_000_000_000, Buffer.alloc(300, 1)),
  ];

  it('round-trips families, binary qualifiers, versions, empty values and large timestamps', () => {
    expect(plain(decodeRow(encodeRow(cells)))).toEqual(plain(cells));
  });

  it('encodeRowCells gives the same bytes and the cells decodeRow would, as views into the value', () => {
    const { value, cells: views } = encodeRowCells(cells);
    expect(Buffer.from(value)).toEqual(Buffer.from(encodeRow(cells)));
    expect(plain(views)).toEqual(plain(decodeRow(value)));
    for (const c of views) {
      expect(c.value.buffer).toBe(value.buffer);
      expect(c.qualifier.buffer).toBe(value.buffer);
    }
  });

  it('round-trips random rows: many family names, look-alike qualifiers, values at an offset', () => {
    // Family names are remembered (up to a bound) and qualifiers compared by hand: names of one
    // length that differ in one byte, non-ASCII names, more names than the bound, qualifiers
    // that are equal but distinct objects (Buffer and plain Uint8Array) or differ in a late byte.
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const names = [...Array.from({ length: 90 }, (_, i) => `f${String(i).padStart(2, '0')}`), 'ü', 'é', 'data', 'dat', 'datb'];
    for (let round = 0; round < 300; round++) {
      const cells: Cell[] = [];
      const families = [...new Set(Array.from({ length: 1 + rand(4) }, () => names[rand(names.length)] as string))].sort();
      for (const family of families) {
        const quals = [...new Set(Array.from({ length: 1 + rand(5) }, () => `q${rand(3)}:${'x'.repeat(rand(40))}${rand(4)}`))].sort();
        for (const q of quals) {
          const versions = 1 + rand(3);
          for (let v = 0; v < versions; v++) {
            const qualifier = rand(2) === 0 ? Buffer.from(q) : Uint8Array.from(Buffer.from(q));
            cells.push(makeCell(family, qualifier, 1000 * (versions - v), Buffer.alloc(rand(300), rand(256))));
          }
        }
      }
      const { value, cells: views } = encodeRowCells(cells);
      expect(plain(views)).toEqual(plain(cells));
      // encodeRow's value (a slice of Node's pool, at an offset) holds the same bytes and decodes alike.
      const pooled = encodeRow(cells);
      expect(Buffer.from(pooled)).toEqual(Buffer.from(value));
      expect(plain(decodeRow(pooled))).toEqual(plain(cells));
      // The stored value may come back as a view at an offset into a larger buffer.
      const padded = Buffer.concat([Buffer.alloc(3 + rand(10)), Buffer.from(value)]);
      const decoded = decodeRow(padded.subarray(padded.length - value.byteLength));
      expect(plain(decoded)).toEqual(plain(cells));
      for (const c of [...decoded, ...views]) {
        expect(Buffer.isBuffer(c.value) && Buffer.isBuffer(c.qualifier)).toBe(true);
      }
    }
  });

  it('reports a flipped byte as DATA_CORRUPTED with the context', () => {
    const enc = Buffer.from(encodeRow(cells));
    enc[enc.length - 5] ^= 0x40;
    let err: unknown;
    try {
      decodeRow(enc, { table: 't', row: '01' });
    } catch (e) {
      err = e;
    }
    expect(isStoreError(err, 'DATA_CORRUPTED')).toBe(true);
    expect((err as { details: Record<string, unknown> }).details).toMatchObject({ table: 't', row: '01' });
  });

  it('returns a new array each call, which later decodes leave as it was', () => {
    const small = encodeRow([makeCell('z', b('only'), 1, b('one'))]);
    const first = decodeRow(encodeRow(cells));
    const before = plain(first);
    const second = decodeRow(small);
    expect(plain(second)).toEqual([['z', b('only').toString('hex'), 1, b('one').toString('hex')]]);
    expect(plain(first)).toEqual(before);
    const again = decodeRow(encodeRow(cells));
    expect(again).not.toBe(first);
    expect(plain(again)).toEqual(before);
    again.pop();
    expect(plain(decodeRow(encodeRow(cells)))).toEqual(before);
  });

  it('decodes exactly the next row after one that failed midway or was larger than the scratch array keeps', () => {
    // A body cut short or extended, with its CRC made right: decoding fails after some cells.
    const withCrc = (body: Buffer) => {
      const out = Buffer.alloc(body.length + 4);
      body.copy(out, 4);
      out.writeUInt32BE(crc32(body), 0);
      return out;
    };
    const many = Array.from({ length: 5000 }, (_, i) => makeCell('f', b(`q${String(i).padStart(5, '0')}`), 1, b(`v${i}`)));
    const body = Buffer.from(encodeRow(many)).subarray(4);
    const small = [makeCell('a', b('x'), 2, b('y'))];
    for (const bad of [withCrc(body.subarray(0, body.length - 3)), withCrc(Buffer.concat([body, Buffer.from([0])]))]) {
      expect(() => decodeRow(bad)).toThrowError(expect.objectContaining({ code: 'DATA_CORRUPTED' }));
      expect(plain(decodeRow(encodeRow(small)))).toEqual(plain(small));
    }
    expect(plain(decodeRow(encodeRow(many)))).toEqual(plain(many));
    expect(plain(decodeRow(encodeRow(small)))).toEqual(plain(small));
  });

  it('makes every cell through CellRecord (no object literal: see CellRecord)', () => {
    const value = encodeRow(cells);
    for (const c of [...decodeRow(value), ...encodeRowCells(cells).cells, makeCell('a', b('q'), 1, b('v'))]) {
      expect(c).toBeInstanceOf(CellRecord);
    }
  });

  it('reports truncation at every length as DATA_CORRUPTED, never a shorter row', () => {
    const enc = Buffer.from(encodeRow(cells));
    for (let n = 0; n < enc.length; n++) {
      expect(() => decodeRow(enc.subarray(0, n))).toThrowError(expect.objectContaining({ code: 'DATA_CORRUPTED' }));
    }
  });
});
