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
