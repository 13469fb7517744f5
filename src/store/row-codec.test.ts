import { describe, expect, it } from 'vitest';
import { makeCell } from './cells.js';
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

  it('reports truncation at every length as DATA_CORRUPTED, never a shorter row', () => {
    const enc = Buffer.from(encodeRow(cells));
    for (let n = 0; n < enc.length; n++) {
      expect(() => decodeRow(enc.subarray(0, n))).toThrowError(expect.objectContaining({ code: 'DATA_CORRUPTED' }));
    }
  });
});
