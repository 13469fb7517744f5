/**
 * Duplicate clustering (observes `docs parsed:keys` and `rank:dirty`): the paper's
 * Figure 2, generalized from one key to several. Documents sharing any clustering key form one
 * cluster (a connected component); the cluster's id is its smallest key and its canonical
 * member the one with the most in-links (ties: the smallest URL).
 *
 * One run recomputes, from the current snapshot, every component that the document's change can
 * touch: the document's old cluster (a removal may split it) and everything reachable from its
 * keys (an addition may merge clusters). Components are small (a few documents), so recomputing
 * them is cheaper and far simpler than patching them. Every read is a point read of a JSON cell
 * (key members, cluster state): single-row scans cost an engine iterator each.
 *
 * Invariants:
 * - `ckeys[k] k:members` lists u iff `docs[u] cluster:keys` contains k; only u's own run writes
 *   either for u.
 * - `clusters[id] c:state` lists exactly the documents whose `docs[m] cluster:id` is id.
 * - Serializability without a global lock: a run writes `c:state` (set or delete) of every
 *   cluster it read, and `k:members` of every key whose membership it changes. Two runs that
 *   read a common key with members read those members' common cluster, so they conflict on its
 *   `c:state`; two runs that add one key that had no members conflict on its `k:members`. Either
 *   way one retries on a fresher snapshot. (Without the second, two documents adding the same
 *   new key concurrently would each see only themselves and form two clusters: write skew.)
 * - `c:state` is rewritten by every run that may have changed what the cluster exports, even
 *   when equal: it is what notifies the export.
 * - A run counts its own document's in-links (anchor rows) when they may have changed (it was
 *   notified of a link change, or it is joining) and caches the count and the anchor texts'
 *   token counts in `docs[u] rank:inlinks` / `rank:anchors`; other members' counts are read from
 *   their caches. A stale cache is always followed by that member's own run (the link relay
 *   notified it), which rewrites the component, so the final state uses exact counts. Links the
 *   relay skipped because the document was not parsed yet are counted by the join
 *   (link-notify-observer.ts).
 * - A relayed change that alters neither the count nor the anchor texts writes nothing.
 * - A relayed change that alters the count of a document whose keys did not change cannot change
 *   any component: it rewrites its cluster's `c:state` in place (the member's count, and the
 *   canonical), without the component search. `c:state`'s member counts always equal the members'
 *   `rank:inlinks` caches: a member's cache is only written by its own run, together with its
 *   cluster's state.
 * - A run that finds `links:changed` on its document does the link relay's work in its own
 *   transaction (its snapshot follows the processor's commit that wrote it). A processor commit
 *   that writes `parsed:keys` relies on it: it does not notify the relay (link-observer.ts). So
 *   every run that returns has relayed first (one the gate sends back relays on its retry).
 * - Runs of one process that share a key, the old cluster or any cluster they write are serialized
 *   by an in-process gate (gate.ts) instead of conflicting at commit; consecutive duplicates are
 *   the common case.
 */
import type { Transaction } from '../../txn/transaction.js';
import {
  ANCHORS,
  ANCHOR_TEXT,
  CKEYS,
  CLUSTERS,
  CLUSTER_ID,
  CLUSTER_KEYS,
  CLUSTER_STATE,
  type ClusterState,
  clusterStateJson,
  parseClusterState,
  DOCS,
  KEY_MEMBERS,
  LINKS_CHANGED,
  PARSED_KEYS,
  RANK_ANCHORS,
  RANK_COUNTED_AT,
  RANK_INLINKS,
  anchorPrefix,
} from './schema.js';
import { TxnError } from '../../txn/errors.js';
import { KeyGate } from './gate.js';
import { anchorTermCounts } from './terms.js';
import { relayLinks } from './link-notify-observer.js';
import { compareStrings, parseJson, toInt, utf8 } from './util.js';

interface DocInfo {
  readonly keys: readonly string[];
  readonly id: string | null;
  readonly rank: number;
}

