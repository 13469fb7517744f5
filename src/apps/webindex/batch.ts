/**
 * The batch recomputation: the whole web index computed from scratch from a corpus by plain
 * functions (the MapReduce the paper replaced), and a reader that extracts the same shape from
 * the store. Tests require the incremental result to equal this after every batch of updates.
 *
 * Independence: this file shares only the pure per-document functions (parseDocument,
 * clusterKeys, termsOf, snippetOf) with the observers — none of their diffing, counting,
 * component maintenance or conflict handling. Times (latencies, indexedAt) are not compared.
 */
import type { Snapshot } from '../../txn/transaction.js';
import { type DocType, type KeyMode, clusterKeys, contentText, docTypeOf, parseDocument } from './parse.js';
import {
  ANCHORS,
  ANCHOR_TEXT,
  CLUSTERS,
  CLUSTER_ID,
  CLUSTER_STATE,
  type ClusterState,
  DOCS,
  EXPORT_DOC,
  EXPORT_STALE,
  EXPORT_TERMS,
  EXPORTS,
  INDEX,
  PARSED_KEYS,
  POSTING_SCORE,
  type ServingDoc,
  parseClusterState,
} from './schema.js';
import { PostingDigest } from './posting-digest.js';
import { anchorTermCounts, postingScore, snippetOf, termsOf } from './terms.js';
import { compareStrings } from './util.js';

/** The comparable state of a web index (plain, sorted-key objects). */
export interface IndexState {
  /** Live documents' clustering keys. */
  readonly keys: Record<string, string[]>;
  /** target → source → anchor text. */
  readonly anchors: Record<string, Record<string, string>>;
  /** Live document → its cluster id. */
  readonly docClusters: Record<string, string>;
  /** Cluster id → its members, sorted (which is canonical, and its in-links, are in `results`). */
  readonly clusters: Record<string, { size: number; members: string[] }>;
  /** `term \u0000 clusterId` → score. */
  readonly postings: Record<string, number>;
  readonly results: Record<string, Omit<ServingDoc, 'latencyMs' | 'indexedAt'>>;
}

/** The parts of an IndexState, in the order comparisons report them. */
export const INDEX_FIELDS = ['keys', 'anchors', 'clusters', 'docClusters', 'results', 'postings'] as const;

/**
 * The keys whose entries differ between two parts of index states (JSON-equal entries are equal):
 * those of `got` first, then those only `want` has. No copy of either's keys is made: a soak's
 * index has a million postings.
 */
export function differingKeys(got: Record<string, unknown>, want: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const k in got) if (!Object.hasOwn(want, k) || JSON.stringify(got[k]) !== JSON.stringify(want[k])) out.push(k);
  for (const k in want) if (!Object.hasOwn(got, k)) out.push(k);
  return out;
}

export interface CorpusDoc {
  readonly url: string;
  readonly content: string | Uint8Array;
  readonly type?: DocType;
}

function sortObject<T>(entries: Iterable<[string, T]>): Record<string, T> {
  return Object.fromEntries([...entries].sort((a, b) => compareStrings(a[0], b[0])));
}

/**
 * An IndexState as a soak compares it (a million postings at 20 000 documents): each entry as its
 * JSON, and each cluster's postings as one digest (PostingDigest) instead of an entry each: the
 * batch's side held 46 MiB at 20 000 documents instead of 107, and no entry is a slice of a
 * document's text (V8 keeps a whole string alive for any slice of it: 62 of those 107). Postings
 * that break repost.ts's invariants change a digest or add a marked key, as in IndexState.
 */
export type IndexSummary = { readonly [F in (typeof INDEX_FIELDS)[number]]: Record<string, string> };

function summarize(parts: Omit<IndexState, 'postings'>, postings: Record<string, string>): IndexSummary {
  const json = (part: Record<string, unknown>) => {
    const out: Record<string, string> = {};
    for (const k in part) out[k] = JSON.stringify(part[k]);
    return out;
  };
  return {
    keys: json(parts.keys),
    anchors: json(parts.anchors),
    clusters: json(parts.clusters),
    docClusters: json(parts.docClusters),
    results: json(parts.results),
    postings,
  };
}

/** The web index of `docs` (the live documents), from scratch. */
export function batchIndex(docs: Iterable<CorpusDoc>, keyMode: KeyMode): IndexState {
  const postings: [string, number][] = [];
  const rest = batchParts(docs, keyMode, (id, terms) => {
    for (const [term, score] of terms) postings.push([`${term}\u0000${id}`, score]);
  });
  return { ...rest, postings: sortObject(postings) };
}

