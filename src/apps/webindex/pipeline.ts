/**
 * Wiring of the web index: its tables, and its observers on a worker. Observers are registered per
 * table (not for every table), so scanners only walk `pages`, `docs` and `clusters`.
 *
 * Contract (the observed-columns registry): call `registerWebIndex(worker)` and `worker.start()`
 * before loading documents, or the loads will not notify the observers.
 *
 * The chain for one new document: loader → process (parse and link inversion) → cluster → export,
 * and that cluster run, relaying the links, ⇢ export (of the cluster of each linked document).
 * Solid arrows are strong notifications written at the writer's commit timestamp, so each run
 * starts after the data it reacts to is committed; the weak arrow (⇢) lets many links to one
 * cluster's members collapse into one export. A link change without a change of keys (no cluster
 * run follows) ⇢ links.relay instead, which relays it.
 */
import type { Worker } from '../../notify/worker.js';
import type { Percolator } from '../../txn/percolator.js';
import { clusterObserver } from './cluster-observer.js';
import { exportObserver } from './export-observer.js';
import { linkNotifyObserver } from './link-notify-observer.js';
import type { WebIndexMetrics } from './metrics.js';
import type { KeyMode } from './parse.js';
import { processObserver } from './process-observer.js';
import {
  CLUSTERS,
  CLUSTER_STATE,
  DOCS,
  LINKS_APPLIED_LEGACY,
  LINKS_DIRTY,
  OBSERVERS,
  PAGES,
  PARSED_KEYS,
  RANK_DIRTY,
  RAW_CONTENT,
  TABLES,
} from './schema.js';

/**
 * Where the pipeline may stop (`WebIndexOptions.until`): after the processor (documents parsed,
 * links inverted), after clustering (with the link relay), or nowhere (`export`, the whole
 * pipeline). A pipeline cut short leaves its later observers' notifications unregistered, so
 * nothing downstream runs: how `bench webindex --stages` measures what each stage costs.
 */
export const WEB_INDEX_STAGES = ['process', 'cluster', 'export'] as const;
export type WebIndexStage = (typeof WEB_INDEX_STAGES)[number];

export interface WebIndexOptions {
  /** The last stage to run (WEB_INDEX_STAGES; default `export`, everything). */
  readonly until?: WebIndexStage;
  /** Clustering keys: `content` (fingerprint only, default) or `content+url+title` (the paper's three). */
  readonly keyMode?: KeyMode;
  readonly metrics?: WebIndexMetrics;
  /** Wall clock (ms) for latency, injectable for tests. */
  readonly nowMs?: () => number;
}

/**
 * Worker options the web index runs with (`runWebIndex`: the demo and the benchmarks), besides
 * its thread count. Its weak notifications are the exports a link change asks for (`c:state`,
 * from the link relay): under a backlog they wait 5 minutes behind other work instead of the
 * worker's default 10 s, so that the links to one cluster's members arriving meanwhile collapse
 * into one export; with the worker nearly idle they still run at once. (The worker locks a waiting
 * row for three times its wait: such rows a crashed process held wait that long for other
 * processes' scanners; the strong rows only the default TTL.) docs/webindex.md › *Link changes
 * wait* says what it bought and what it costs.
 */
const LINK_WAIT_MS = 300_000;
export const WEB_INDEX_WORKER = { weakDelayMs: LINK_WAIT_MS } as const;

/**
 * Under load, a cluster's export waits this long after a membership change (the worker's brief
 * wait, `collapseMs`), so that the documents joining it meanwhile collapse into one export: a
 * cluster's documents tend to arrive together (a site's mirrors and copies are crawled together;
 * the synthetic corpus lists them one after another). With the worker's event loop not busy it
 * runs at once. 100 ms already collapses a saturated load to one export a cluster (250 did no
 * better): docs/observers.md › Brief waits.
 */
export const EXPORT_COLLAPSE_MS = 100;

export async function createWebIndexTables(db: Percolator): Promise<void> {
  for (const t of TABLES) await db.createTable(t);
}

/** Registers the observers of the pipeline on `worker` (call before `worker.start()`). */
export function registerWebIndex(worker: Worker, options: WebIndexOptions = {}): Worker {
  const until = options.until ?? 'export';
  if (!WEB_INDEX_STAGES.includes(until)) {
    throw Object.assign(new Error(`until must be one of ${WEB_INDEX_STAGES.join(', ')}, not ${JSON.stringify(until)}`), {
      code: 'INVALID_ARGUMENT',
    });
  }
  worker.observe(RAW_CONTENT, OBSERVERS.process, processObserver({ keyMode: options.keyMode ?? 'content', metrics: options.metrics }), {
    table: PAGES,
  });
  if (until === 'process') return worker;
  const cluster = clusterObserver();
  // Cluster before the relay: a row notified for both (two parses, one with new keys) runs the
  // cluster observer first, which does the relay's work in its own transaction; the relay then
  // finds nothing left and commits nothing.
  worker.observe(PARSED_KEYS, OBSERVERS.clusterKeys, cluster, { table: DOCS });
  // Recount requests builds before the seventeenth session of 2026-11-27 left (cluster-observer.ts).
  worker.observe(RANK_DIRTY, OBSERVERS.clusterRank, cluster, { table: DOCS });
  const relay = linkNotifyObserver();
  worker.observe(LINKS_DIRTY, OBSERVERS.linksRelay, relay, { table: DOCS });
  worker.observe(LINKS_APPLIED_LEGACY, OBSERVERS.linksNotify, relay, { table: DOCS });
  if (until === 'cluster') return worker;
  worker.observe(CLUSTER_STATE, OBSERVERS.export, exportObserver({ metrics: options.metrics, nowMs: options.nowMs }), {
    table: CLUSTERS,
    collapseMs: EXPORT_COLLAPSE_MS,
  });
  return worker;
}
