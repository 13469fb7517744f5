import { describe, expect, it } from 'vitest';
import { isStoreError } from '../errors.js';
import { compileRegex, latin1Of } from './re2-regex.js';

const b = (...xs: number[]) => new Uint8Array(xs);
const s = (x: string) => new TextEncoder().encode(x);

function rejects(pattern: string | Uint8Array): string {
  try {
    compileRegex(pattern);
  } catch (e) {
    expect(isStoreError(e, 'INVALID_REGEX')).toBe(true);
    return (e as Error).message;
  }
  throw new Error(`pattern ${String(pattern)} was accepted`);
}

describe('compileRegex: full match', () => {
  it('matches the whole input, never a part', () => {
    const re = compileRegex('abc');
    expect(re.test(s('abc'))).toBe(true);
    expect(re.test(s('xabc'))).toBe(false);
    expect(re.test(s('abcx'))).toBe(false);
    expect(re.test(s('ab'))).toBe(false);
    expect(compileRegex('a.*').test(s('abc'))).toBe(true);
    expect(compileRegex('b').test(s('abc'))).toBe(false);
  });

  it('alternation is anchored as a whole', () => {
    const re = compileRegex('a|bc');
    expect(re.test(s('a'))).toBe(true);
    expect(re.test(s('bc'))).toBe(true);
    expect(re.test(s('abc'))).toBe(false);
    expect(re.test(s('ax'))).toBe(false);
  });

  it('$ does not match before a trailing newline', () => {
    expect(compileRegex('a$').test(s('a\n'))).toBe(false);
    expect(compileRegex('a').test(s('a\n'))).toBe(false);
    expect(compileRegex('a\\n').test(s('a\n'))).toBe(true);
  });

  it('empty pattern matches only empty input', () => {
    const re = compileRegex('');
    expect(re.test(b())).toBe(true);
    expect(re.test(s('a'))).toBe(false);
    expect(compileRegex('.*').test(b())).toBe(true);
  });
});

describe('compileRegex: raw bytes (RE2 Latin-1 mode)', () => {
  it('\\C matches any single byte, including 0x00, 0x0a, 0x80 and 0xff', () => {
    const re = compileRegex('\\C');
    for (const x of [0x00, 0x0a, 0x41, 0x7f, 0x80, 0xc3, 0xff]) expect(re.test(b(x))).toBe(true);
    expect(re.test(b())).toBe(false);
    expect(re.test(b(0xc3, 0xa9))).toBe(false); // two bytes, even if valid UTF-8
    expect(compileRegex('\\C\\C').test(b(0xc3, 0xa9))).toBe(true);
    expect(compileRegex('\\C*').test(b(0xff, 0x00, 0x0a, 0x80))).toBe(true);
    expect(compileRegex('a\\C{2}z').test(b(0x61, 0xff, 0x00, 0x7a))).toBe(true);
    expect(compileRegex('a\\C{2}z').test(b(0x61, 0xff, 0x7a))).toBe(false);
  });

  it('. is one byte other than newline', () => {
    const re = compileRegex('.');
    expect(re.test(b(0xff))).toBe(true);
    expect(re.test(b(0x00))).toBe(true);
    expect(re.test(b(0x0a))).toBe(false);
    expect(re.test(s('é'))).toBe(false); // 2 bytes
    expect(compileRegex('..').test(s('é'))).toBe(true);
    expect(compileRegex('(?s).').test(b(0x0a))).toBe(true);
  });

  it('negated classes and hex escapes address bytes', () => {
    expect(compileRegex('[^a]').test(b(0xff))).toBe(true);
    expect(compileRegex('[^a]').test(b(0x61))).toBe(false);
    expect(compileRegex('\\xff').test(b(0xff))).toBe(true);
    expect(compileRegex('\\x{ff}').test(b(0xff))).toBe(true);
    expect(compileRegex('\\x00').test(b(0x00))).toBe(true);
    expect(compileRegex('[\\x80-\\xff]+').test(b(0x80, 0xc3, 0xff))).toBe(true);
    expect(compileRegex('[\\x80-\\xff]+').test(b(0x80, 0x7f))).toBe(false);
  });

  it('a non-ASCII string pattern is its UTF-8 bytes', () => {
    const re = compileRegex('é');
    expect(re.test(s('é'))).toBe(true);
    expect(re.test(b(0xc3, 0xa9))).toBe(true);
    expect(re.test(b(0xe9))).toBe(false); // Latin-1 é is a different byte string
    expect(latin1Of('é')).toBe('\u00c3\u00a9');
  });

  it('pattern bytes that are not UTF-8 are accepted and match those bytes', () => {
    const re = compileRegex(b(0xff, 0x2b)); // "\xff+"
    expect(re.test(b(0xff))).toBe(true);
    expect(re.test(b(0xff, 0xff, 0xff))).toBe(true);
    expect(re.test(b(0xfe))).toBe(false);
    const nul = compileRegex(b(0x61, 0x00, 0x62));
    expect(nul.test(b(0x61, 0x00, 0x62))).toBe(true);
    expect(nul.test(b(0x61, 0x62))).toBe(false);
  });

  it('binary input with zero bytes is matched in full', () => {
    expect(compileRegex('a\\x00*b').test(b(0x61, 0, 0, 0x62))).toBe(true);
    expect(compileRegex('ab').test(b(0x61, 0, 0x62))).toBe(false);
  });

  it('accepts Buffer and subarray views', () => {
    const big = b(0x00, 0x61, 0x62, 0x63, 0xff);
    expect(compileRegex('abc').test(big.subarray(1, 4))).toBe(true);
    expect(compileRegex('abc\\xff').test(Buffer.from(big.buffer, 1, 4))).toBe(true);
  });

  it('case folding and Unicode classes work on Latin-1 characters', () => {
    expect(compileRegex('(?i)abc').test(s('ABC'))).toBe(true);
    expect(compileRegex('[[:digit:]]+').test(s('0123'))).toBe(true);
    expect(compileRegex('\\d+').test(s('12a'))).toBe(false);
  });
});

