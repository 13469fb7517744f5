/**
 * Printable form of bytes for the command line (`get`, `scan`), and its inverse for arguments.
 *
 * Invariant: the printed form is unambiguous and one line. Bytes print as their UTF-8 text when
 * that is clean and does not itself start with `0x`; anything else prints as `0x` and lowercase
 * hex. So a printed `0x…` is always hex — text such as `0xff` prints as `0x30786666` — and
 * `bytesOfArgument` reads every printed form back as the bytes it came from (a binary row key
 * that `scan` printed can be passed to `get`).
 *
 * Clean text is valid UTF-8 with no character of Unicode's category Other — controls (Cc), format
 * characters (Cf), private use (Co), unassigned (Cn) — and no line or paragraph separator
 * (U+2028, U+2029, which terminals and editors may break a line at). Format characters are the
 * bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C), which reorder
 * what a terminal shows after them, and invisible ones (U+200B–U+200D, U+2060, U+FEFF, U+00AD):
 * printed as they are, two keys would look alike, or one like a different key. For the same
 * reason neither is any other character that shows as nothing or as a plain space: spaces other
 * than U+0020 (no-break, ideographic, the typographic ones: Zs), Unicode's default-ignorable code
 * points outside Other (Hangul fillers, variation selectors, the combining grapheme joiner) and
 * the blank braille pattern U+2800. So an emoji with its presentation selector (❤️ = U+2764 U+FE0F)
 * prints as hex: unlike ❤ alone, which is clean, the two would look alike.
 */
import { UsageError } from './usage-error.js';

const HEX_PREFIX = '0x';

/**
 * Text with no character of category Other (Cc, Cf, Co, Cn; Cs cannot occur in decoded UTF-8), no
 * separator but U+0020 (Zs, Zl, Zp), no default-ignorable code point, and no U+2800.
 */
const CLEAN = /^(?:[^\p{C}\p{Z}\p{Default_Ignorable_Code_Point}\u2800]| )*$/u;

export function printable(b: Uint8Array): string {
  const bytes = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const s = bytes.toString('utf8');
  return CLEAN.test(s) && !s.includes('\ufffd') && !s.startsWith(HEX_PREFIX) ? s : `${HEX_PREFIX}${bytes.toString('hex')}`;
}

/**
 * `printable(b)` cut to at most `max` UTF-16 units, on a code point boundary: a cut through a
 * surrogate pair would print half an emoji (a lone surrogate, U+FFFD on the terminal).
 */
export function printableCut(b: Uint8Array, max: number): string {
  const s = printable(b);
  if (s.length <= max) return s;
  const end = /[\ud800-\udbff]/.test(s.charAt(max - 1)) ? max - 1 : max;
  return s.slice(0, end);
}

/**
 * The bytes an argument names, in the form `printable` prints: `0x` and hex digits is those bytes,
 * anything else its UTF-8. An argument starting with `0x` that is not whole bytes of hex is a
 * usage error rather than text, as `printable` never prints such text as it is.
 */
export function bytesOfArgument(name: string, raw: string): Uint8Array {
  if (!raw.startsWith(HEX_PREFIX)) return Buffer.from(raw, 'utf8');
  const hex = raw.slice(HEX_PREFIX.length);
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(hex)) {
    throw new UsageError(
      `${name} ${JSON.stringify(raw)} starts with 0x but is not whole bytes of hex; for the text itself give its hex form, ${printable(Buffer.from(raw, 'utf8'))}`,
    );
  }
  return Buffer.from(hex, 'hex');
}
