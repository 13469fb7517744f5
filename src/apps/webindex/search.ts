/**
 * Search over the serving index: the AND of the query's terms, ranked by the sum of their
 * per-cluster scores (ties: more in-links, then URL). Runs at one snapshot, so a query never sees
 * half of an export.
 */
import type { Snapshot } from '../../txn/transaction.js';
import { CLUSTERS, EXPORTS, EXPORT_DOC, INDEX, POSTING_SCORE, type ServingDoc } from './schema.js';
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
  const perTerm = await Promise.all(
    terms.map(async (term) => {
      const scores = new Map<string, number>();
      const prefix = `${term}\u0000`;
      for await (const r of snap.scan(INDEX, { prefix }, { columns: [POSTING_SCORE] })) {
        const v = r.columns.get(POSTING_SCORE);
        if (v !== undefined) scores.set((utf8(r.row) as string).slice(prefix.length), Number(utf8(v)));
      }
      return scores;
    }),
  );
  perTerm.sort((a, b) => a.size - b.size);
  const [smallest, ...rest] = perTerm as [Map<string, number>, ...Map<string, number>[]];
  const matches: { id: string; score: number }[] = [];
  for (const [id, s] of smallest) {
    let score = s;
    let all = true;
    for (const m of rest) {
      const v = m.get(id);
      if (v === undefined) {
        all = false;
        break;
      }
      score += v;
    }
    if (all) matches.push({ id, score });
  }
  matches.sort((a, b) => b.score - a.score || compareStrings(a.id, b.id));
  // Fetch a few more than asked so the in-link tie-break can reorder equal scores.
  const top = matches.slice(0, limit * 2);
  const docs = await snap.getMany(
    EXPORTS,
    top.map((m) => ({ row: m.id, column: EXPORT_DOC })),
  );
  // A store written before the results moved to `exports` keeps some in `clusters` (schema.ts).
  const unmoved = top.filter((_, i) => docs[i] === null);
  const legacy =
    unmoved.length === 0
      ? []
      : await snap.getMany(
          CLUSTERS,
          unmoved.map((m) => ({ row: m.id, column: EXPORT_DOC })),
        );
  let nextLegacy = 0;
  const hits: SearchHit[] = [];
  top.forEach((m, i) => {
    const v = utf8(docs[i] !== null ? docs[i] : legacy[nextLegacy++]);
    if (v !== null) hits.push({ ...(JSON.parse(v) as ServingDoc), clusterId: m.id, score: m.score });
  });
  hits.sort((a, b) => b.score - a.score || b.inlinks - a.inlinks || compareStrings(a.url, b.url));
  return { query, terms, total: matches.length, hits: hits.slice(0, limit), tookMs: performance.now() - t0 };
}
