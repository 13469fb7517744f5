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
  const out: string[] = [];
  for (const m of text.toLowerCase().matchAll(/[\p{L}\p{N}][\p{L}\p{N}_]*/gu)) {
    const t = m[0];
    if (t.length < 2 || t.length > 30 || STOP.has(t) || /^[0-9_]+$/.test(t)) continue;
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
  return [...score.entries()].sort((a, b) => b[1] - a[1] || compareStrings(a[0], b[0])).slice(0, MAX_TERMS);
}

/** The value a posting stores for a term score: 1 + ⌊log2(score)⌋. */
export function postingScore(score: number): number {
  return 1 + Math.floor(Math.log2(Math.max(1, score)));
}

export function snippetOf(text: string): string {
  return text.length <= 200 ? text : `${text.slice(0, 197).replace(/\s+\S*$/, '')}…`;
}
