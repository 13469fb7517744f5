/**
 * What an export writes to the posting rows of one cluster when its terms change, given what is
 * already there: the live terms (`export:terms`) and the stale postings kept (`export:stale`).
 *
 * Why stale postings are kept: most term changes are changes of canonical (a member overtakes the
 * canonical's in-link count, and the served text becomes the member's), and canonicals flip back
 * and forth among members with nearly equal counts. Deleting the old canonical's postings cost an
 * engine read each (a delete rewrites an existing row; a new posting row is known absent without
 * one) and re-posting them on the flip back cost their writes again. So a term that leaves the
 * live set keeps its posting, listed as stale; search counts only postings its cluster lists as
 * live (search.ts), and a stale posting that becomes live again with the same score bucket is not
 * written at all.
 *
 * Invariants (over one cluster's rows; test/webindex.test.ts reads them back after every batch):
 * - `index[t \0 id]` exists iff t is live or stale, with the bucket listed for it there.
 * - No term is both live and stale. The stale list is oldest first and never longer than
 *   `maxStale`: past it the oldest are deleted, so a cluster holds at most live + maxStale
 *   postings.
 */
import { MAX_TERMS } from './terms.js';

/** Stale postings a cluster keeps at most: as many as it can have live ones (MAX_TERMS). */
export const MAX_STALE_POSTINGS = MAX_TERMS;

export type Posting = readonly [term: string, bucket: number];

export interface Repost {
  /** Postings to write (new, or a bucket that changed). */
  readonly set: readonly Posting[];
  /** Terms whose posting rows to delete (the oldest stale ones beyond the bound). */
  readonly del: readonly string[];
  /** The new stale list (`export:stale`), oldest first. */
  readonly stale: readonly Posting[];
}

/**
 * The writes that turn the postings of `live` + `stale` into those of `next` + the returned
 * stale list.
 * Returns: the postings to set, the terms to delete and the stale list to store.
 * Throws: never. Pure.
 */
export function repost(
  live: readonly Posting[],
  stale: readonly Posting[],
  next: readonly Posting[],
  maxStale = MAX_STALE_POSTINGS,
): Repost {
  const posted = new Map<string, number>(stale);
  for (const [t, b] of live) posted.set(t, b);
  const nextTerms = new Set<string>();
  const set: Posting[] = [];
  for (const p of next) {
    nextTerms.add(p[0]);
    if (posted.get(p[0]) !== p[1]) set.push(p);
  }
  const kept: Posting[] = [];
  const liveTerms = new Set(live.map(([t]) => t));
  for (const p of stale) if (!nextTerms.has(p[0]) && !liveTerms.has(p[0])) kept.push(p);
  for (const p of live) if (!nextTerms.has(p[0])) kept.push(p);
  const excess = Math.max(0, kept.length - maxStale);
  return { set, del: kept.slice(0, excess).map(([t]) => t), stale: kept.slice(excess) };
}