/** The in-links of `target`: how many, and their anchor texts' token counts (JSON, `rank:anchors`). */
async function countAnchors(tx: Transaction, target: string): Promise<{ count: number; anchorTerms: string }> {
  let count = 0;
  const texts: string[] = [];
  for await (const r of tx.scan(ANCHORS, { prefix: anchorPrefix(target) }, { columns: [ANCHOR_TEXT] })) {
    count++;
    const v = r.columns.get(ANCHOR_TEXT);
    if (v !== undefined && v.byteLength > 0) texts.push(utf8(v) as string);
  }
  return { count, anchorTerms: JSON.stringify(anchorTermCounts(texts)) };
}

/** The canonical of a cluster: most in-links, ties broken by the smallest URL. */
function canonicalOf(members: ClusterState['members']): string {
  let canonical: string | null = null;
  let best = -1;
  for (const [m, rank] of members) {
    if (canonical === null || rank > best || (rank === best && compareStrings(m, canonical) < 0)) {
      canonical = m;
      best = rank;
    }
  }
  return canonical as string;
}

/**
 * The gate's "retry with a fresh snapshot" (`details.retryNow`, run-observer.ts): control flow the
 * runner catches, for about a quarter of cluster runs, so made without a stack trace — capturing
 * one here cost more CPU than a conflicting prewrite's (0.7 % of the web index's JS thread).
 */
