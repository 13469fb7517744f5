/**
 * The link relay: tells each crawled document whose in-links changed to recount them, with a weak
 * notification (`rank:dirty`). Many links to one page then collapse into one recount, and no two
 * linking pages ever conflict.
 *
 * Who relays: which targets to notify is decided from a snapshot taken after the link
 * transaction committed, which the join argument below needs; the link transaction's own snapshot
 * predates its commit. Usually that is the document's cluster run, which the same commit started
 * (it wrote `parsed:keys`); otherwise the link transaction weakly notifies `links:dirty`, which
 * this observer observes (and `links:applied`, for notifications left by builds before
 * 2026-11-26, whose relay ran after every link change). (Relaying from a later snapshot also kept
 * the web index clear of a weak-notification race, since fixed in the transaction layer: see
 * src/notify/weak-notify-race.test.ts.)
 *
 * Invariants:
 * - It consumes `links:changed` (the targets touched since its last run) and deletes it. A link
 *   run committing meanwhile writes that cell too, so one of the two transactions retries and no
 *   target is lost. The cell is not observed, so the delete does not wake the relay again.
 * - Targets that are not crawled documents (no `parsed:keys` at the relay's snapshot) are skipped:
 *   nothing ranks them yet. When such a target is parsed later, its parse commits after this
 *   snapshot, so the cluster run that parse triggers (its join, which counts the in-links) starts
 *   after the link transaction committed and counts its anchor. Checking cluster membership
 *   instead would leave a gap: a target parsed before the link but joined after the relay's
 *   snapshot, whose join read the anchors before the link committed.
 */
import type { Transaction } from '../../txn/transaction.js';
import { DOCS, LINKS_CHANGED, PARSED_KEYS, RANK_COUNTED_AT, RANK_DIRTY } from './schema.js';
import { parseJson, toInt } from './util.js';

/**
 * The relay's work on `row` given its `links:changed` value at the transaction's snapshot. Any
 * transaction whose snapshot is after the link transaction's commit may do it — the relay, or a
 * cluster run of the same document (cluster-observer.ts), which starts after the processor's
 * commit that inverted the links and so saves the relay its own commit.
 */
export async function relayLinks(tx: Transaction, row: Uint8Array): Promise<void> {
  const { value: pending, commitTs } = await tx.getVersion(DOCS, row, LINKS_CHANGED);
  const targets = parseJson<string[]>(pending, []);
  if (targets.length === 0) return;
  // Every change listed was committed at or below the list's own commit ts.
  const changedAt = commitTs ?? Infinity;
  const values = await tx.getMany(
    DOCS,
    targets.flatMap((t) => [PARSED_KEYS, RANK_COUNTED_AT].map((column) => ({ row: t, column }))),
  );
  targets.forEach((t, i) => {
    if (values[2 * i] === null) return; // not a crawled document
    // A count from a snapshot above changedAt saw these changes: recounting would find them counted.
    if (toInt(values[2 * i + 1]) > changedAt) return;
    tx.notify(DOCS, t, RANK_DIRTY);
  });
  tx.delete(DOCS, row, LINKS_CHANGED);
}

export function linkNotifyObserver() {
  return async (tx: Transaction, row: Uint8Array): Promise<void> => {
    await relayLinks(tx, row);
  };
}
