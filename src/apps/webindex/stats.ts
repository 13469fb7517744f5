/**
 * The web index's summary, read back from the store at one snapshot (authoritative, unlike the
 * in-process metrics): documents, clusters, duplicates, inverted links and the distribution of
 * crawl-to-index latency over documents whose current version is searchable.
 */
import type { Snapshot } from '../../txn/transaction.js';
import { percentile } from './metrics.js';
import {
  ANCHORS,
  ANCHOR_TEXT,
  CLUSTERS,
  CLUSTER_STATE,
  DOCS,
  EXPORT_FETCHED_AT,
  EXPORT_LATENCY_MS,
  EXPORT_STALE,
  EXPORTS,
  INDEX,
  PARSED_FETCHED_AT,
  PARSED_KEYS,
  POSTING_SCORE,
} from './schema.js';

export interface IndexStats {
  /** Live (crawled, not deleted) documents. */
  readonly documents: number;
  readonly clusters: number;
  /** Documents that are not their cluster's canonical: documents − clusters. */
  readonly duplicatesFound: number;
  /** Clusters of more than one document. */
  readonly duplicateClusters: number;
  /** Links (source, target) attached to their targets. */
  readonly linksInverted: number;
  /** Of those, links whose target is a live document. */
  readonly linksBetweenDocuments: number;
  /** Documents whose current version is searchable. */
  readonly indexedDocuments: number;
  /** Postings search counts (terms in their cluster's `export:terms`). */
  readonly postings: number;
  /** Postings kept for terms their cluster no longer has (`export:stale`, repost.ts). */
  readonly stalePostings: number;
  readonly medianLatencyMs: number;
  readonly p99LatencyMs: number;
  readonly maxLatencyMs: number;
}

const text = (v: Uint8Array | undefined) => (v === undefined ? null : Buffer.from(v).toString('utf8'));

export async function readStats(snap: Snapshot, options: { countPostings?: boolean } = {}): Promise<IndexStats> {
  let documents = 0;
  let linksInverted = 0;
  let linksBetweenDocuments = 0;
  const latencies: number[] = [];
  const live = new Set<string>();
  for await (const r of snap.scan(DOCS, {}, { columns: [PARSED_KEYS, PARSED_FETCHED_AT, EXPORT_FETCHED_AT, EXPORT_LATENCY_MS] })) {
    if (!r.columns.has(PARSED_KEYS)) continue;
    documents++;
    live.add(Buffer.from(r.row).toString('latin1'));
    const exported = text(r.columns.get(EXPORT_FETCHED_AT));
    if (exported !== null && exported === text(r.columns.get(PARSED_FETCHED_AT)))
      latencies.push(Number(text(r.columns.get(EXPORT_LATENCY_MS)) ?? 0));
  }
  for await (const r of snap.scan(ANCHORS, {}, { columns: [ANCHOR_TEXT] })) {
    linksInverted++;
    // The row is target \0 source (UTF-8): the target's bytes up to the first 0 byte.
    const cut = r.row.indexOf(0);
    if (live.has(Buffer.from(r.row.subarray(0, cut)).toString('latin1'))) linksBetweenDocuments++;
  }
  let clusters = 0;
  let duplicateClusters = 0;
  for await (const r of snap.scan(CLUSTERS, {}, { columns: [CLUSTER_STATE] })) {
    const s = text(r.columns.get(CLUSTER_STATE));
    if (s === null) continue;
    clusters++;
    if ((JSON.parse(s) as { size: number }).size > 1) duplicateClusters++;
  }
  let postings = 0;
  let stalePostings = 0;
  if (options.countPostings !== false) {
    for await (const _ of snap.scan(INDEX, {}, { columns: [POSTING_SCORE] })) postings++;
    for await (const r of snap.scan(EXPORTS, {}, { columns: [EXPORT_STALE] }))
      stalePostings += (JSON.parse(text(r.columns.get(EXPORT_STALE)) ?? '[]') as unknown[]).length;
    postings -= stalePostings;
  }
  latencies.sort((a, b) => a - b);
  return {
    documents,
    clusters,
    duplicatesFound: documents - clusters,
    duplicateClusters,
    linksInverted,
    linksBetweenDocuments,
    indexedDocuments: latencies.length,
    postings,
    stalePostings,
    medianLatencyMs: Math.round(percentile(latencies, 0.5)),
    p99LatencyMs: Math.round(percentile(latencies, 0.99)),
    maxLatencyMs: Math.round(latencies[latencies.length - 1] ?? 0),
  };
}
