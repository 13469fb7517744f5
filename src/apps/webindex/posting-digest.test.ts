import { describe, expect, it } from 'vitest';
import { PostingDigest } from './posting-digest.js';
import { mulberry32 } from '../../util/seeded-random.js';

const digest = (postings: [string, number][]) => {
  const d = new PostingDigest();
  for (const [term, score] of postings) d.add(term, score);
  return d.toString();
};

describe('PostingDigest', () => {
  const postings: [string, number][] = [
    ['apple', 3],
    ['banana', 1],
    ['cherry', 2],
    ['date', 5],
  ];

  it('does not depend on the order postings are added in', () => {
    expect(digest([...postings].reverse())).toBe(digest(postings));
    expect(digest([postings[2], postings[0], postings[3], postings[1]] as [string, number][])).toBe(digest(postings));
  });

  it('differs when a posting is missing, added, or has another term or score', () => {
    const base = digest(postings);
    expect(digest(postings.slice(1))).not.toBe(base);
    expect(digest([...postings, ['elder', 1]])).not.toBe(base);
    expect(digest([['apple', 4], ...postings.slice(1)])).not.toBe(base);
    expect(digest([['apples', 3], ...postings.slice(1)])).not.toBe(base);
    // Term and score are kept apart: `a1` scored 1 is not `a` scored 11.
    expect(digest([['a1', 1]])).not.toBe(digest([['a', 11]]));
    // Swapping two postings' scores keeps the count and every term and score, but not the pairs.
    expect(
      digest([
        ['apple', 1],
        ['banana', 3],
      ]),
    ).not.toBe(
      digest([
        ['apple', 3],
        ['banana', 1],
      ]),
    );
  });

  it('adds up: two lists together digest as their union', () => {
    const a = new PostingDigest().add('apple', 3).add('banana', 1);
    const b = new PostingDigest().add('cherry', 2).add('date', 5);
    expect(a.plus(b).toString()).toBe(digest(postings));
    expect(a.plus(b).size).toBe(4);
    expect(a.toString()).toBe(digest(postings.slice(0, 2))); // plus changes neither
    expect(new PostingDigest().toString()).toBe('0:0:0');
  });

  it('tells apart thousands of random single changes to a large set', () => {
    const random = mulberry32(7);
    const word = () => Math.floor(random() * 36 ** 6).toString(36);
    const set: [string, number][] = Array.from({ length: 5_000 }, () => [word(), 1 + Math.floor(random() * 8)]);
    const base = digest(set);
    const digests = new Map<string, string>(); // a change (which posting, its new pair) → the digest
    for (let i = 0; i < 2_000; i++) {
      const changed = [...set];
      const k = Math.floor(random() * set.length);
      const [term, score] = set[k] as [string, number];
      const pair: [string, number] = i % 2 === 0 ? [term, score + 1 + (i % 7)] : [word(), score];
      changed[k] = pair;
      const d = digest(changed);
      expect(d).not.toBe(base);
      digests.set(`${k} ${pair.join(' ')}`, d);
    }
    expect(new Set(digests.values()).size).toBe(digests.size);
  });
});