/** batchIndex's result as an IndexSummary, without ever holding the postings. */
export function batchIndexSummary(docs: Iterable<CorpusDoc>, keyMode: KeyMode): IndexSummary {
  const postings: [string, string][] = [];
  const rest = batchParts(docs, keyMode, (id, terms) => {
    const d = new PostingDigest();
    for (const [term, score] of terms) d.add(term, score);
    if (d.size > 0) postings.push([id, d.toString()]);
  });
  return summarize(rest, sortObject(postings));
}

/** Everything of the batch index but the postings, which go to `onPostings` a cluster at a time. */
function batchParts(
  docs: Iterable<CorpusDoc>,
  keyMode: KeyMode,
  onPostings: (id: string, terms: Iterable<[string, number]>) => void,
): Omit<IndexState, 'postings'> {
  const parsed = new Map<string, ReturnType<typeof parseDocument>>();
  const keysOf = new Map<string, string[]>();
  for (const d of docs) {
    const p = parseDocument(d.url, d.type ?? docTypeOf(d.url), contentText(d.content));
    parsed.set(d.url, p);
    keysOf.set(d.url, clusterKeys(d.url, p, keyMode));
  }
  // Link inversion: every live document's links, keyed by target.
  const anchors = new Map<string, Map<string, string>>();
  for (const [source, p] of parsed) {
    for (const [target, anchor] of p.links) {
      let m = anchors.get(target);
      if (m === undefined) anchors.set(target, (m = new Map()));
      m.set(source, anchor);
    }
  }
  const rank = (u: string) => anchors.get(u)?.size ?? 0;
  // Clusters: connected components of documents sharing a key (union-find).
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    while (parent.get(x) !== x) x = parent.get(x) as string;
    return x;
  };
  const firstWithKey = new Map<string, string>();
  for (const u of parsed.keys()) parent.set(u, u);
  for (const [u, keys] of keysOf) {
    for (const k of keys) {
      const other = firstWithKey.get(k);
      if (other === undefined) firstWithKey.set(k, u);
      else parent.set(find(u), find(other));
    }
  }
  const groups = new Map<string, string[]>();
  for (const u of parsed.keys()) {
    const r = find(u);
    groups.set(r, [...(groups.get(r) ?? []), u]);
  }
  const clusters: IndexState['clusters'] = {};
  const docClusters: [string, string][] = [];
  const results: IndexState['results'] = {};
  for (const members of groups.values()) {
    members.sort(compareStrings);
    const id = members.flatMap((m) => keysOf.get(m) as string[]).sort(compareStrings)[0] as string;
    const canonical = [...members].sort((a, b) => rank(b) - rank(a) || compareStrings(a, b))[0] as string;
    clusters[id] = { size: members.length, members };
    for (const m of members) docClusters.push([m, id]);
    const c = parsed.get(canonical) as ReturnType<typeof parseDocument>;
    const texts = members.flatMap((m) => [...(anchors.get(m)?.values() ?? [])]).filter((a) => a !== '');
    onPostings(
      id,
      termsOf(c.title, c.text, anchorTermCounts(texts)).map(([term, score]) => [term, postingScore(score)]),
    );
    results[id] = {
      url: canonical,
      title: c.title,
      snippet: snippetOf(c.text),
      size: members.length,
      duplicates: members.filter((m) => m !== canonical).slice(0, 5),
      inlinks: rank(canonical),
    };
  }
  return {
    keys: sortObject(keysOf),
    anchors: sortObject([...anchors].map(([t, m]) => [t, sortObject(m)])),
    docClusters: sortObject(docClusters),
    clusters: sortObject(Object.entries(clusters)),
    results: sortObject(Object.entries(results)),
  };
}

const text = (v: Uint8Array) => Buffer.from(v).toString('utf8');

/**
 * Reads the web index's state from the store at a snapshot, in the shape batchIndex returns, with
 * the store's cluster ids replaced by the names batchIndex gives (batchNames below).
 */
export async function readIndexState(snap: Snapshot): Promise<IndexState> {
  return await readIndex(snap, new PostingEntries());
}

/** readIndexState's result as an IndexSummary: the postings are scanned, never held. */
export async function readIndexSummary(snap: Snapshot): Promise<IndexSummary> {
  const { postings, ...rest } = await readIndex(snap, new PostingDigests());
  return summarize(rest, postings);
}

