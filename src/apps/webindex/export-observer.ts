/**
 * Export (observes `clusters c:state`): makes a changed cluster searchable. The serving index is
 * in the store: one posting row per (term, cluster) in `index`, and the result shown for the
 * cluster in `exports[id] export:doc`.
 *
 * What a cluster exports is computed from scratch on every run — the canonical member (the one
 * with the most in-links, ties broken by the smallest URL), its title and text, plus the anchor
 * text of every link to any member — and diffed against what it posted last time
 * (`export:terms`), so only changed postings are written. A term that leaves the document keeps
 * its posting, listed in `export:stale` (bounded; repost.ts says why): search counts only the
 * terms in `export:terms`. The members' in-links are counted here, one `anchors` prefix scan per
 * member (concurrent); every other read is a point read.
 *
 * Invariants:
 * - Every change that affects the exported document reaches this observer through `c:state`:
 *   membership changes by a write of it, a link to or from a member by the link relay's weak
 *   notification of it (link-notify-observer.ts says why the relay always notifies the cluster
 *   the target is in, or a join or move starts an export after the link), and the canonical's
 *   content through its re-clustering (a content change always changes its keys). Each is
 *   committed before the notification it sends, so the run it causes reads it.
 * - A vanished cluster (`c:state` deleted) removes all its postings, stale ones too, and its result.
 * - `export:terms` and `export:doc` of a store written before they moved to `exports` (still in
 *   `clusters[id]`) are read when `exports[id]` has none, and moved by the cluster's next export:
 *   the postings they describe are diffed as if they were in `exports`.
 * - Crawl-to-index latency is recorded for a member only once the cluster reflects that member's
 *   current parse (`parsed:keys` = `cluster:keys`), and only once per fetch (`export:fetchedAt`).
 *   It is measured to this transaction's start of commit work, not its commit timestamp.
 * - Exports of one process that would record the same member's latency (two clusters listing a
 *   member that just moved from one to the other, at different snapshots) go through an in-process
 *   gate (gate.ts) before the anchor scans: the second waits for the first and retries with a
 *   fresh snapshot, instead of doing all its work and conflicting on `export:fetchedAt` at commit.
 */
import type { Transaction } from '../../txn/transaction.js';
import type { WebIndexMetrics } from './metrics.js';
import {
  ANCHORS,
  ANCHOR_TEXT,
  CLUSTERS,
  CLUSTER_KEYS,
  CLUSTER_STATE,
  DOCS,
  EXPORT_DOC,
  EXPORT_FETCHED_AT,
  EXPORT_LATENCY_MS,
  EXPORT_STALE,
  EXPORT_TERMS,
  EXPORTS,
  INDEX,
  PAGES,
  PARSED_FETCHED_AT,
  PARSED_KEYS,
  PARSED_TEXT,
  PARSED_TITLE,
  POSTING_SCORE,
  type ServingDoc,
  anchorPrefix,
  parseClusterState,
  postingRow,
} from './schema.js';
import { KeyGate, staleSnapshot } from './gate.js';
import { type Posting, repost } from './repost.js';
import { anchorTermCounts, postingScore, snippetOf, termsOf } from './terms.js';
import { compareStrings, parseJson, toInt, utf8 } from './util.js';

export interface ExportOptions {
  readonly metrics?: WebIndexMetrics;
  /** Wall clock (ms), injectable for tests. */
  readonly nowMs?: () => number;
}

/** Members whose anchors one export scans concurrently. */
const SCANS_AT_ONCE = 8;

/** What the export reads of each member, in this order (`latencyDue`, the latency record). */
const PER_MEMBER = [PARSED_KEYS, CLUSTER_KEYS, PARSED_FETCHED_AT, EXPORT_FETCHED_AT, EXPORT_LATENCY_MS];

/**
 * The fetch of member `i` whose latency this export records, or null: the cluster reflects the
 * member's current parse and that fetch's latency is not recorded yet. `values` holds PER_MEMBER
 * for every member.
 */
function latencyDue(values: readonly (Uint8Array | null)[], i: number): number | null {
  const at = i * PER_MEMBER.length;
  const keys = utf8(values[at]);
  const fetchedAt = toInt(values[at + 2]);
  return keys !== null && keys === utf8(values[at + 1]) && fetchedAt > toInt(values[at + 3]) ? fetchedAt : null;
}

/** The in-links of `target` (anchor rows): how many, and their non-empty anchor texts appended to `texts`. */
async function countAnchors(tx: Transaction, target: string, texts: string[]): Promise<number> {
  let count = 0;
  for await (const r of tx.scan(ANCHORS, { prefix: anchorPrefix(target) }, { columns: [ANCHOR_TEXT] })) {
    count++;
    const v = r.columns.get(ANCHOR_TEXT);
    if (v !== undefined && v.byteLength > 0) texts.push(utf8(v) as string);
  }
  return count;
}

