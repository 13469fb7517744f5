/**
 * Reads one column's lock and write cells and interprets them for a transaction (start ts S):
 * its lock, its commit record, its rollback record. Shared by commit, cleanup and
 * check-txn-status, which all decide from exactly this view.
 */
import type { Store } from '../../store/store.js';
import type { Cell } from '../../store/types.js';
import { LOCK, WRITE, columnStatusFilter, decodeLock, decodeWrite, type LockRecord } from '../layout.js';

export interface ColumnStatus {
  /** The lock written at S, if still there. */
  readonly ownLock: LockRecord | null;
  /** The commit timestamp of S's commit record, if committed. */
  readonly commitTs: number | null;
  /** A rollback record at S exists. */
  readonly rolledBack: boolean;
  /** Locks of other transactions on the column: [startTs, lock]. */
  readonly otherLocks: readonly [number, LockRecord][];
  /** Newest non-rollback write record's commit ts (any transaction), or null. */
  readonly latestCommitTs: number | null;
}

export function interpretColumn(cells: readonly Cell[], startTs: number): ColumnStatus {
  let ownLock: LockRecord | null = null;
  let commitTs: number | null = null;
  let rolledBack = false;
  let latestCommitTs: number | null = null;
  const otherLocks: [number, LockRecord][] = [];
  for (const c of cells) {
    if (c.family === LOCK) {
      if (c.timestamp === startTs) ownLock = decodeLock(c.value);
      else otherLocks.push([c.timestamp, decodeLock(c.value)]);
    } else if (c.family === WRITE) {
      const w = decodeWrite(c.value);
      if (w.kind === 'rollback') {
        if (c.timestamp === startTs) rolledBack = true;
        continue;
      }
      if (latestCommitTs === null) latestCommitTs = c.timestamp;
      if (w.startTs === startTs) commitTs = c.timestamp;
    }
  }
  return { ownLock, commitTs, rolledBack, otherLocks, latestCommitTs };
}

export async function readColumnStatus(
  store: Store,
  table: string,
  row: Uint8Array,
  q: Uint8Array,
  startTs: number,
): Promise<ColumnStatus> {
  const r = await store.readRow(table, row, columnStatusFilter(q));
  return interpretColumn(r?.cells ?? [], startTs);
}