describe('compileRegex: rewriting', () => {
  it('\\Q…\\E is literal, even unterminated, without breaking the anchors', () => {
    expect(compileRegex('\\Qa.b\\E').test(s('a.b'))).toBe(true);
    expect(compileRegex('\\Qa.b\\E').test(s('axb'))).toBe(false);
    expect(compileRegex('\\Q(x)').test(s('(x)'))).toBe(true);
    expect(compileRegex('\\Q(x)').test(s('(x)y'))).toBe(false);
    expect(compileRegex('x\\Q*\\E+').test(s('x**'))).toBe(true);
    expect(compileRegex('\\Qa\\\\E').test(s('a\\'))).toBe(true); // backslash literal, then \E
  });

  it('an escaped backslash before C is not \\C', () => {
    const re = compileRegex('\\\\C');
    expect(re.test(s('\\C'))).toBe(true);
    expect(re.test(s('\\x'))).toBe(false);
  });

  it('brackets: ] first in a class and POSIX classes do not confuse the scanner', () => {
    expect(compileRegex('[]a]\\C').test(b(0x5d, 0xff))).toBe(true);
    expect(compileRegex('[^]a]\\C').test(b(0x62, 0xff))).toBe(true);
    expect(compileRegex('[[:alpha:]]\\C').test(b(0x62, 0xff))).toBe(true);
  });
});

describe('compileRegex: errors and cache', () => {
  it('rejects invalid patterns with INVALID_REGEX and the pattern in details', () => {
    for (const p of ['a(b', 'a)|(b', '(', '[a', 'a\\', '*a', 'a**', '(?=a)', '(a)\\1', '\\cA', '\\u0041', '[\\C]', 'x{2,1}']) rejects(p);
    try {
      compileRegex('a)|(b');
    } catch (e) {
      expect((e as { details: Record<string, unknown> }).details.pattern).toBe('a)|(b');
    }
  });

  it('an unbalanced ) cannot escape the anchoring group', () => {
    expect(rejects('a)|(b')).toMatch(/invalid RE2 pattern/);
  });

  it('returns the cached compiled regex for the same pattern, string or bytes', () => {
    const a = compileRegex('cache-me');
    expect(compileRegex('cache-me')).toBe(a);
    expect(compileRegex(s('cache-me'))).toBe(a);
  });

  it('testString matches a string by its UTF-8 bytes', () => {
    expect(compileRegex('fam[0-9]').testString('fam7')).toBe(true);
    expect(compileRegex('fam[0-9]').testString('fam7x')).toBe(false);
    expect(compileRegex('..').testString('é')).toBe(true);
    expect(compileRegex('.').testString('é')).toBe(false);
  });
});