function staleSnapshot(row: string): TxnError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new TxnError('WRITE_CONFLICT', 'a run of this process committed one of our keys after our snapshot: retry with a fresh one', {
      row,
      retryNow: true,
    });
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export function clusterObserver() {
  const gate = new KeyGate();
  return async (tx: Transaction, row: Uint8Array, column: string): Promise<void> => {
    const self = utf8(row) as string;
    const [keysValue, appliedValue, idValue, rankValue, anchorsValue, linksChanged, countedAtValue] = await tx.getMany(
      DOCS,
      [PARSED_KEYS, CLUSTER_KEYS, CLUSTER_ID, RANK_INLINKS, RANK_ANCHORS, LINKS_CHANGED, RANK_COUNTED_AT].map((c) => ({ row, column: c })),
    );
    // Recorded with every count this run commits (RANK_COUNTED_AT: the relay skips what it saw).
    const countedNow = () => tx.set(DOCS, row, RANK_COUNTED_AT, String(tx.startTs));
    const newKeys = parseJson<string[]>(keysValue, []);
    const oldKeys = parseJson<string[]>(appliedValue, []);
    const oldId = utf8(idValue);
    const cachedRank = toInt(rankValue);
    if (newKeys.length === 0 && oldKeys.length === 0 && oldId === null) {
      // The link relay's work, when the processor left some (see link-notify-observer.ts).
      if (linksChanged !== null) await relayLinks(tx, row);
      if (rankValue !== null) tx.delete(DOCS, row, RANK_INLINKS);
      if (anchorsValue !== null) tx.delete(DOCS, row, RANK_ANCHORS);
      if (countedAtValue !== null) tx.delete(DOCS, row, RANK_COUNTED_AT);
      return;
    }
    const sameKeys = newKeys.length === oldKeys.length && newKeys.every((k, i) => k === oldKeys[i]);
    const gateKeys = [...newKeys, ...oldKeys];
    if (oldId !== null) gateKeys.push(`id\u0000${oldId}`);
    if (!(await gate.enter(tx, gateKeys))) throw staleSnapshot(self);
    // The link relay's work, when the processor left some (see link-notify-observer.ts). After
    // the gate: a run told to retry (43 % of cluster runs at 4 000 documents) would otherwise
    // read every relayed target's row again.
    if (linksChanged !== null) await relayLinks(tx, row);
    // Count only when the in-links may have changed: a link change was relayed, or joining.
    const counted = newKeys.length > 0 && (column !== PARSED_KEYS || oldId === null) ? await countAnchors(tx, self) : null;
    const rank = counted?.count ?? (newKeys.length > 0 ? cachedRank : 0);
    const anchorsChanged = counted !== null && counted.anchorTerms !== (utf8(anchorsValue) ?? '[]');
    if (column !== PARSED_KEYS && oldId !== null && sameKeys && rank === cachedRank) {
      // Fast path: no cluster changed. New anchor texts only need the cache updated and the
      // export run again (rewriting c:state as read also conflicts with any concurrent
      // re-clustering, as a full run would). A relayed change that changed nothing is done.
      if (!anchorsChanged) return;
      tx.set(DOCS, row, RANK_ANCHORS, counted?.anchorTerms as string);
      countedNow();
      const state = await tx.get(CLUSTERS, oldId, CLUSTER_STATE);
      if (state !== null) tx.set(CLUSTERS, oldId, CLUSTER_STATE, state);
      return;
    }
    if (column !== PARSED_KEYS && oldId !== null && sameKeys && newKeys.length > 0) {
      // Only the count changed: no component can change. Rewrite the member's count (and the
      // canonical) in its cluster's state, when the state lists it (else: the full path).
      const state = parseClusterState(utf8(await tx.get(CLUSTERS, oldId, CLUSTER_STATE)));
      if (state !== null && state.members.some(([m]) => m === self)) {
        const members = state.members.map(([m, r]): [string, number] => [m, m === self ? rank : r]);
        const counts = new Map(members);
        tx.set(
          CLUSTERS,
          oldId,
          CLUSTER_STATE,
          clusterStateJson(canonicalOf(members), state.size, [...counts.keys()], (m) => counts.get(m) as number),
        );
        if (rank > 0) tx.set(DOCS, self, RANK_INLINKS, String(rank));
        else tx.delete(DOCS, self, RANK_INLINKS);
        if (counted !== null && anchorsChanged) tx.set(DOCS, self, RANK_ANCHORS, counted.anchorTerms);
        if (counted !== null) countedNow();
        return;
      }
    }

    // The component search, over the snapshot plus this document's own change.
    const info = new Map<string, DocInfo>([[self, { keys: newKeys, id: oldId, rank }]]);
    const keyMembers = new Map<string, Set<string>>();
    const clusterStates = new Map<string, ClusterState>();
    const seen = new Set<string>([self]);
    const visit = (members: Iterable<string>, next: string[]) => {
      for (const m of members) {
        if (seen.has(m)) continue;
        seen.add(m);
        next.push(m);
      }
    };
    const loadKeys = async (keys: readonly string[], next: string[]) => {
      const values = await tx.getMany(
        CKEYS,
        keys.map((k) => ({ row: k, column: KEY_MEMBERS })),
      );
      keys.forEach((k, i) => {
        const members = new Set(parseJson<string[]>(values[i], []));
        if (newKeys.includes(k)) members.add(self);
        else members.delete(self);
        keyMembers.set(k, members);
        visit(members, next);
      });
    };
    const loadClusters = async (ids: readonly string[], next: string[]) => {
      const values = await tx.getMany(
        CLUSTERS,
        ids.map((id) => ({ row: id, column: CLUSTER_STATE })),
      );
      ids.forEach((id, i) => {
        const state = parseClusterState(utf8(values[i])) ?? { canonical: '', size: 0, members: [] };
        clusterStates.set(id, state);
        visit(
          state.members.map(([m]) => m),
          next,
        );
      });
    };
    let frontier: string[] = [];
    await Promise.all([
      loadKeys([...new Set([...newKeys, ...oldKeys])], frontier),
      oldId !== null ? loadClusters([oldId], frontier) : null,
    ]);
    while (frontier.length > 0) {
      const need = frontier.filter((d) => !info.has(d));
      const values = await tx.getMany(
        DOCS,
        need.flatMap((d) => [CLUSTER_KEYS, CLUSTER_ID, RANK_INLINKS].map((c) => ({ row: d, column: c }))),
      );
      need.forEach((d, i) =>
        info.set(d, { keys: parseJson<string[]>(values[3 * i], []), id: utf8(values[3 * i + 1]), rank: toInt(values[3 * i + 2]) }),
      );
      const next: string[] = [];
      const keys = new Set<string>();
      const ids = new Set<string>();
      for (const d of frontier) {
        const di = info.get(d) as DocInfo;
        for (const k of di.keys) if (!keyMembers.has(k)) keys.add(k);
        if (di.id !== null && !clusterStates.has(di.id)) ids.add(di.id);
      }
      await Promise.all([loadKeys([...keys], next), loadClusters([...ids], next)]);
      frontier = next;
    }

    // Connected components of the documents that still carry keys.
    const parent = new Map<string, string>();
    const find = (x: string): string => {
      let r = x;
      while (parent.get(r) !== r) r = parent.get(r) as string;
      parent.set(x, r);
      return r;
    };
    for (const [d, di] of info) if (di.keys.length > 0) parent.set(d, d);
    for (const members of keyMembers.values()) {
      let first: string | null = null;
      for (const m of members) {
        if (!parent.has(m)) continue;
        if (first === null) first = m;
        else parent.set(find(m), find(first));
      }
    }
    const components = new Map<string, string[]>();
    for (const d of parent.keys()) {
      const r = find(d);
      let c = components.get(r);
      if (c === undefined) components.set(r, (c = []));
      c.push(d);
    }

    // What changes: this document's registration and count, every component, vanished clusters.
    for (const k of new Set([...oldKeys, ...newKeys])) {
      if (oldKeys.includes(k) && newKeys.includes(k)) continue;
      const members = [...(keyMembers.get(k) as Set<string>)].sort(compareStrings);
      if (members.length > 0) tx.set(CKEYS, k, KEY_MEMBERS, JSON.stringify(members));
      else tx.delete(CKEYS, k, KEY_MEMBERS);
    }
    if (!sameKeys) {
      if (newKeys.length > 0) tx.set(DOCS, self, CLUSTER_KEYS, JSON.stringify(newKeys));
      else tx.delete(DOCS, self, CLUSTER_KEYS);
    }
    if (rank !== cachedRank) {
      if (rank > 0) tx.set(DOCS, self, RANK_INLINKS, String(rank));
      else tx.delete(DOCS, self, RANK_INLINKS);
    }
    if (counted !== null && anchorsChanged) tx.set(DOCS, self, RANK_ANCHORS, counted.anchorTerms);
    if (newKeys.length === 0 && anchorsValue !== null) tx.delete(DOCS, self, RANK_ANCHORS);
    if (counted !== null && (rank !== cachedRank || anchorsChanged)) countedNow();
    else if (newKeys.length === 0 && countedAtValue !== null) tx.delete(DOCS, self, RANK_COUNTED_AT);
    const liveIds = new Set<string>();
    const states: [string, string][] = [];
    for (const members of components.values()) {
      members.sort(compareStrings);
      let id: string | null = null;
      let canonical = members[0] as string;
      for (const m of members) {
        const di = info.get(m) as DocInfo;
        for (const k of di.keys) if (id === null || k < id) id = k;
        const ci = info.get(canonical) as DocInfo;
        if (di.rank > ci.rank || (di.rank === ci.rank && compareStrings(m, canonical) < 0)) canonical = m;
      }
      const cid = id as string;
      liveIds.add(cid);
      for (const m of members) if ((info.get(m) as DocInfo).id !== cid) tx.set(DOCS, m, CLUSTER_ID, cid);
      states.push([cid, clusterStateJson(canonical, members.length, members, (m) => (info.get(m) as DocInfo).rank)]);
    }
    // Every cluster written is gated like the keys: runs that reach one cluster through keys they
    // do not share (two new members of it) would otherwise conflict on its c:state at commit.
    const entered = gate.extend(
      tx,
      [...clusterStates.keys(), ...liveIds].map((id) => `id\u0000${id}`),
    );
    if (entered !== true) {
      if (entered !== false) {
        tx.abort(); // releases this run's keys before it waits: holders never wait for each other
        await entered;
      }
      throw staleSnapshot(self);
    }
    for (const id of clusterStates.keys()) if (!liveIds.has(id)) tx.delete(CLUSTERS, id, CLUSTER_STATE);
    for (const [d, di] of info) if (di.keys.length === 0 && di.id !== null) tx.delete(DOCS, d, CLUSTER_ID);

    // Every live component's state is written, changed or not: it notifies the export and
    // serializes the runs that read it.
    for (const [cid, json] of states) tx.set(CLUSTERS, cid, CLUSTER_STATE, json);
  };
}
