/**
 * Duplicate clustering (observes `docs parsed:keys`): the paper's Figure 2, generalized from one
 * key to several. Documents sharing any clustering key form one cluster (a connected component).
 * A cluster keeps its id while it changes; a new one is named after its smallest key
 * (cluster-ids.ts says why and how). (Its canonical member, the one with the most in-links, is
 * the export's to choose: export-observer.ts.)
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
 * - In-links are not this observer's: the export counts every member's (export-observer.ts), and
 *   the link relay notifies the target's cluster. Builds before the seventeenth session of
 *   2026-11-27 counted them here (`rank:inlinks`, `rank:anchors`, `rank:countedAt`, after a weak
 *   `rank:dirty` from the relay): a run deletes those columns where it finds them, and a
 *   `rank:dirty` such a build left only notifies the document's cluster.
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
  RANK_DIRTY,
  RANK_INLINKS,
} from './schema.js';
import { freshIdCandidate, keptClusterIds } from './cluster-ids.js';
import { KeyGate, staleSnapshot } from './gate.js';
import { relayLinks } from './link-notify-observer.js';
import { compareStrings, parseJson, utf8 } from './util.js';

interface DocInfo {
  readonly keys: readonly string[];
  readonly id: string | null;
}

/** Columns builds before the seventeenth session of 2026-11-27 kept a document's in-link count in. */
const LEGACY_RANK = [RANK_INLINKS, RANK_ANCHORS, RANK_COUNTED_AT] as const;

/**
 * Each component's id (cluster-ids.ts): the previous id it keeps, or the first fresh candidate no
 * cluster holds. A cluster this run loaded and gives to no component is deleted by this run, so
 * its id is free; any other candidate is looked up (a point read, and usually a key-filter miss).
 */
async function componentIds(
  tx: Transaction,
  components: readonly (readonly string[])[],
  info: ReadonlyMap<string, DocInfo>,
  loaded: ReadonlyMap<string, ClusterState>,
): Promise<string[]> {
  const ids = keptClusterIds(
    components,
    (m) => (info.get(m) as DocInfo).id,
    (m) => (info.get(m) as DocInfo).keys,
  );
  const taken = new Set(ids.filter((id): id is string => id !== null));
  const smallestKey = (members: readonly string[]) => {
    let key = '';
    for (const m of members) for (const k of (info.get(m) as DocInfo).keys) if (key === '' || k < key) key = k;
    return key;
  };
  let pending = ids.flatMap((id, i) => (id === null ? [i] : []));
  const smallest = new Map(pending.map((i) => [i, smallestKey(components[i] as string[])]));
  for (let attempt = 0; pending.length > 0; attempt++) {
    const candidates = pending.map((i) => freshIdCandidate(smallest.get(i) as string, tx.startTs, attempt));
    const unknown = candidates.filter((c) => !taken.has(c) && !loaded.has(c));
    const values =
      unknown.length === 0
        ? []
        : await tx.getMany(
            CLUSTERS,
            unknown.map((id) => ({ row: id, column: CLUSTER_STATE })),
          );
    const held = new Set(unknown.filter((_, j) => values[j] !== null));
    const next: number[] = [];
    pending.forEach((i, j) => {
      const c = candidates[j] as string;
      if (taken.has(c) || held.has(c)) next.push(i);
      else {
        ids[i] = c;
        taken.add(c);
      }
    });
    pending = next;
  }
  return ids as string[];
}

export function clusterObserver() {
  const gate = new KeyGate();
  return async (tx: Transaction, row: Uint8Array, column: string): Promise<void> => {
    const self = utf8(row) as string;
    const [keysValue, appliedValue, idValue, linksChanged, ...legacyRank] = await tx.getMany(
      DOCS,
      [PARSED_KEYS, CLUSTER_KEYS, CLUSTER_ID, LINKS_CHANGED, ...LEGACY_RANK].map((c) => ({ row, column: c })),
    );
    // Where builds before the seventeenth session kept in-link counts (see the header).
    LEGACY_RANK.forEach((c, i) => {
      if (legacyRank[i] !== null) tx.delete(DOCS, row, c);
    });
    const newKeys = parseJson<string[]>(keysValue, []);
    const oldKeys = parseJson<string[]>(appliedValue, []);
    const oldId = utf8(idValue);
    if (column === RANK_DIRTY || (newKeys.length === 0 && oldKeys.length === 0 && oldId === null)) {
      // The link relay's work, when the processor left some (see link-notify-observer.ts); and an
      // earlier build's recount request, now the export's (its cluster is notified as the relay does).
      if (linksChanged !== null) await relayLinks(tx, row, linksChanged);
      if (column === RANK_DIRTY && oldId !== null) tx.notify(CLUSTERS, oldId, CLUSTER_STATE);
      return;
    }
    const sameKeys = newKeys.length === oldKeys.length && newKeys.every((k, i) => k === oldKeys[i]);
    const gateKeys = [...newKeys, ...oldKeys];
    if (oldId !== null) gateKeys.push(`id\u0000${oldId}`);
    if (!(await gate.enter(tx, gateKeys))) throw staleSnapshot(self);
    // The link relay's work, when the processor left some (see link-notify-observer.ts). After
    // the gate: a run told to retry (43 % of cluster runs at 4 000 documents) would otherwise
    // read every relayed target's row again.
    if (linksChanged !== null) await relayLinks(tx, row, linksChanged);

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

    // What changes: this document's registration, every component, vanished clusters.
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
    const comps = [...components.values()].map((members) => members.sort(compareStrings));
    const ids = await componentIds(tx, comps, info, clusterStates);
    const liveIds = new Set(ids);
    const states: [string, string][] = [];
    comps.forEach((members, i) => {
      const cid = ids[i] as string;
      for (const m of members) if ((info.get(m) as DocInfo).id !== cid) tx.set(DOCS, m, CLUSTER_ID, cid);
      states.push([cid, clusterStateJson(members)]);
    });
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
