/**
 * The byte helpers' hand-written fast paths agree with Node's conversions at every length around
 * their cut-offs, for every byte value (bytesKey, bytesEqual) and for ASCII and non-ASCII text (utf8).
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../util/seeded-random.js';
import { asciiKey, bytesEqual, bytesKey, compareBytes, keyBytes, utf8 } from './bytes.js';

const rand = mulberry32(12);
const randomBytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));

describe('bytesKey', () => {
  it('is the latin1 string of the bytes at every length, views included', () => {
    for (let n = 0; n <= 80; n++) {
      const b = randomBytes(n);
      expect(bytesKey(b)).toBe(Buffer.from(b).toString('latin1'));
      const inside = randomBytes(n + 10).subarray(5, 5 + n); // a view at an offset
      expect(bytesKey(inside)).toBe(Buffer.from(inside).toString('latin1'));
    }
  });

  it('keeps distinct byte strings distinct and orders them as the bytes', () => {
    const keys = Array.from({ length: 300 }, () => randomBytes(Math.floor(rand() * 60)));
    for (let i = 1; i < keys.length; i++) {
      const a = keys[i - 1] as Uint8Array;
      const b = keys[i] as Uint8Array;
      const [ka, kb] = [bytesKey(a), bytesKey(b)];
      expect(ka === kb).toBe(compareBytes(a, b) === 0);
      expect(Math.sign(ka < kb ? -1 : ka > kb ? 1 : 0)).toBe(compareBytes(a, b));
    }
  });
});

describe('bytesEqual', () => {
  it('agrees with Buffer.equals at every length, for a difference anywhere, views included', () => {
    for (let n = 0; n <= 80; n++) {
      const a = randomBytes(n);
      const same = randomBytes(n + 7).subarray(3, 3 + n);
      same.set(a);
      expect(bytesEqual(a, same)).toBe(true);
      expect(bytesEqual(a, a)).toBe(true);
      for (const at of n === 0 ? [] : [0, n >> 1, n - 1]) {
        const other = Uint8Array.from(a);
        other[at] = ((other[at] as number) + 1) % 256;
        expect(bytesEqual(a, other)).toBe(false);
        expect(bytesEqual(other, a)).toBe(false);
      }
      expect(bytesEqual(a, Uint8Array.from([...a, 0]))).toBe(false);
    }
  });
});

describe('utf8', () => {
  it('is the UTF-8 encoding of the string at every length, ASCII or not', () => {
    for (let n = 0; n <= 40; n++) {
      const ascii = Array.from({ length: n }, () => String.fromCharCode(32 + Math.floor(rand() * 95))).join('');
      expect(Buffer.from(utf8(ascii)).equals(Buffer.from(ascii, 'utf8'))).toBe(true);
      const mixed = ascii.slice(0, n >> 1) + 'é→' + ascii.slice(n >> 1);
      expect(Buffer.from(utf8(mixed)).equals(Buffer.from(mixed, 'utf8'))).toBe(true);
    }
  });
});

describe('asciiKey and keyBytes', () => {
  it('gives an ASCII string as its own bytesKey, and null for any other string', () => {
    for (let n = 0; n <= 40; n++) {
      const ascii = Array.from({ length: n }, () => String.fromCharCode(Math.floor(rand() * 128))).join('');
      expect(asciiKey(ascii)).toBe(bytesKey(utf8(ascii)));
      for (const odd of ['\u0080', 'é', '→', '\u{1f600}']) {
        const at = Math.floor(rand() * (n + 1));
        expect(asciiKey(ascii.slice(0, at) + odd + ascii.slice(at))).toBeNull();
      }
    }
  });

  it('turns a bytesKey back into its bytes, for every byte value, and leaves bytes as they are', () => {
    for (let n = 0; n <= 40; n++) {
      const b = randomBytes(n);
      expect(Buffer.from(keyBytes(bytesKey(b))).equals(Buffer.from(b))).toBe(true);
      expect(keyBytes(b)).toBe(b); // bytes are their own
    }
  });
});
