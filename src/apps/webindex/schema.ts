/**
 * The web index's tables and columns (docs/webindex.md explains each one). Every observer reads
 * and writes only through transactions, so everything here is snapshot-isolated.
 *
 * Invariants the observers maintain (and test/webindex.test.ts checks against a from-scratch
 * batch computation after every batch of updates):
 * - `pages[u] parsed:*` and `docs[u] parsed:*` are the parse of `pages[u] raw:content` (absent
 *   when the document is gone).
 * - `anchors[t \0 s]` exists iff live document s links to t (one row per inverted link).
 * - Clusters are the connected components of live documents joined by shared clustering keys;
 *   a cluster keeps its id while it lives (a new cluster is named after its smallest key, unless
 *   a cluster holds that id: cluster-ids.ts); its canonical member has the most in-links (ties:
 *   the smallest URL), counted by the export from `anchors`.
 * - The serving index (`index`, `exports[id] export:*`) holds, per cluster, the canonical's title
 *   and text plus the anchor text of every link to any member: links to duplicates count for the
 *   canonical. Its postings are those `export:terms` lists, plus stale ones `export:stale` lists
 *   (repost.ts), which search ignores.
 *
 * Contention rule: no two documents' transactions write a common cell unless they must
 * serialize. Inverted links are one row each, postings one row per (term, cluster); the only
 * shared cells are a cluster's (written by the transactions that re-cluster its members).
 */

export const PAGES = 'pages';
export const DOCS = 'docs';
export const CLUSTERS = 'clusters';
export const CKEYS = 'ckeys';
export const INDEX = 'index';
export const ANCHORS = 'anchors';
export const EXPORTS = 'exports';
export const TABLES = [PAGES, DOCS, ANCHORS, CLUSTERS, CKEYS, INDEX, EXPORTS] as const;

// pages[url] — the bulky values, written once per fetch: the store rewrites a row's cells on
// every mutation of the row, so they are kept apart from the busy `docs` rows.
/** The crawled bytes (observed by `process`). Deleted when a crawl finds the page gone. */
export const RAW_CONTENT = 'raw:content';
/** Wall-clock ms of the loader transaction that wrote this fetch (crawl time). */
export const RAW_FETCHED_AT = 'raw:fetchedAt';
/** `md`, `html` or `text`. */
export const RAW_TYPE = 'raw:type';
export const PARSED_TITLE = 'parsed:title';
/** Whitespace-normalized text (capped, see parse.ts). */
export const PARSED_TEXT = 'parsed:text';

// docs[url] — one row per crawled URL: everything the observers coordinate on.
/**
 * JSON `[[target, anchorText], …]` sorted by target: input of the standalone `linkObserver` only.
 * The pipeline's processor inverts the links it parses directly (link-observer.ts) and no longer
 * writes this column.
 */
export const PARSED_LINKS = 'parsed:links';
/** JSON sorted array of clustering keys, always including `fp:<fingerprint>` (observed by `cluster`). */
export const PARSED_KEYS = 'parsed:keys';
/** `raw:fetchedAt` of the fetch whose content `parsed:keys/title/text` reflect. */
export const PARSED_FETCHED_AT = 'parsed:fetchedAt';
/**
 * JSON `[[target, anchor text], …]`: the links inverted into `anchors` (by `process`; not observed;
 * an object keyed by target before 2026-11-27). Kept in `pages[url]` (only the processor reads it);
 * builds before 2026-11-27's twelfth session kept it in `docs[url]`, where it is still read and from
 * where the processor moves it (link-observer.ts).
 */
export const LINKS_INVERTED = 'links:inverted';
/**
 * Where builds before 2026-11-26 kept `links:inverted`, observed by the relay: every link change
 * then cost a relay run, although a cluster run had almost always relayed it already. The
 * processor still reads it (when `links:inverted` is absent) and deletes it when it next writes
 * the links; the relay still observes it for notifications such a build left behind.
 */
export const LINKS_APPLIED_LEGACY = 'links:applied';
/** JSON array: every target whose anchors changed since they were last relayed, by a cluster run or the relay (not observed). */
export const LINKS_CHANGED = 'links:changed';
/**
 * Weak-notification-only column: `links:changed` awaits the relay (observed by `links.relay`).
 * Notified only by a link change that no cluster run of the document follows (link-observer.ts).
 */
export const LINKS_DIRTY = 'links:dirty';
// In-link counts as builds before the seventeenth session of 2026-11-27 kept them (each
// document's own, by its cluster run after a weak `rank:dirty` from the link relay). The export
// now counts its members' in-links itself; the cluster run deletes these columns where it finds
// them, and still observes `rank:dirty` for notifications such a build left (cluster-observer.ts).
/** Weak-notification-only column: this document's in-links changed (earlier builds; observed by `cluster`). */
export const RANK_DIRTY = 'rank:dirty';
/** A document's in-link count (decimal), as its cluster run counted it (earlier builds). */
export const RANK_INLINKS = 'rank:inlinks';
/** Its anchor texts' token counts, JSON `[[term, count], …]` (earlier builds). */
export const RANK_ANCHORS = 'rank:anchors';
/** The start timestamp of the snapshot that last counted them (earlier builds). */
export const RANK_COUNTED_AT = 'rank:countedAt';
/** JSON clustering keys the `cluster` observer has registered in `ckeys` for this document. */
export const CLUSTER_KEYS = 'cluster:keys';
/** The id of the cluster this document belongs to. */
export const CLUSTER_ID = 'cluster:id';
/** `parsed:fetchedAt` of the version the export has made searchable, and how long that took. */
export const EXPORT_FETCHED_AT = 'export:fetchedAt';
export const EXPORT_LATENCY_MS = 'export:latencyMs';

