/**
 * Search over the serving index: the AND of the query's terms, ranked by the sum of their
 * per-cluster scores (ties: more in-links, then URL). Runs at one snapshot, so a query never sees
 * half of an export. A posting counts only if its cluster's `export:terms` lists the term: the
 * export leaves some postings of terms its cluster no longer has (repost.ts).
 */
import type { Snapshot } from '../../txn/transaction.js';
import { CLUSTERS, EXPORTS, EXPORT_DOC, EXPORT_TERMS, INDEX, POSTING_SCORE, type ServingDoc } from './schema.js';
import { tokenize } from './terms.js';
import { compareStrings, utf8 } from './util.js';

export interface SearchHit extends ServingDoc {
  readonly clusterId: string;
  readonly score: number;
}

export interface SearchResult {
  readonly query: string;
  readonly terms: readonly string[];
  /** Clusters matching every term. */
  readonly total: number;
  readonly hits: readonly SearchHit[];
  readonly tookMs: number;
}

export async function search(snap: Snapshot, query: string, limit = 10): Promise<SearchResult> {
  const t0 = performance.now();
  const terms = [...new Set(tokenize(query))];
  if (terms.length === 0) return { query, terms, total: 0, hits: [], tookMs: 0 };
  // The clusters posted under each term; their scores are taken from the live lists below.
  const perTerm = await Promise.all(
    terms.map(async (term) => {
      const ids = new Set<string>();
      const prefix = `${term}\u0000`;
      for await (const r of snap.scan(INDEX, { prefix }, { columns: [POSTING_SCORE] }))
        if (r.columns.has(POSTING_SCORE)) ids.add((utf8(r.row) as string).slice(prefix.length));
      return ids;
    }),
  );
  perTerm.sort((a, b) => a.size - b.size);
  const [smallest, ...rest] = perTerm as [Set<string>, ...Set<string>[]];
  const candidates = [...smallest].filter((id) => rest.every((m) => m.has(id)));
  const matches = await liveOnly(snap, terms, candidates);
  matches.sort((a, b) => b.score - a.score || compareStrings(a.id, b.id));
  // Fetch a few more than asked so the in-link tie-break can reorder equal scores.
  const top = matches.slice(0, limit * 2);
  const docs = await exportValues(
    snap,
    top.map((m) => m.id),
    EXPORT_DOC,
  );
  const hits: SearchHit[] = [];
  top.forEach((m, i) => {
    const v = utf8(docs[i] ?? null);
    if (v !== null) hits.push({ ...(JSON.parse(v) as ServingDoc), clusterId: m.id, score: m.score });
  });
  hits.sort((a, b) => b.score - a.score || b.inlinks - a.inlinks || compareStrings(a.url, b.url));
  return { query, terms, total: matches.length, hits: hits.slice(0, limit), tookMs: performance.now() - t0 };
}

/**
 * The candidates whose every query term is live in their cluster (`export:terms`), scored from
 * those lists.
 */
async function liveOnly(snap: Snapshot, terms: readonly string[], candidates: readonly string[]) {
  const lists = await exportValues(snap, candidates, EXPORT_TERMS);
  const live: { id: string; score: number }[] = [];
  candidates.forEach((id, i) => {
    const list = utf8(lists[i] ?? null) ?? '[]';
    let score = 0;
    for (const t of terms) {
      const b = bucketIn(list, t);
      if (b === undefined) return;
      score += b;
    }
    live.push({ id, score });
  });
  return live;
}

/**
 * The bucket `export:terms` (JSON `[["term",bucket],…]`) lists for `term`, found in the text: a
 * broad query meets thousands of clusters, and parsing each list cost more than reading it.
 * Terms are tokenize()'s words (letters and digits), which JSON writes without escapes.
 */
function bucketIn(list: string, term: string): number | undefined {
  const at = list.indexOf(`["${term}",`);
  if (at < 0) return undefined;
  const from = at + term.length + 4;
  return Number.parseInt(list.slice(from, list.indexOf(']', from)), 10);
}

/**
 * One `exports` column of each cluster — or, where a build before `exports` left it, its
 * `clusters` column (schema.ts).
 */
async function exportValues(snap: Snapshot, ids: readonly string[], column: string): Promise<(Uint8Array | null)[]> {
  const values = await snap.getMany(
    EXPORTS,
    ids.map((row) => ({ row, column })),
  );
  const unmoved = ids.filter((_, i) => values[i] === null);
  if (unmoved.length === 0) return values;
  const legacy = await snap.getMany(
    CLUSTERS,
    unmoved.map((row) => ({ row, column })),
  );
  let next = 0;
  return values.map((v) => v ?? legacy[next++] ?? null);
}
