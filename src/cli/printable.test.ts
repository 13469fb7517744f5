/**
 * printable and its inverse: clean text as itself, anything else — text starting with 0x too, text
 * holding a line separator, a bidirectional control or an invisible format character — as 0x and hex, every printed form read back to the bytes it came from; a cut never splits a
 * surrogate pair.
 */
import { expect, it } from 'vitest';
import { mulberry32 } from '../util/seeded-random.js';
import { bytesOfArgument, printable, printableCut } from './printable.js';
import { UsageError } from './usage-error.js';

const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');

it('clean text prints as itself; control characters, invalid UTF-8 and text starting with 0x as hex', () => {
  expect(printable(utf8('héllo wörld 😀'))).toBe('héllo wörld 😀');
  expect(printable(utf8('日本語 ❤ 한국어 ⠁'))).toBe('日本語 ❤ 한국어 ⠁'); // U+0020 is the one space that is clean
  expect(printable(utf8(''))).toBe('');
  expect(printable(utf8('a\nb'))).toBe('0x610a62');
  expect(printable(Uint8Array.of(0xc3))).toBe('0xc3');
  // Printed as it is, each would read as other bytes.
  expect(printable(utf8('0xff'))).toBe('0x30786666');
  expect(printable(utf8('0x'))).toBe('0x3078');
  expect(printable(utf8('0X1'))).toBe('0X1'); // only the lowercase prefix is the hex form
});

it('line and paragraph separators, bidirectional controls and invisible format characters print as hex', () => {
  const hexOf = (s: string): string => `0x${Buffer.from(s, 'utf8').toString('hex')}`;
  const unclean = [
    '\u2028', // line separator: a line break to some terminals and editors
    '\u2029', // paragraph separator
    '\u202a', // left-to-right embedding … right-to-left override: they reorder what follows
    '\u202b',
    '\u202c',
    '\u202d',
    '\u202e',
    '\u2066', // isolates
    '\u2067',
    '\u2068',
    '\u2069',
    '\u200e', // left-to-right and right-to-left marks
    '\u200f',
    '\u061c', // Arabic letter mark
    '\u200b', // zero width space, non-joiner, joiner
    '\u200c',
    '\u200d',
    '\u2060', // word joiner
    '\ufeff', // byte order mark
    '\u00ad', // soft hyphen
    '\u007f', // delete and a C1 control
    '\u0085',
    '\ue000', // private use
    '\u0378', // unassigned
    '\uffff', // a noncharacter
    '\u{e0041}', // a tag character (astral, format)
    '\u00a0', // spaces that look like U+0020: no-break, ideographic, en, thin, narrow no-break, math
    '\u3000',
    '\u2002',
    '\u2009',
    '\u202f',
    '\u205f',
    '\u115f', // Hangul fillers: letters (Lo) that show as nothing
    '\u1160',
    '\u3164',
    '\uffa0',
    '\ufe0f', // variation selectors: invisible marks (Mn)
    '\u{e0100}',
    '\u034f', // combining grapheme joiner
    '\u2800', // blank braille pattern (So)
  ];
  for (const c of unclean) {
    // Alone and among clean text, where a terminal would show the text around it reordered or joined.
    for (const s of [c, `abc${c}`, `${c}def`, `ab${c}cd`]) {
      expect(printable(utf8(s)), JSON.stringify(s)).toBe(hexOf(s));
      expect(Buffer.from(bytesOfArgument('ROW', printable(utf8(s)))).toString('utf8')).toBe(s);
    }
  }
  // The Trojan Source shape: an override makes "admin" and "nimda" look alike.
  expect(printable(utf8('\u202enimda'))).toBe('0xe280ae6e696d6461');
  // Visible text of any script, U+0020 and emoji stay text.
  for (const s of ['שלום', 'مرحبا', 'a b', '日本語', '\u{1f600}', 'e\u0301']) expect(printable(utf8(s))).toBe(s);
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
