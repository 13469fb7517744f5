/**
 * Which id each recomputed cluster gets: ids outlive membership changes.
 *
 * Why: everything a cluster exports is keyed by its id (`exports[id]`, 48 posting rows
 * `index[term \0 id]`). When the id was the cluster's smallest key, a duplicate arriving with a
 * smaller key renamed its cluster: the export deleted every posting of the old id and posted them
 * all again under the new one. In the synthetic corpus that was every cluster change that was not
 * a new cluster (20 000 documents: 3 582 renames, 0 merges of two existing clusters) and ~45 % of
 * all posting rows written.
 *
 * Rules (pure, deterministic given the components and their members' previous ids):
 * - A component keeps the previous id held by most of its members; each previous id goes to at
 *   most one component (a split leaves it with the part holding most of the old members). Order:
 *   more members first, then a component still carrying the id as one of its keys (a document
 *   that leaves a cluster of two does not take the id of the one that stays), then the smaller
 *   id, then the component whose first member is smaller.
 * - A component none of whose members had an id left to give gets a fresh one: its smallest key,
 *   unless a cluster already has that id (possible once ids outlive their keys: a cluster keeps
 *   the id of a key none of its members carries any more), then that key with `#` and the
 *   transaction's start timestamp (unique per transaction; components of one run have disjoint
 *   keys), then with a counter after that — `freshIdCandidate`.
 *
 * Concurrency: none here (pure). The cluster observer reads the `c:state` of every id it may keep
 * (each is a member's cluster) and of every fresh candidate it takes, and writes each id it gives,
 * so two runs that would give one id to two components conflict at commit.
 */
import { compareStrings } from './util.js';

/**
 * The previous id each component keeps, or null where it needs a fresh one.
 * `components`: each component's members, sorted. `previousId`: a member's id before this run;
 * `keysOf`: a member's clustering keys now.
 * Returns: one entry per component, in order; no id twice.
 * Throws: never. Pure.
 */
export function keptClusterIds(
  components: readonly (readonly string[])[],
  previousId: (member: string) => string | null,
  keysOf: (member: string) => readonly string[],
): (string | null)[] {
  const claims: { component: number; id: string; members: number; carried: boolean }[] = [];
  components.forEach((members, component) => {
    const counts = new Map<string, number>();
    for (const m of members) {
      const id = previousId(m);
      if (id !== null) counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    for (const [id, n] of counts) claims.push({ component, id, members: n, carried: members.some((m) => keysOf(m).includes(id)) });
  });
  const first = (c: number) => components[c]?.[0] ?? '';
  claims.sort(
    (a, b) =>
      b.members - a.members ||
      Number(b.carried) - Number(a.carried) ||
      compareStrings(a.id, b.id) ||
      compareStrings(first(a.component), first(b.component)),
  );
  const kept: (string | null)[] = components.map(() => null);
  const given = new Set<string>();
  for (const c of claims) {
    if (kept[c.component] !== null || given.has(c.id)) continue;
    kept[c.component] = c.id;
    given.add(c.id);
  }
  return kept;
}

/**
 * The fresh ids a component whose smallest key is `smallestKey` may take, in order of preference
 * (the caller takes the first no cluster holds): the key itself, then the key with `#` and the
 * start timestamp, then with a counter appended.
 * Throws: never. Pure.
 */
export function freshIdCandidate(smallestKey: string, startTs: number, attempt: number): string {
  if (attempt === 0) return smallestKey;
  const suffix = `${smallestKey}#${startTs}`;
  return attempt === 1 ? suffix : `${suffix}.${attempt - 1}`;
}
