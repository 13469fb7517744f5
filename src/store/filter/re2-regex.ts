/**
 * Bigtable regular expressions: RE2 syntax, FULL match, over raw bytes.
 *
 * The v2 data.proto says every regex filter runs "in raw byte mode (RE2::Latin1), and [is]
 * evaluated as full matches": one byte is one character, `.` is `[^\n]` (any byte but 0x0a),
 * `\C` is any byte, and a pattern byte ≥ 0x80 is the Latin-1 character with that code. Google's
 * emulator agrees (it uses a byte-oriented regexp package). The npm `re2` binding only compiles
 * in UTF-8 mode, so we emulate Latin-1 mode exactly by transcoding both sides into the same
 * domain: every byte b (of the pattern and of the input) becomes the code point U+00bb.
 * - Pattern: its bytes (a string pattern is its UTF-8 bytes) are decoded as Latin-1; `\C`
 *   outside a character class is rewritten to `(?s:.)` (one code point = one original byte),
 *   and `\Q…\E` literal runs are rewritten to escaped literals so our anchoring cannot be
 *   swallowed by an unterminated `\Q`. Every pattern byte string is therefore valid: there is
 *   no "invalid UTF-8 pattern" error.
 * - Input: ASCII-only input is handed to RE2 as-is (its UTF-8 is itself, no copy); otherwise
 *   bytes ≥ 0x80 are expanded to their two-byte UTF-8 form first.
 * Full match is `\A(?:p)\z` (`$` could match before a trailing newline in other engines; `\z`
 * never does). The bare pattern is compiled first, so an unbalanced `)` is reported as an
 * error instead of escaping our group. Escapes that node-re2 would silently translate from
 * JavaScript syntax but RE2 rejects (`\cX`, `\uXXXX`) are rejected here too.
 *
 * Compiled regexes are cached by pattern (bounded, oldest evicted first): filters are
 * recompiled for every request, but the set of patterns a program uses is small.
 */
import RE2 from 're2';
import { asBuffer } from '../bytes.js';
import { StoreError } from '../errors.js';

export interface CompiledRegex {
  /** The pattern, each byte as one Latin-1 character (for messages and cache keys). */
  readonly pattern: string;
  /** Full match of the pattern against the raw bytes. */
  test(input: Uint8Array): boolean;
  /** Full match against the UTF-8 bytes of `s` (family names; ASCII needs no conversion). */
  testString(s: string): boolean;
}

const CACHE_LIMIT = 1024;
const cache = new Map<string, CompiledRegex>();
const encoder = new TextEncoder();

/** Compiles (or fetches from the cache) a Bigtable regex. Throws StoreError INVALID_REGEX. */
export function compileRegex(pattern: Uint8Array | string): CompiledRegex {
  const key = latin1Of(pattern);
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const compiled = build(key);
  if (cache.size >= CACHE_LIMIT) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  cache.set(key, compiled);
  return compiled;
}

/** The pattern's bytes as a string with one char (U+0000–U+00FF) per byte. */
export function latin1Of(pattern: Uint8Array | string): string {
  if (typeof pattern === 'string') {
    if (isAscii(pattern)) return pattern;
    return asBuffer(encoder.encode(pattern)).toString('latin1');
  }
  return asBuffer(pattern).toString('latin1');
}

function build(latin1Pattern: string): CompiledRegex {
  const body = rewrite(latin1Pattern);
  let re: RE2;
  try {
    new RE2(body, 'u'); // validates the bare pattern: unbalanced groups cannot leak out of ours
    re = new RE2(`\\A(?:${body})\\z`, 'u');
  } catch (e) {
    throw invalid(latin1Pattern, e instanceof Error ? e.message : String(e), e);
  }
  return {
    pattern: latin1Pattern,
    test(input: Uint8Array): boolean {
      return re.test(toUtf8Domain(input));
    },
    testString(s: string): boolean {
      return isAscii(s) ? re.test(s) : re.test(toUtf8Domain(encoder.encode(s)));
    },
  };
}

function invalid(pattern: string, why: string, cause?: unknown): StoreError {
  return new StoreError('INVALID_REGEX', `invalid RE2 pattern ${JSON.stringify(pattern)}: ${why}`, { pattern }, { cause });
}

/**
 * Rewrites `\C` (outside classes) to `(?s:.)` and `\Q…\E` to escaped literals; rejects `\c`/`\u`.
 * Everything else is left to RE2, which reports its own errors.
 */
function rewrite(p: string): string {
  let out = '';
  let i = 0;
  const n = p.length;
  let inClass = false;
  while (i < n) {
    const ch = p[i] as string;
    if (ch === '\\') {
      if (i + 1 >= n) return out + p.slice(i); // trailing backslash: RE2 rejects it
      const next = p[i + 1] as string;
      if (next === 'c' || next === 'u') throw invalid(p, `invalid escape sequence: \\${next}`);
      if (!inClass && next === 'C') {
        out += '(?s:.)';
        i += 2;
        continue;
      }
      if (!inClass && next === 'Q') {
        let j = i + 2;
        while (j < n && !(p[j] === '\\' && p[j + 1] === 'E')) {
          out += quoteChar(p.charCodeAt(j));
          j++;
        }
        i = j < n ? j + 2 : n;
        continue;
      }
      out += ch + next;
      i += 2;
      continue;
    }
    if (inClass) {
      if (ch === '[' && p[i + 1] === ':') {
        const end = p.indexOf(':]', i + 2);
        if (end >= 0) {
          out += p.slice(i, end + 2);
          i = end + 2;
          continue;
        }
      }
      if (ch === ']') inClass = false;
      out += ch;
      i++;
      continue;
    }
    if (ch === '[') {
      inClass = true;
      out += ch;
      i++;
      // A `]` right after `[` or `[^` is a literal member, not the end of the class.
      if (p[i] === '^') {
        out += '^';
        i++;
      }
      if (p[i] === ']') {
        out += ']';
        i++;
      }
      continue;
    }
    out += ch;
    i++;
  }
  return out;
}

function quoteChar(code: number): string {
  const isWord = (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
  return isWord ? String.fromCharCode(code) : `\\x{${code.toString(16)}}`;
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** The input re-encoded so that byte b is the UTF-8 of U+00bb (a view when all bytes are ASCII). */
function toUtf8Domain(input: Uint8Array): Buffer {
  let high = 0;
  for (let i = 0; i < input.length; i++) if ((input[i] as number) >= 0x80) high++;
  if (high === 0) return asBuffer(input);
  const out = Buffer.allocUnsafe(input.length + high);
  let o = 0;
  for (let i = 0; i < input.length; i++) {
    const b = input[i] as number;
    if (b < 0x80) out[o++] = b;
    else {
      out[o++] = 0xc0 | (b >> 6);
      out[o++] = 0x80 | (b & 0x3f);
    }
  }
  return out;
}