export function exportObserver(options: ExportOptions = {}) {
  const nowMs = options.nowMs ?? Date.now;
  const gate = new KeyGate();
  return async (tx: Transaction, row: Uint8Array): Promise<void> => {
    const id = utf8(row) as string;
    const [[stateValue, legacyTerms, legacyDoc], [exportedTerms, exportedDoc, staleValue]] = await Promise.all([
      tx.getMany(
        CLUSTERS,
        [CLUSTER_STATE, EXPORT_TERMS, EXPORT_DOC].map((column) => ({ row, column })),
      ),
      tx.getMany(
        EXPORTS,
        [EXPORT_TERMS, EXPORT_DOC, EXPORT_STALE].map((column) => ({ row, column })),
      ),
    ]);
    // Where an earlier build kept them (see schema.ts): moved by this run.
    if (legacyTerms !== null) tx.delete(CLUSTERS, row, EXPORT_TERMS);
    if (legacyDoc !== null) tx.delete(CLUSTERS, row, EXPORT_DOC);
    const termsValue = exportedTerms ?? legacyTerms;
    const docValue = exportedDoc ?? legacyDoc;
    // What is posted, parsed only by the runs that change it (most exports keep every term).
    const posted = () => ({ live: parseJson<Posting[]>(termsValue, []), stale: parseJson<Posting[]>(staleValue, []) });
    const state = parseClusterState(utf8(stateValue));
    if (state === null || state.members.length === 0) {
      const { live, stale } = posted();
      for (const [t] of [...live, ...stale]) tx.delete(INDEX, postingRow(t, id), POSTING_SCORE);
      for (const [column, value] of [
        [EXPORT_TERMS, exportedTerms],
        [EXPORT_DOC, exportedDoc],
        [EXPORT_STALE, staleValue],
      ] as const)
        if (value !== null) tx.delete(EXPORTS, row, column);
      return;
    }
    const members = state.members;
    const memberValues = await tx.getMany(
      DOCS,
      members.flatMap((m) => PER_MEMBER.map((column) => ({ row: m, column }))),
    );
    const due = members.map((_, i) => latencyDue(memberValues, i));
    const recording = members.filter((_, i) => due[i] !== null).map((m) => `latency\u0000${m}`);
    if (recording.length > 0 && !(await gate.enter(tx, recording))) throw staleSnapshot(id);
    // A few engine iterators at a time, however large the cluster.
    const anchorTexts: string[] = [];
    const inlinks: number[] = [];
    for (let i = 0; i < members.length; i += SCANS_AT_ONCE)
      inlinks.push(...(await Promise.all(members.slice(i, i + SCANS_AT_ONCE).map((m) => countAnchors(tx, m, anchorTexts)))));
    let canonical = members[0] as string;
    let canonicalInlinks = -1;
    members.forEach((m, i) => {
      const n = inlinks[i] as number;
      if (n > canonicalInlinks || (n === canonicalInlinks && compareStrings(m, canonical) < 0)) [canonical, canonicalInlinks] = [m, n];
    });
    const [titleValue, textValue] = await tx.getMany(
      PAGES,
      [PARSED_TITLE, PARSED_TEXT].map((column) => ({ row: canonical, column })),
    );
    const title = utf8(titleValue) ?? '';
    const text = utf8(textValue) ?? '';
    const terms = termsOf(title, text, anchorTermCounts(anchorTexts)).map(([t, score]): [string, number] => [t, postingScore(score)]);
    const termsJson = JSON.stringify(terms);
    // The live postings are exactly export:terms (this observer writes both together, and the
    // stale list with them): the same terms need no diff, and most exports (an in-link count
    // changed) keep every term's score bucket.
    if (termsJson !== utf8(termsValue)) {
      const { live, stale } = posted();
      const next = repost(live, stale, terms);
      for (const [t, score] of next.set) tx.set(INDEX, postingRow(t, id), POSTING_SCORE, String(score));
      for (const t of next.del) tx.delete(INDEX, postingRow(t, id), POSTING_SCORE);
      tx.set(EXPORTS, row, EXPORT_TERMS, termsJson);
      const staleJson = JSON.stringify(next.stale);
      if (staleJson !== (utf8(staleValue) ?? '[]')) {
        if (next.stale.length > 0) tx.set(EXPORTS, row, EXPORT_STALE, staleJson);
        else tx.delete(EXPORTS, row, EXPORT_STALE);
      }
    } else if (exportedTerms === null) {
      tx.set(EXPORTS, row, EXPORT_TERMS, termsJson);
    }

    const now = nowMs();
    let canonicalLatency: number | null = null;
    members.forEach((m, i) => {
      const exportedLatency = memberValues[i * PER_MEMBER.length + 4] ?? null;
      let latency: number | null = exportedLatency === null ? null : toInt(exportedLatency);
      const fetchedAt = due[i] ?? null;
      if (fetchedAt !== null) {
        latency = Math.max(0, now - fetchedAt);
        tx.set(DOCS, m, EXPORT_FETCHED_AT, String(fetchedAt));
        tx.set(DOCS, m, EXPORT_LATENCY_MS, String(latency));
        options.metrics?.onIndexed(m, fetchedAt, latency);
      }
      if (m === canonical) canonicalLatency = latency;
    });

    const doc: ServingDoc = {
      url: canonical,
      title,
      snippet: snippetOf(text),
      size: members.length,
      duplicates: members.filter((m) => m !== canonical).slice(0, 5),
      inlinks: canonicalInlinks,
      latencyMs: canonicalLatency,
      indexedAt: now,
    };
    // A cluster rewritten as it was (cluster-observer.ts writes every state it read) exports the
    // same document: written again only for a new indexedAt, such a run would commit for nothing.
    const old = utf8(docValue);
    const oldAt = old === null ? null : (JSON.parse(old) as ServingDoc).indexedAt;
    if (oldAt === null || JSON.stringify({ ...doc, indexedAt: oldAt }) !== old) tx.set(EXPORTS, row, EXPORT_DOC, JSON.stringify(doc));
    else if (exportedDoc === null) tx.set(EXPORTS, row, EXPORT_DOC, old);
  };
}
