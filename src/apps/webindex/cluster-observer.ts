/**
 * Duplicate clustering (observes `docs parsed:keys` and `rank:dirty`): the paper's
 * Figure 2, generalized from one key to several. Documents sharing any clustering key form one
 * cluster (a connected component); the cluster's id is its smallest key. (Its canonical member,
 * the one with the most in-links, is the export's to choose: export-observer.ts.)
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
 * - `c:state` (the members) is rewritten by every run of the component search, for every
 *   component it computed, even when equal: it notifies the export and serializes the runs that
 *   read it.
 * - A run counts its own document's in-links (anchor rows) when they may have changed (it was
 *   notified of a link change, or it is joining) and caches the count and the anchor texts'
 *   token counts in `docs[u] rank:inlinks` / `rank:anchors`, which only u's own runs write. Links
 *   the relay skipped because the document was not parsed yet are counted by the join
 *   (link-notify-observer.ts).
 * - A relayed change that alters neither the count nor the anchor texts writes nothing.
 * - A relayed change of a document whose keys did not change cannot change any component: the run
 *   writes the caches and weakly notifies its cluster's `c:state` (the export reads the members'
 *   caches), without the component search, so recounts of one cluster's members collapse into one
 *   export. It also rewrites `cluster:id` as read: a concurrent run that moves the document to
 *   another cluster writes that cell too, so one of them retries, and the notified cluster is the
 *   one the document is in when its count commits.
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
    if (column !== PARSED_KEYS && oldId !== null && sameKeys && newKeys.length > 0) {
      // No component can change: the caches, and the export told to read them (weakly, so that
      // recounts of the cluster's members collapse into one export). A change that changed
      // nothing is done.
      if (rank === cachedRank && !anchorsChanged) return;
      if (rank !== cachedRank) {
        if (rank > 0) tx.set(DOCS, row, RANK_INLINKS, String(rank));
        else tx.delete(DOCS, row, RANK_INLINKS);
      }
      if (anchorsChanged) tx.set(DOCS, row, RANK_ANCHORS, counted?.anchorTerms as string);
      countedNow();
      tx.set(DOCS, row, CLUSTER_ID, oldId); // as read: conflicts with a run that moves the document
      tx.notify(CLUSTERS, oldId, CLUSTER_STATE);
      return;
    }

    // The component search, over the snapshot plus this document's own change.
    const info = new Map<string, DocInfo>([[self, { keys: newKeys, id: oldId }]]);
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
        const state = parseClusterState(utf8(values[i])) ?? { size: 0, members: [] };
        clusterStates.set(id, state);
        visit(state.members, next);
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
        need.flatMap((d) => [CLUSTER_KEYS, CLUSTER_ID].map((c) => ({ row: d, column: c }))),
      );
      need.forEach((d, i) => info.set(d, { keys: parseJson<string[]>(values[2 * i], []), id: utf8(values[2 * i + 1]) }));
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
      for (const m of members) for (const k of (info.get(m) as DocInfo).keys) if (id === null || k < id) id = k;
      const cid = id as string;
      liveIds.add(cid);
      for (const m of members) if ((info.get(m) as DocInfo).id !== cid) tx.set(DOCS, m, CLUSTER_ID, cid);
      states.push([cid, clusterStateJson(members)]);
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
