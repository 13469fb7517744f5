/**
 * Binary encoding of one row's cells within one locality group (the engine value under a row
 * key; docs/format.md). Layout:
 *
 *   crc32:u32be  version:u8(=1)  nFamilies:varint
 *     { nameLen:varint name:utf8  nColumns:varint
 *       { qualLen:varint qualifier  nVersions:varint
 *         { timestamp:f64be  valueLen:varint value } } }
 *
 * The CRC covers everything after it; a mismatch or a short buffer is DATA_CORRUPTED, never a
 * silently shorter row. Decoded values and qualifiers are views into the buffer: callers must
 * treat returned bytes as read-only.
 */
import { crc32 } from 'node:zlib';
import { asBuffer, bytesEqual } from './bytes.js';
import { CellRecord } from './cells.js';
import { StoreError } from './errors.js';
import type { Cell } from './types.js';

const VERSION = 1;

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

function writeVarint(buf: Buffer, off: number, n: number): number {
  while (n >= 0x80) {
    buf[off++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[off++] = n;
  return off;
}

/**
 * Encodes canonical cells (non-empty). The value may be a slice of Node's buffer pool: it is for
 * passing on (to the engine, which copies it, or to the encoded tier's ring); whatever keeps it, or
 * views into it, for long takes encodeRowCells' value instead, or a copy.
 */
export function encodeRow(cells: readonly Cell[]): Uint8Array {
  return encode(cells, null);
}

/**
 * Encodes canonical cells (non-empty) and returns, with the value, the cells as views into it —
 * what decodeRow(value) would return, without parsing and re-checking what was just written.
 */
export function encodeRowCells(cells: readonly Cell[]): { value: Uint8Array; cells: Cell[] } {
  const views: Cell[] = [];
  return { value: encode(cells, views), cells: views };
}

/**
 * Family names as bytes and back, remembered: a row has a handful of families, and a
 * Buffer.from / toString costs ~200 ns each. Bounded (names are few; past the bound, no caching).
 */
const FAMILY_BYTES = new Map<string, Buffer>();
const FAMILY_NAMES: { bytes: Buffer; name: string }[] = [];
const MAX_FAMILIES_REMEMBERED = 64;

function familyBytes(name: string): Buffer {
  let b = FAMILY_BYTES.get(name);
  if (b === undefined) {
    b = Buffer.from(name, 'utf8');
    if (FAMILY_BYTES.size < MAX_FAMILIES_REMEMBERED) FAMILY_BYTES.set(name, b);
  }
  return b;
}

/** The family name stored at `buf[off, off + len)`. */
function familyAt(buf: Buffer, off: number, len: number): string {
  for (const f of FAMILY_NAMES) {
    const b = f.bytes;
    if (b.length !== len) continue;
    let i = 0;
    while (i < len && b[i] === buf[off + i]) i++;
    if (i === len) return f.name;
  }
  const name = buf.toString('utf8', off, off + len);
  if (FAMILY_NAMES.length < MAX_FAMILIES_REMEMBERED) FAMILY_NAMES.push({ bytes: Buffer.from(buf.subarray(off, off + len)), name });
  return name;
}

function encode(cells: readonly Cell[], views: Cell[] | null): Uint8Array {
  const n = cells.length;
  // First pass: sizes and run lengths.
  let size = 5;
  let families = 0;
  for (let i = 0; i < n;) {
    const fam = (cells[i] as Cell).family;
    const name = familyBytes(fam);
    families++;
    size += varintSize(name.length) + name.length;
    let columns = 0;
    let j = i;
    while (j < n && (cells[j] as Cell).family === fam) {
      const q = (cells[j] as Cell).qualifier;
      let k = j;
      while (k < n && (cells[k] as Cell).family === fam && bytesEqual((cells[k] as Cell).qualifier, q)) {
        const v = (cells[k] as Cell).value;
        size += 8 + varintSize(v.byteLength) + v.byteLength;
        k++;
      }
      size += varintSize(q.byteLength) + q.byteLength + varintSize(k - j);
      columns++;
      j = k;
    }
    size += varintSize(columns);
    i = j;
  }
  size += varintSize(families);

  // With views, its own allocation, not a slice of Node's shared pool: caches keep the views, and
  // a pool slab would keep unrelated kilobytes alive behind them. Without, the bytes only pass
  // through (the engine's batch and the encoded tier copy them), and a buffer of its own would
  // cost ~1 µs more: an off-heap backing store above 64 bytes, and at or below, `.buffer` moving
  // the on-heap array off the heap — 1.1–1.5 µs of a 1-cell row's encoding instead of ~0.4.
  const buf = views === null ? Buffer.allocUnsafe(size) : Buffer.allocUnsafeSlow(size);
  const ab = views === null ? null : buf.buffer;
  const base = buf.byteOffset;
  let off = 4;
  buf[off++] = VERSION;
  off = writeVarint(buf, off, families);
  for (let i = 0; i < n;) {
    const fam = (cells[i] as Cell).family;
    const name = familyBytes(fam);
    off = writeVarint(buf, off, name.length);
    off += name.copy(buf, off);
    // Count columns of this family.
    let columns = 0;
    let end = i;
    while (end < n && (cells[end] as Cell).family === fam) {
      if (end === i || !bytesEqual((cells[end] as Cell).qualifier, (cells[end - 1] as Cell).qualifier)) columns++;
      end++;
    }
    off = writeVarint(buf, off, columns);
    let j = i;
    while (j < end) {
      const q = (cells[j] as Cell).qualifier;
      let k = j;
      while (k < end && bytesEqual((cells[k] as Cell).qualifier, q)) k++;
      off = writeVarint(buf, off, q.byteLength);
      buf.set(q, off);
      // Buffer.from(arrayBuffer, …) makes a view in ~100 ns, subarray in ~150.
      const qView = ab === null ? null : Buffer.from(ab, base + off, q.byteLength);
      off += q.byteLength;
      off = writeVarint(buf, off, k - j);
      for (let m = j; m < k; m++) {
        const c = cells[m] as Cell;
        off = buf.writeDoubleBE(c.timestamp, off);
        const len = c.value.byteLength;
        off = writeVarint(buf, off, len);
        buf.set(c.value, off);
        if (views !== null && ab !== null) {
          views.push(new CellRecord(fam, qView as Buffer, c.timestamp, Buffer.from(ab, base + off, len)));
        }
        off += len;
      }
      j = k;
    }
    i = end;
  }
  buf.writeUInt32BE(crc32(buf.subarray(4)), 0);
  return buf;
}

type Context = Record<string, unknown> | (() => Record<string, unknown>);

function corrupted(why: string, context: Context): StoreError {
  return new StoreError('DATA_CORRUPTED', `stored row is corrupted: ${why}`, typeof context === 'function' ? context() : context);
}

/**
 * Where decodeRow collects a row's cells before copying them into an array of their own: an
 * array literal is an allocation site, pretenured after cached reads like the cells were (see
 * CellRecord), and `slice` allocates without one. Cleared after each use so that it keeps no
 * cell alive; decodeRow is synchronous and calls no user code, so one scratch array serves all.
 */
const SCRATCH: (Cell | undefined)[] = [];
const MAX_SCRATCH_KEPT = 4096;

/**
 * Decodes a row value; `context` (table, row — or a function producing them, so the hot path
 * builds nothing) goes into the error on corruption. Returns a new array each call.
 */
export function decodeRow(value: Uint8Array, context: Context = {}): Cell[] {
  let n = -1;
  try {
    n = decodeInto(SCRATCH, value, context);
    return SCRATCH.slice(0, n) as Cell[];
  } finally {
    // All of it after a corrupted row (where its decoding stopped is not known here); not kept
    // at the size of a rare huge row.
    if (n < 0 || SCRATCH.length > MAX_SCRATCH_KEPT) SCRATCH.length = 0;
    else SCRATCH.fill(undefined, 0, n);
  }
}

/** Decodes a row value into `cells[0, count)`, returning the count. */
function decodeInto(cells: (Cell | undefined)[], value: Uint8Array, context: Context): number {
  const buf = asBuffer(value);
  if (buf.length < 6) throw corrupted('truncated header', context);
  if (crc32(buf.subarray(4)) !== buf.readUInt32BE(0)) throw corrupted('checksum mismatch', context);
  if (buf[4] !== VERSION) throw corrupted(`unknown row format version ${buf[4]}`, context);
  let off = 5;
  const readVarint = (): number => {
    let n = 0;
    let mul = 1;
    for (;;) {
      if (off >= buf.length) throw corrupted('truncated varint', context);
      const b = buf[off++] as number;
      n += (b & 0x7f) * mul;
      if (b < 0x80) return n;
      mul *= 128;
    }
  };
  const ab = buf.buffer;
  const base = buf.byteOffset;
  const take = (n: number): Buffer => {
    if (off + n > buf.length) throw corrupted('truncated field', context);
    const v = Buffer.from(ab, base + off, n);
    off += n;
    return v;
  };
  let count = 0;
  const families = readVarint();
  for (let f = 0; f < families; f++) {
    const nameLen = readVarint();
    if (off + nameLen > buf.length) throw corrupted('truncated field', context);
    const family = familyAt(buf, off, nameLen);
    off += nameLen;
    const columns = readVarint();
    for (let c = 0; c < columns; c++) {
      const qualifier = take(readVarint());
      const versions = readVarint();
      for (let v = 0; v < versions; v++) {
        if (off + 8 > buf.length) throw corrupted('truncated timestamp', context);
        const timestamp = buf.readDoubleBE(off);
        off += 8;
        const value = take(readVarint());
        cells[count++] = new CellRecord(family, qualifier, timestamp, value);
      }
    }
  }
  if (off !== buf.length) throw corrupted('trailing bytes', context);
  return count;
}
