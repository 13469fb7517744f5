/**
 * printable and its inverse: clean text as itself, anything else — text starting with 0x too — as
 * 0x and hex, every printed form read back to the bytes it came from; a cut never splits a
 * surrogate pair.
 */
import { expect, it } from 'vitest';
import { mulberry32 } from '../util/seeded-random.js';
import { bytesOfArgument, printable, printableCut } from './printable.js';
import { UsageError } from './usage-error.js';

const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');

it('clean text prints as itself; control characters, invalid UTF-8 and text starting with 0x as hex', () => {
  expect(printable(utf8('héllo wörld 😀'))).toBe('héllo wörld 😀');
  expect(printable(utf8(''))).toBe('');
  expect(printable(utf8('a\nb'))).toBe('0x610a62');
  expect(printable(Uint8Array.of(0xc3))).toBe('0xc3');
  // Printed as it is, each would read as other bytes.
  expect(printable(utf8('0xff'))).toBe('0x30786666');
  expect(printable(utf8('0x'))).toBe('0x3078');
  expect(printable(utf8('0X1'))).toBe('0X1'); // only the lowercase prefix is the hex form
});

it('every printed form reads back as the bytes it came from', () => {
  const random = mulberry32(7);
  const samples: Uint8Array[] = [utf8('0xff'), utf8('0x'), utf8('plain'), utf8(''), Uint8Array.of(0, 1, 255)];
  for (let i = 0; i < 500; i++) {
    // Mostly short printable ASCII, some bytes anywhere, some with a 0x prefix.
    const bytes = Array.from({ length: Math.floor(random() * 8) }, () =>
      random() < 0.8 ? 0x20 + Math.floor(random() * 95) : Math.floor(random() * 256),
    );
    samples.push(Uint8Array.from(random() < 0.3 ? [0x30, 0x78, ...bytes] : bytes));
  }
  for (const b of samples) expect(Buffer.from(bytesOfArgument('ROW', printable(b))).equals(Buffer.from(b)), printable(b)).toBe(true);
});

it('an argument starting with 0x must be whole bytes of hex', () => {
  expect(Buffer.from(bytesOfArgument('ROW', '0xABcd'))).toEqual(Buffer.from([0xab, 0xcd]));
  for (const bad of ['0xabc', '0xzz', '0x ff']) {
    expect(() => bytesOfArgument('ROW', bad)).toThrow(UsageError);
  }
  expect(() => bytesOfArgument('ROW', '0xzz')).toThrow(/give its hex form, 0x30787a7a$/);
});

it('a cut ends on a code point boundary', () => {
  const emoji = '\u{1f600}';
  expect(printableCut(utf8(`ab${emoji}c`), 3)).toBe('ab'); // 3 would split the pair
  expect(printableCut(utf8(`ab${emoji}c`), 4)).toBe(`ab${emoji}`);
  expect(printableCut(utf8('abc'), 3)).toBe('abc');
  expect(printableCut(Uint8Array.of(0, 1, 2, 3), 4)).toBe('0x00'); // hex is cut as text is
});
