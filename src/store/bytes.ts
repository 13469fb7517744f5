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

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
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
 * Bytes as a latin1 string, one character per byte: a Map key for a byte string (row keys,
 * qualifiers). The Buffer round trip costs ~500 ns whatever the length; up to 12 bytes a loop
 * makes a flat string for a fraction of it, then String.fromCharCode in one call (a longer loop
 * builds a chain of cons strings that hashing has to flatten: 1 µs at 32 bytes).
 */
export function bytesKey(b: Uint8Array): string {
  const n = b.length;
  if (n <= 12) {
    let s = '';
    for (let i = 0; i < n; i++) s += String.fromCharCode(b[i] as number);
    return s;
  }
  if (n <= 48) return String.fromCharCode.apply(null, b as unknown as number[]);
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
}

export const EMPTY_BYTES: Uint8Array = new Uint8Array(0);
