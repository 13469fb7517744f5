/**
 * Byte helpers. Keys and values are `Uint8Array`; comparisons are unsigned lexicographic, which
 * is Bigtable's row order. Views are made without copying.
 */

export function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** Unsigned lexicographic order. Short keys are compared in JS: a native call costs ~100 ns. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  if (n > 32) return Buffer.compare(a, b);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Equal bytes. Short inputs (qualifiers, keys) in JS, like compareBytes. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  const n = a.byteLength;
  if (n !== b.byteLength) return false;
  if (n > 32) return Buffer.compare(a, b) === 0;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** UTF-8 bytes of `s`. */
export function utf8(s: string): Uint8Array {
  // Short ASCII strings (ids, counters, the keys of point reads) by hand: for them Buffer.from
  // costs ~3x as much (~220 ns, mostly making the Buffer object), and every point read converts
  // its row key. From ~30 characters on the copy loop costs as much as Buffer.from saves.
  const n = s.length;
  if (n > 16) return Buffer.from(s, 'utf8');
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f) return Buffer.from(s, 'utf8');
    out[i] = c;
  }
  return out;
}

/**
 * Node's own latin1 decoder, called on any Uint8Array without making a Buffer of it (not in
 * Node's typings; present on every Buffer since Node 0.x). Its cost is ~150 ns whatever the
 * length; `toString('latin1')` on a Buffer view made for the purpose costs more (~180 ns plus
 * the view), `String.fromCharCode.apply` ~340 ns at 30 bytes.
 */
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice?: (this: Uint8Array, start: number, end: number) => string }).latin1Slice;

/**
 * Bytes as a latin1 string, one character per byte: a Map key for a byte string (row keys,
 * qualifiers). Up to 8 bytes a loop makes the string for less than a native call; beyond, the
 * loop builds a chain of cons strings that hashing has to flatten (1 µs at 32 bytes).
 */
export function bytesKey(b: Uint8Array): string {
  const n = b.length;
  if (n <= 8) {
    let s = '';
    for (let i = 0; i < n; i++) s += String.fromCharCode(b[i] as number);
    return s;
  }
  if (latin1Slice !== undefined) return latin1Slice.call(b, 0, n);
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
}

/** The bytes a key stands for: bytes as they are, a latin1 key (bytesKey's form: one character per byte) decoded. */
export function keyBytes(k: Uint8Array | string): Uint8Array {
  return typeof k === 'string' ? Buffer.from(k, 'latin1') : k;
}

/**
 * A string's bytesKey without encoding it, when it has one: an ASCII string's UTF-8 bytes are
 * its characters, so it is its own key. Null for a string with other characters. A point read
 * by a string row (the transaction API's usual form) then needs no bytes on a cache hit: for a
 * 40-character row making them cost ~220 ns and the key from them ~150 ns, more than the rest of
 * the hit.
 */
export function asciiKey(s: string): string | null {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return null;
  return s;
}

export const EMPTY_BYTES: Uint8Array = new Uint8Array(0);
