/**
 * Link inversion: attaches the anchor text of every outgoing link of a document to its target,
 * as one `anchors[target \0 source]` row per link, so no two pages' link transactions ever write
 * a common cell however popular the target.
 *
 * It runs inside the document processor's transaction (`invertLinks`, called by
 * process-observer.ts with the links it just parsed): a separate observer on `parsed:links` cost
 * one more transaction per document — its begin, ack, notify cell, commit of the `docs` row —
 * for no gain, since the processor writes the `docs` row anyway. `linkObserver()` is the same
 * step as a standalone observer body over `parsed:links` (kept for tests that drive the
 * interleavings by hand; not registered by the pipeline).
 *
 * Invariants:
 * - `links:applied` is exactly the set of links whose anchor rows exist; each run applies the
 *   difference between it and the document's current links, so every link is inverted once.
 * - Every target whose anchor row was written or deleted is appended to `links:changed`, the
 *   change list the link relay (link-notify-observer.ts, woken by the change of `links:applied`)
 *   consumes. It is a list of changes, not a diff of states, so a link added and removed again
 *   before the relay runs is still relayed.
 */
import type { Transaction } from '../../txn/transaction.js';
import { ANCHORS, ANCHOR_TEXT, DOCS, LINKS_APPLIED, LINKS_CHANGED, PARSED_LINKS, anchorRow } from './schema.js';
import { parseJson } from './util.js';

/**
 * Applies the difference between `links` (the document's links now) and `links:applied`
 * (`appliedValue`, read by the caller at its snapshot together with `links:changed`,
 * `pendingValue`). Returns how many anchor rows it wrote or deleted.
 */
export function invertLinks(
  tx: Transaction,
  row: Uint8Array,
  source: string,
  links: Iterable<readonly [string, string]>,
  appliedValue: Uint8Array | null,
  pendingValue: Uint8Array | null,
): number {
  const now = new Map(links);
  const before = parseJson<Record<string, string>>(appliedValue, {});
  let changed: Set<string> | null = null;
  const touch = (target: string) => (changed ??= new Set(parseJson<string[]>(pendingValue, []))).add(target);
  for (const [target, anchor] of now) {
    if (Object.hasOwn(before, target) && before[target] === anchor) continue;
    tx.set(ANCHORS, anchorRow(target, source), ANCHOR_TEXT, anchor);
    touch(target);
  }
  for (const target of Object.keys(before)) {
    if (now.has(target)) continue;
    tx.delete(ANCHORS, anchorRow(target, source), ANCHOR_TEXT);
    touch(target);
  }
  if (changed === null) return 0;
  const set: Set<string> = changed;
  if (now.size === 0) tx.delete(DOCS, row, LINKS_APPLIED);
  else tx.set(DOCS, row, LINKS_APPLIED, JSON.stringify(Object.fromEntries(now)));
  tx.set(DOCS, row, LINKS_CHANGED, JSON.stringify([...set].sort()));
  return set.size;
}

/** The inversion as an observer body over `docs parsed:links` (see the header). */
export function linkObserver() {
  return async (tx: Transaction, row: Uint8Array): Promise<void> => {
    const [linksValue, appliedValue, pendingValue] = await tx.getMany(DOCS, [
      { row, column: PARSED_LINKS },
      { row, column: LINKS_APPLIED },
      { row, column: LINKS_CHANGED },
    ]);
    invertLinks(tx, row, Buffer.from(row).toString('utf8'), parseJson<[string, string][]>(linksValue, []), appliedValue, pendingValue);
  };
}
