/**
 * What the serving index posts for a cluster: its most significant terms with a score. Pure and
 * deterministic (independent of the order anchors are read in), shared by the export observer,
 * the batch recomputation and search (query terms are tokenized the same way).
 *
 * Invariants: a cluster posts at most MAX_TERMS terms, so one export writes a bounded number of
 * rows however long the document is; the score weighs the title ×3 and anchor text ×2 over the
 * body, the classic signals of a web index. A posting stores the score's power-of-two bucket,
 * not the score, so a new link to a page rewrites a posting only when it moves a bucket — most
 * re-exports then write only the terms that entered or left the top MAX_TERMS.
 */
import { compareStrings } from './util.js';

export const MAX_TERMS = 48;
/** Body tokens considered (the start of long documents says what they are about). */
const MAX_BODY_TOKENS = 4_000;

const STOP = new Set(
  (
    'a an and are as at be but by for from has have if in into is it its of on or that the their then there these this to was were will with ' +
    'you your we our can not no do does so than which when who what how all any may also only use used using'
  ).split(' '),
);

/** Lower-case words of 2–30 letters/digits (not all digits), stop words removed. */
export function tokenize(text: string, limit = Number.POSITIVE_INFINITY): string[] {
  // Most text is ASCII, perhaps with a dash or curly quotes: scanned by char code, ~2× faster
  // than the Unicode regex below, which every other text takes (the two find the same words
  // there: terms.test.ts compares them).
  return BEYOND_ASCII.test(text) ? tokenizeUnicode(text, limit) : tokenizeAscii(text, limit);
}

/**
 * A char the ASCII scanner cannot judge. Outside ASCII it knows only the General Punctuation
 * block (dashes, quotes, ellipsis, spaces): no letter, digit or underscore there, and lower-casing
 * keeps each of them as it is, so they separate words in both scanners.
 */
const BEYOND_ASCII = /[^\x00-\x7f\u2000-\u206f]/;
const MIN_TOKEN = 2;
const MAX_TOKEN = 30;

/** tokenize() by regex: a letter or digit, then letters, digits and underscores. */
export function tokenizeUnicode(text: string, limit = Number.POSITIVE_INFINITY): string[] {
  const out: string[] = [];
  for (const m of text.toLowerCase().matchAll(/[\p{L}\p{N}][\p{L}\p{N}_]*/gu)) {
    const t = m[0];
    if (t.length < MIN_TOKEN || t.length > MAX_TOKEN || STOP.has(t) || /^[0-9_]+$/.test(t)) continue;
    out.push(t);
    if (out.length >= limit) break;
  }
  return out;
}

/** tokenize() of a text without BEYOND_ASCII chars, by char code (lower-casing it keeps every index). */
function tokenizeAscii(text: string, limit: number): string[] {
  const out: string[] = [];
  const s = text.toLowerCase();
  const n = s.length;
  let i = 0;
  while (i < n) {
    let c = s.charCodeAt(i);
    const letter = c >= 97 && c <= 122;
    if (!letter && !(c >= 48 && c <= 57)) {
      i++;
      continue;
    }
    const start = i;
    let letters = letter;
    for (i++; i < n; i++) {
      c = s.charCodeAt(i);
      if (c >= 97 && c <= 122) letters = true;
      else if (!((c >= 48 && c <= 57) || c === 95)) break;
    }
    const len = i - start;
    // All digits and underscores: not a word.
    if (len < MIN_TOKEN || len > MAX_TOKEN || !letters) continue;
    const t = s.slice(start, i);
    if (STOP.has(t)) continue;
    out.push(t);
    if (out.length >= limit) break;
  }
  return out;
}

/** Tokens counted of an anchor text (its start says what the link is about). */
const MAX_ANCHOR_TOKENS = 50;

/**
 * The tokens of anchor texts, counted: `[term, count]` sorted by term (what the export adds to a
 * cluster's terms from the links to its members). A popular page's links mostly repeat a few
 * words of its title, so the counts stay a handful of entries however many links there are.
 */
export function anchorTermCounts(texts: Iterable<string>): [string, number][] {
  const counts = new Map<string, number>();
  for (const a of texts) for (const t of tokenize(a, MAX_ANCHOR_TOKENS)) counts.set(t, (counts.get(t) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => compareStrings(a[0], b[0]));
}

/**
 * `[term, score]` sorted by score descending, then term. `anchorTerms` are the anchor texts'
 * token counts (anchorTermCounts; pairs may repeat a term, e.g. one list per cluster member).
 */
export function termsOf(title: string, text: string, anchorTerms: Iterable<readonly [string, number]>): [string, number][] {
  const score = new Map<string, number>();
  const add = (t: string, w: number) => score.set(t, (score.get(t) ?? 0) + w);
  for (const t of tokenize(title)) add(t, 3);
  for (const [t, n] of anchorTerms) add(t, 2 * n);
  for (const t of tokenize(text, MAX_BODY_TOKENS)) add(t, 1);
  return topTerms(score, MAX_TERMS);
}

/**
 * The `max` best of `score`: score descending, then term. Sorts only what can make the cut (a
 * document has hundreds of distinct terms, most scored 1): the entries above the max-th best
 * score, and of those at it the smallest terms — the same result as sorting them all.
 */
export function topTerms(score: ReadonlyMap<string, number>, max: number): [string, number][] {
  const byScore = (a: [string, number], b: [string, number]) => b[1] - a[1] || compareStrings(a[0], b[0]);
  if (score.size <= max) return [...score].sort(byScore);
  const scores = new Float64Array(score.size);
  let i = 0;
  for (const n of score.values()) scores[i++] = n;
  scores.sort();
  const cut = scores[scores.length - max] as number;
  const out: [string, number][] = [];
  const tied: string[] = [];
  for (const [t, n] of score) {
    if (n > cut) out.push([t, n]);
    else if (n === cut) tied.push(t);
  }
  // Without a comparator, sort orders strings by UTF-16 code units, as compareStrings does.
  tied.sort();
  for (let j = 0; out.length < max; j++) out.push([tied[j] as string, cut]);
  return out.sort(byScore);
}

/** The value a posting stores for a term score: 1 + ⌊log2(score)⌋. */
export function postingScore(score: number): number {
  return 1 + Math.floor(Math.log2(Math.max(1, score)));
}

export function snippetOf(text: string): string {
  return text.length <= 200 ? text : `${text.slice(0, 197).replace(/\s+\S*$/, '')}…`;
}