/**
 * How a reader of the store's index gathers postings: each cluster's listed terms (live: posted and
 * searched; stale: posted and ignored by search, repost.ts), then every posting, then the result
 * under batch names. Whatever breaks repost.ts's invariants must make the result differ from any
 * batch's.
 */
interface PostingsGatherer<V> {
  list(id: string, kind: 'live' | 'stale', terms: [string, number][]): void;
  posting(term: string, id: string, score: number): void;
  result(name: (id: string) => string): Record<string, V>;
}

/** The postings entry by entry, as batchIndex gives them, under marked keys what is amiss. */
class PostingEntries implements PostingsGatherer<number> {
  private readonly lists = { live: new Map<string, Map<string, number>>(), stale: new Map<string, Map<string, number>>() };
  private readonly postings: [string, number][] = [];
  private readonly seen = new Set<string>();

  list(id: string, kind: 'live' | 'stale', terms: [string, number][]): void {
    this.lists[kind].set(id, new Map(terms));
  }

  posting(term: string, id: string, score: number): void {
    const key = `${term}\u0000${id}`;
    this.seen.add(key);
    if (this.lists.live.get(id)?.get(term) === score) this.postings.push([key, score]);
    else if (this.lists.stale.get(id)?.get(term) !== score) this.postings.push([`unlisted posting ${key}`, score]);
  }

  result(name: (id: string) => string): Record<string, number> {
    const { live, stale } = this.lists;
    for (const [kind, lists] of [
      ['live', live],
      ['stale', stale],
    ] as const)
      for (const [id, terms] of lists)
        for (const [term, score] of terms) {
          const key = `${term}\u0000${id}`;
          if (!this.seen.has(key)) this.postings.push([`${kind} term without posting ${key}`, score]);
          if (kind === 'stale' && live.get(id)?.has(term) === true) this.postings.push([`live and stale ${key}`, score]);
        }
    const renamed = (key: string) => {
      const cut = key.indexOf('\u0000');
      return `${key.slice(0, cut)}\u0000${name(key.slice(cut + 1))}`;
    };
    return sortObject(this.postings.map(([key, score]) => [renamed(key), score]));
  }
}

/**
 * Each cluster's live list as a digest, once the digest of its postings is that of its live and
 * stale lists together — which holds iff the invariants PostingEntries checks one by one do (a
 * row key holds one posting of a term, so the lists' terms are disjoint and each is posted at its
 * listed score) and, stricter than it, no list names a term twice; otherwise a marked key.
 */
class PostingDigests implements PostingsGatherer<string> {
  private readonly lists = { live: new Map<string, PostingDigest>(), stale: new Map<string, PostingDigest>() };
  private readonly posted = new Map<string, PostingDigest>();

  list(id: string, kind: 'live' | 'stale', terms: [string, number][]): void {
    const d = new PostingDigest();
    for (const [term, score] of terms) d.add(term, score);
    this.lists[kind].set(id, d);
  }

  posting(term: string, id: string, score: number): void {
    let d = this.posted.get(id);
    if (d === undefined) this.posted.set(id, (d = new PostingDigest()));
    d.add(term, score);
  }

  result(name: (id: string) => string): Record<string, string> {
    const { live, stale } = this.lists;
    const none = new PostingDigest();
    const out: [string, string][] = [];
    for (const id of new Set([...live.keys(), ...stale.keys(), ...this.posted.keys()])) {
      const listed = (live.get(id) ?? none).plus(stale.get(id) ?? none).toString();
      const posted = (this.posted.get(id) ?? none).toString();
      if (posted !== listed) out.push([`cluster ${id}: posted ${posted}, listed ${listed}`, posted]);
      const d = live.get(id);
      if (d !== undefined && d.size > 0) out.push([name(id), d.toString()]);
    }
    return sortObject(out);
  }
}

