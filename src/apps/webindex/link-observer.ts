/**
 * Link inversion (observes `docs parsed:links`): attaches the anchor text of every outgoing link
 * to its target, as one row per link, `anchors[target \0 source]`. Which cluster a target
 * belongs to is not baked in: the export attaches the anchors of every member to the cluster's
 * canonical, so a change of canonical moves no anchors (links to duplicates point to the
 * canonical by construction).
 *
 * Invariants:
 * - `links:applied` is exactly the set of links whose anchor rows exist; the observer applies
 *   the difference between it and `parsed:links`, so every link is inverted once.
 * - It writes no cell that another document's transaction writes (anchor rows are keyed by
 *   source too): link inversion never conflicts, however popular a target is. A popular page
 *   with a transactional in-link counter would serialize every page linking to it.
 * - Every target whose anchors it changes is added to `links:changed`, which the relay
 *   (link-notify-observer.ts, woken by the change of `links:applied`) consumes. It is a list of
 *   changes, not a diff of states: a link added and removed again before the relay runs must
 *   still be recounted, because some count may have seen it in between.
 */
import type { Transaction } from '../../txn/transaction.js';
import { ANCHORS, ANCHOR_TEXT, DOCS, LINKS_APPLIED, LINKS_CHANGED, PARSED_LINKS, anchorRow } from './schema.js';
import { parseJson, utf8 } from './util.js';

export function linkObserver() {
  return async (tx: Transaction, row: Uint8Array): Promise<void> => {
    const source = utf8(row) as string;
    const [linksValue, appliedValue, pendingValue] = await tx.getMany(DOCS, [
      { row, column: PARSED_LINKS },
      { row, column: LINKS_APPLIED },
      { row, column: LINKS_CHANGED },
    ]);
    const now = new Map(parseJson<[string, string][]>(linksValue, []));
    const before = new Map(Object.entries(parseJson<Record<string, string>>(appliedValue, {})));
    const changed = new Set(parseJson<string[]>(pendingValue, []));
    let count = 0;
    for (const [target, anchor] of now) {
      if (before.get(target) === anchor) continue;
      tx.set(ANCHORS, anchorRow(target, source), ANCHOR_TEXT, anchor);
      changed.add(target);
      count++;
    }
    for (const target of before.keys()) {
      if (now.has(target)) continue;
      tx.delete(ANCHORS, anchorRow(target, source), ANCHOR_TEXT);
      changed.add(target);
      count++;
    }
    if (count === 0) return;
    if (now.size === 0) tx.delete(DOCS, row, LINKS_APPLIED);
    else tx.set(DOCS, row, LINKS_APPLIED, JSON.stringify(Object.fromEntries(now)));
    tx.set(DOCS, row, LINKS_CHANGED, JSON.stringify([...changed].sort()));
  };
}
