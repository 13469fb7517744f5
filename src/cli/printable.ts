/**
 * Printable form of bytes for the command line (`get`, `scan`), and its inverse for arguments.
 *
 * Invariant: the printed form is unambiguous and one line. Bytes print as their UTF-8 text when
 * that is clean (no control character, no invalid sequence) and does not itself start with `0x`;
 * anything else prints as `0x` and lowercase hex. So a printed `0x…` is always hex — text such as
 * `0xff` prints as `0x30786666` — and `bytesOfArgument` reads every printed form back as the bytes
 * it came from (a binary row key that `scan` printed can be passed to `get`).
 */
import { UsageError } from './usage-error.js';

const HEX_PREFIX = '0x';

export function printable(b: Uint8Array): string {
  const bytes = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const s = bytes.toString('utf8');
  return /^[\x20-\x7e\u00a0-\uffff]*$/.test(s) && !s.includes('\ufffd') && !s.startsWith(HEX_PREFIX)
    ? s
    : `${HEX_PREFIX}${bytes.toString('hex')}`;
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