// anchors[target \0 source] — one row per inverted link, written only by the source's `links` runs.
export const ANCHOR_TEXT = 'a:text';
export const anchorRow = (target: string, source: string): string => `${target}\u0000${source}`;
export const anchorPrefix = (target: string): string => `${target}\u0000`;

// ckeys[key] — who carries a clustering key.
/** JSON sorted array of the URLs registered with this key. */
export const KEY_MEMBERS = 'k:members';
/**
 * ckeys[KEY_MODE_ROW] KEY_MODE: which clustering keys this index's documents carry (a KeyMode),
 * pinned by the first worker that registers (pin-key-mode.ts), so that every worker and loader of
 * the index agrees. No clustering key begins with NUL; nothing scans `ckeys`.
 */
export const KEY_MODE_ROW = '\u0000keyMode';
export const KEY_MODE = 'config:keyMode';

// clusters[id]
/**
 * JSON ClusterState (the members), rewritten by every transaction that changes or re-reads the
 * cluster's membership, and weakly notified by the link relay when a member's in-links change
 * (both observed by `export`).
 */
export const CLUSTER_STATE = 'c:state';

// exports[clusterId] — what the export made of the cluster. Kept out of `clusters` rows for the
// reason `pages` is kept out of `docs`: the store rewrites a row's cells on every mutation of the
// row, and `c:state` is rewritten by ~3 cluster runs a document, the export ~1 (builds before
// e9f979b kept these columns in `clusters[id]`: the export reads them there when `exports[id]`
// has none, moves them, and search falls back to them).
/** JSON `[[term, score], …]` the export last posted. */
export const EXPORT_TERMS = 'export:terms';
/**
 * JSON `[[term, score], …]`, oldest first: postings the export left in `index` for terms no
 * longer in `export:terms` (repost.ts). Absent when there are none (and in builds before the
 * fourteenth session of 2026-11-27, which deleted such postings at once).
 */
export const EXPORT_STALE = 'export:stale';
/** JSON ServingDoc: what search shows for this cluster. */
export const EXPORT_DOC = 'export:doc';

// index[term \0 clusterId] — one posting per row, so no two clusters ever write the same cell. A
// posting counts only while its term is in the cluster's `export:terms` (the rest are stale).
export const POSTING_SCORE = 'p:score';
export const postingRow = (term: string, clusterId: string): string => `${term}\u0000${clusterId}`;

export interface ClusterState {
  readonly size: number;
  /** Member URLs, sorted. */
  readonly members: readonly string[];
}

/**
 * A `c:state` value as JSON: `{"size":…,"members":[url, …]}`, the members in the order given.
 *
 * Membership only: which member is canonical and its in-link count are the export's to decide,
 * from the members' anchors (export-observer.ts). Builds before the sixteenth session of
 * 2026-11-27 also kept every member's count and the canonical here, as `{"canonical":…,"size":…,
 * "members":[[url, in-links], …]}` (and builds before 2026-11-27 the members as an object keyed by
 * URL); `parseClusterState` reads all three. With the counts here, every recount rewrote the
 * state and so ran an export at once; now a link change notifies the export weakly and several
 * link changes of one cluster's members collapse into one export.
 */
export function clusterStateJson(members: readonly string[]): string {
  return `{"size":${members.length},"members":${JSON.stringify(members)}}`;
}

/** A stored `c:state` (null: none), whichever form its members were written in. */
export function parseClusterState(text: string | null): ClusterState | null {
  if (text === null) return null;
  const v = JSON.parse(text) as { size: number; members: readonly (string | readonly [string, number])[] | Record<string, number> };
  if (!Array.isArray(v.members)) return { size: v.size, members: Object.keys(v.members) };
  return { size: v.size, members: v.members.map((m) => (typeof m === 'string' ? m : m[0])) };
}

/** What the serving index shows for one cluster. */
export interface ServingDoc {
  readonly url: string;
  readonly title: string;
  readonly snippet: string;
  /** Members of the cluster (1 = no duplicates). */
  readonly size: number;
  /** A few other members (duplicates), for display. */
  readonly duplicates: readonly string[];
  /** In-links of the canonical member. */
  readonly inlinks: number;
  /** Crawl-to-index latency of the canonical's current version (null if it predates this export). */
  readonly latencyMs: number | null;
  /**
   * Wall-clock ms of the export transaction that made this document what it is: an export that
   * would change nothing else keeps it (and writes nothing), so it dates the last change.
   */
  readonly indexedAt: number;
}

/** Names of the observers (each names its ack column; keep stable across versions). */
export const OBSERVERS = {
  process: 'webindex.process',
  links: 'webindex.links',
  /** The relay on `links:dirty`. */
  linksRelay: 'webindex.links.relay',
  /** The relay on `links:applied` (LINKS_APPLIED_LEGACY): notifications left by earlier builds. */
  linksNotify: 'webindex.links.notify',
  clusterKeys: 'webindex.cluster.keys',
  /** The cluster observer on `rank:dirty` (notifications earlier builds left). */
  clusterRank: 'webindex.cluster.rank',
  export: 'webindex.export',
} as const;
