/**
 * The link relay: tells the cluster of each crawled document whose in-links changed to export
 * again, with a weak notification of its `clusters[id] c:state`. The export counts its members'
 * in-links itself (export-observer.ts), so many links to one cluster's members collapse into one
 * export, and no two linking pages ever conflict.
 *
 * Who relays: which clusters to notify is decided from a snapshot taken after the link
 * transaction committed, which the argument below needs; the link transaction's own snapshot
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
 * - A target in no cluster at the relay's snapshot (not crawled, or not joined yet) is skipped.
 *   If it joins a cluster later, the join commits after this snapshot, so the export its
 *   `c:state` write starts counts the link. Likewise a target that moves to another cluster after
 *   this snapshot is counted by the export the move starts; one that moved before is read here
 *   in its new cluster. So every committed link change is counted by an export of the cluster its
 *   target is in, started after the link committed.
 */
import type { Transaction } from '../../txn/transaction.js';
import { CLUSTERS, CLUSTER_ID, CLUSTER_STATE, DOCS, LINKS_CHANGED } from './schema.js';
import { parseJson, utf8 } from './util.js';

/**
 * The relay's work on `row` given its `links:changed` value (`pending`) at the transaction's snapshot. Any
 * transaction whose snapshot is after the link transaction's commit may do it — the relay, or a
 * cluster run of the same document (cluster-observer.ts), which starts after the processor's
 * commit that inverted the links and so saves the relay its own commit.
 */
export async function relayLinks(tx: Transaction, row: Uint8Array, pending: Uint8Array | null): Promise<void> {
  const targets = parseJson<string[]>(pending, []);
  if (targets.length === 0) return;
  const ids = await tx.getMany(
    DOCS,
    targets.map((t) => ({ row: t, column: CLUSTER_ID })),
  );
  for (const id of new Set(ids.map(utf8))) if (id !== null) tx.notify(CLUSTERS, id, CLUSTER_STATE);
  tx.delete(DOCS, row, LINKS_CHANGED);
}

export function linkNotifyObserver() {
  return async (tx: Transaction, row: Uint8Array): Promise<void> => {
    await relayLinks(tx, row, await tx.get(DOCS, row, LINKS_CHANGED));
  };
}