async function readIndex<V>(
  snap: Snapshot,
  gatherer: PostingsGatherer<V>,
): Promise<Omit<IndexState, 'postings'> & { postings: Record<string, V> }> {
  const keys: [string, string[]][] = [];
  const docClusters: [string, string][] = [];
  for await (const r of snap.scan(DOCS, {}, { columns: [PARSED_KEYS, CLUSTER_ID] })) {
    const url = text(r.row);
    for (const [column, value] of r.columns) {
      if (column === PARSED_KEYS) keys.push([url, JSON.parse(text(value)) as string[]]);
      else if (column === CLUSTER_ID) docClusters.push([url, text(value)]);
    }
  }
  const anchors = new Map<string, [string, string][]>();
  for await (const r of snap.scan(ANCHORS, {}, { columns: [ANCHOR_TEXT] })) {
    const key = text(r.row);
    const cut = key.indexOf('\u0000');
    const target = key.slice(0, cut);
    let list = anchors.get(target);
    if (list === undefined) anchors.set(target, (list = []));
    list.push([key.slice(cut + 1), text(r.columns.get(ANCHOR_TEXT) as Uint8Array)]);
  }
  const clusters: [string, IndexState['clusters'][string]][] = [];
  const results: [string, IndexState['results'][string]][] = [];
  // Results of a store from before `exports` (schema.ts) may still sit in `clusters`, and the live
  // lists too (a later one in `exports` replaces it).
  const legacyDocs = new Map<string, Uint8Array>();
  const list = (v: Uint8Array) => JSON.parse(text(v)) as [string, number][];
  for await (const r of snap.scan(CLUSTERS, {}, { columns: [CLUSTER_STATE, EXPORT_DOC, EXPORT_TERMS] })) {
    const id = text(r.row);
    const state = r.columns.get(CLUSTER_STATE);
    if (state !== undefined) {
      const s = parseClusterState(text(state)) as ClusterState;
      clusters.push([id, { size: s.size, members: [...s.members] }]);
    }
    const doc = r.columns.get(EXPORT_DOC);
    if (doc !== undefined) legacyDocs.set(id, doc);
    const terms = r.columns.get(EXPORT_TERMS);
    if (terms !== undefined) gatherer.list(id, 'live', list(terms));
  }
  const addResult = (id: string, doc: Uint8Array) => {
    const { latencyMs: _l, indexedAt: _i, ...rest } = JSON.parse(text(doc)) as ServingDoc;
    results.push([id, rest]);
  };
  for await (const r of snap.scan(EXPORTS, {}, { columns: [EXPORT_DOC, EXPORT_TERMS, EXPORT_STALE] })) {
    const id = text(r.row);
    legacyDocs.delete(id);
    const doc = r.columns.get(EXPORT_DOC);
    if (doc !== undefined) addResult(id, doc);
    const terms = r.columns.get(EXPORT_TERMS);
    if (terms !== undefined) gatherer.list(id, 'live', list(terms));
    const kept = r.columns.get(EXPORT_STALE);
    if (kept !== undefined) gatherer.list(id, 'stale', list(kept));
  }
  for (const [id, doc] of legacyDocs) addResult(id, doc);
  for await (const r of snap.scan(INDEX, {}, { columns: [POSTING_SCORE] })) {
    const v = r.columns.get(POSTING_SCORE);
    if (v === undefined) continue;
    const key = text(r.row);
    const cut = key.indexOf('\u0000'); // terms are words; a cluster id is a key and may hold anything
    gatherer.posting(key.slice(0, cut), key.slice(cut + 1), Number(text(v)));
  }
  const name = batchNames(new Map(keys), clusters);
  return {
    keys: sortObject(keys),
    anchors: sortObject([...anchors].map(([t, list]) => [t, sortObject(list)])),
    docClusters: sortObject(docClusters.map(([url, id]) => [url, name(id)])),
    clusters: sortObject(clusters.map(([id, c]) => [name(id), c])),
    postings: gatherer.result(name),
    results: sortObject(results.map(([id, doc]) => [name(id), doc])),
  };
}

/**
 * The name the batch computation gives each cluster the store holds: its members' smallest key.
 * The observers keep a cluster's id while it changes (cluster-ids.ts), so the store's ids depend
 * on history; compared under these names, two indexes agree iff they cluster the same documents
 * together and index each cluster alike. A cluster whose name another already took (which right
 * clustering never produces: components have disjoint keys) or that has no keyed member keeps a
 * marked name, so the comparison fails; an id no live cluster has (a dangling `cluster:id`, a
 * posting of a vanished cluster) stays as it is.
 */
function batchNames(keys: ReadonlyMap<string, readonly string[]>, clusters: readonly [string, { members: string[] }][]) {
  const names = new Map<string, string>();
  const taken = new Set<string>();
  for (const [id, c] of clusters) {
    let key: string | null = null;
    for (const m of c.members) for (const k of keys.get(m) ?? []) if (key === null || compareStrings(k, key) < 0) key = k;
    const name = key === null ? `cluster ${id} without keys` : taken.has(key) ? `cluster ${id} named ${key} again` : key;
    taken.add(name);
    names.set(id, name);
  }
  return (id: string): string => names.get(id) ?? id;
}
