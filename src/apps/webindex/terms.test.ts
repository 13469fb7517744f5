import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../util/seeded-random.js';
import { compareStrings } from './util.js';
import { MAX_TERMS, termsOf, tokenize, tokenizeUnicode, topTerms } from './terms.js';

/** Random text over an alphabet that exercises every branch of the ASCII scanner. */
function randomText(r: () => number, alphabet: string, length: number): string {
  let s = '';
  for (let i = 0; i < length; i++) s += alphabet[Math.floor(r() * alphabet.length)];
  return s;
}

describe('tokenize', () => {
  it('finds in ASCII text exactly the words the Unicode regex finds', () => {
    const r = mulberry32(11);
    // Letters of both cases, digits, underscores, separators, and stop words' letters often.
    const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789____    ,.-!?\n\t@#~theandof';
    for (let k = 0; k < 2_000; k++) {
      const text = randomText(r, alphabet, Math.floor(r() * 300));
      const limit = r() < 0.2 ? 1 + Math.floor(r() * 5) : Number.POSITIVE_INFINITY;
      expect(tokenize(text, limit)).toEqual(tokenizeUnicode(text, limit));
    }
    // Runs at the length bounds, all-digit and underscore-led tokens, stop words in capitals.
    const edge = `${'a'.repeat(30)} ${'b'.repeat(31)} x 12 1a _ab a_ 2024 99_ THE And Quick-brown x_y!`;
    expect(tokenize(edge)).toEqual(tokenizeUnicode(edge));
    expect(tokenize(edge)).toEqual(['a'.repeat(30), '1a', 'ab', 'a_', 'quick', 'brown', 'x_y']);
  });

  it('scans ASCII with General Punctuation (dashes, quotes) as the Unicode regex does', () => {
    expect(tokenize('Title — the “quoted” word’s end… done')).toEqual(['title', 'quoted', 'word', 'end', 'done']);
    const r = mulberry32(14);
    const punctuation = Array.from({ length: 0x70 }, (_, i) => String.fromCharCode(0x2000 + i)).join('');
    for (let k = 0; k < 1_000; k++) {
      const text = randomText(r, `abcXYZ09_ ,${punctuation}`, Math.floor(r() * 200));
      expect(tokenize(text)).toEqual(tokenizeUnicode(text));
    }
  });

  it('takes other non-ASCII text through the Unicode regex', () => {
    expect(tokenize('Straße ÜBER naïve café 東京 x1')).toEqual(['straße', 'über', 'naïve', 'café', '東京', 'x1']);
    const r = mulberry32(12);
    for (let k = 0; k < 300; k++) {
      const text = randomText(r, 'abcXYZ09_ éÉßü東ª²µİ\u{1d400}-', Math.floor(r() * 120));
      expect(tokenize(text)).toEqual(tokenizeUnicode(text));
    }
  });
});

describe('topTerms', () => {
  const bySort = (score: Map<string, number>, max: number) =>
    [...score].sort((a, b) => b[1] - a[1] || compareStrings(a[0], b[0])).slice(0, max);

  it('equals sorting every term and taking the first, ties at the cut included', () => {
    const r = mulberry32(13);
    for (let k = 0; k < 500; k++) {
      const score = new Map<string, number>();
      const n = Math.floor(r() * 200);
      // Few distinct scores, so the cut usually falls inside a run of ties.
      for (let i = 0; i < n; i++) score.set(randomText(r, 'abcdé', 1 + Math.floor(r() * 4)), 1 + Math.floor(r() * r() * 6));
      const max = 1 + Math.floor(r() * 60);
      expect(topTerms(score, max)).toEqual(bySort(score, max));
    }
  });

  it('is what termsOf returns for a long document', () => {
    const body = Array.from({ length: 600 }, (_, i) => `w${i % 97}x${i % 7 === 0 ? 'z' : ''}`).join(' ');
    const terms = termsOf('Some Title', body, [['anchor', 2]]);
    expect(terms).toHaveLength(MAX_TERMS);
    const all = new Map<string, number>();
    for (const t of tokenize('Some Title')) all.set(t, (all.get(t) ?? 0) + 3);
    all.set('anchor', (all.get('anchor') ?? 0) + 4);
    for (const t of tokenize(body)) all.set(t, (all.get(t) ?? 0) + 1);
    expect(terms).toEqual(bySort(all, MAX_TERMS));
  });
});
