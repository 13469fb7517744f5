/**
 * Version garbage collection for Percolator tables, below a watermark W that no running
 * transaction can still read under (the oracle's GC watermark: the oldest registered start ts).
 *
 * 1. Locks older than W are resolved first (roll forward / roll back). This must precede any
 *    deletion: a secondary's lock is resolved by looking up its primary's commit record, and that
 *    record could otherwise be collected while the lock still points at it. A lock that cannot be
 *    resolved yet (a live owner within its TTL) lowers the effective watermark to its start ts.
 * 2. For each column, the newest committed (put or delete) write record at or below W is the
 *    version a reader at W sees: it and the newer commits are kept; older write records (puts,
 *    deletes, rollbacks) and their `data` cells are deleted. Rollback records older than a kept
 *    commit are no longer needed: a late prewrite of their transaction meets the newer commit and
 *    fails anyway, and so are those newer than the kept version but below W, or in a column with
 *    no commit at or below W: their transactions ended (W passed their start), and a late
 *    prewrite of one meets a primary that is rolled back or, its record gone too, rolls back.
 *    A kept version that is a delete goes too, unless a strong notification of the
 *    column is pending (an observer tells a new change from a processed one by the visible
 *    commit): a reader finds nothing either way, and a deleted cell stops holding its row in the
 *    store forever.
 *
 * Concurrency: safe alongside running transactions. New locks and commits all have timestamps
 * above W (transactions register their start ts before using it), so deleting the range below
 * the kept version never races with a writer.
 *
 * A row's deletions go in as many row mutations as the store's per-row limit needs, a column's
 * record range and data range always together (gc-rows.ts). A row that fails — a lock it cannot
 * resolve, a deletion the store refuses — does not end the pass: the others are collected, then
 * the pass rejects with GC_INCOMPLETE. A lock that failed to resolve counts as one still held (it
 * lowers the effective watermark to its start ts), so phase 2 keeps whatever it may need.
 */
import { bytesKey } from '../store/bytes.js';
import { type Store, atomicRowsOf } from '../store/store.js';
import type { Cell, Mutation } from '../store/types.js';
import { BoundedPool } from '../util/bounded-pool.js';
import { resolveLock } from './actions/resolve-lock.js';
import type { ResolveContext } from './actions/types.js';
import { REMOTE_WIDTH, pendingNotifications } from './gc-recent.js';
import { type DeletionGroup, GcFailures, chunkDeletions, forEachColumn } from './gc-rows.js';
import { DATA, LOCK, WRITE, decodeWrite } from './layout.js';
import { lockedCell } from './snapshot-read.js';

/** What one pass did (`db.collectGarbage()`, `db.lastGc`). */
export interface GcResult {
  /** The oracle's watermark the pass started from. */
  readonly watermark: number;
  /** The watermark versions were collected below: lowered to the start ts of a lock it could not resolve. */
  readonly effectiveWatermark: number;
  /** Locks older than the watermark rolled forward or back. */
  readonly locksResolved: number;
  /** Write records (with their data cells) deleted. */
  readonly versionsRemoved: number;
  /** Rows that had anything deleted. */
  readonly rowsRewritten: number;
}

export async function collectGarbage(store: Store, tables: readonly string[], watermark: number, ctx: ResolveContext): Promise<GcResult> {
  let effective = watermark;
  let locksResolved = 0;
  if (!(watermark > 0)) return { watermark, effectiveWatermark: watermark, locksResolved: 0, versionsRemoved: 0, rowsRewritten: 0 };
  const failures = new GcFailures();
  // Phase 1: resolve old locks.
  locks: for (const table of tables) {
    const old = store.readRows(table, {
      filter: { chain: [{ familyNameRegexFilter: LOCK }, { timestampRangeFilter: { endTimestampMicros: watermark } }] },
    });
    for await (const r of old) {
      if (failures.stop()) break locks;
      let failed: { readonly error: unknown } | null = null;
      for (const c of r.cells) {
        try {
          if ((await resolveLock(store, lockedCell(table, r.key, c), ctx)) !== 'locked') {
            locksResolved++;
            continue;
          }
        } catch (error) {
          failed ??= { error };
        }
        effective = Math.min(effective, c.timestamp);
      }
      if (failed !== null) failures.add(table, r.key, failed.error);
    }
  }
  // Phase 2 runs only after every lock below the watermark was seen: one left unseen would not
  // have lowered the effective watermark.
  if (failures.hasStopped) {
    throw failures.error('full', {
      watermark,
      effectiveWatermark: effective,
      locksResolved,
      versionsRemoved: 0,
      rowsRewritten: 0,
    }) as Error;
  }
  // Phase 2: collect versions shadowed at the effective watermark. The deletions are deferred
  // (a crash that loses one only leaves versions the next pass collects; the store's log is
  // ordered, so no later durable write can survive without them) and up to PHASE2_WIDTH rows
  // (REMOTE_WIDTH over a network, gc-recent.ts says why) are rewritten at once: a pass costs a
  // few group commits instead of one fsync per row, which is what keeps hot rows short under a
  // steady load. A row's chunks go one after the other.
  let versionsRemoved = 0;
  let rowsRewritten = 0;
  const limit = store.limits.maxMutationsPerRow;
  const sync = atomicRowsOf(store);
  const pool = new BoundedPool(sync === null ? REMOTE_WIDTH : PHASE2_WIDTH);
  try {
    rows: for (const table of tables) {
      const rows = store.readRows(table, { filter: { familyNameRegexFilter: WRITE } });
      for await (const r of rows) {
        if (failures.stop()) break rows;
        const deletes = visibleDeletes(r.cells, effective);
        // A row whose visible version is a delete asks for its pending notifications first, in the
        // pool: over a network those reads then go out together, not one round trip a row in the
        // scan's loop (a `serve` store of stale postings took ~1 ms a row).
        const known = deletes.length === 0 ? shadowedVersions(r.cells, effective) : null;
        if (known !== null && known.length === 0) continue;
        await pool.add(async () => {
          try {
            let deletions = known;
            if (deletions === null) {
              const notified = await pendingNotifications(store, sync, table, r.key, deletes);
              deletions = shadowedVersions(r.cells, effective, (q) => !notified.has(bytesKey(q)));
              if (deletions.length === 0) return;
            }
            for (const chunk of chunkDeletions(deletions, limit)) {
              await store.mutateRow(table, r.key, chunk.mutations, DEFERRED);
              versionsRemoved += chunk.versions;
            }
            rowsRewritten++;
          } catch (e) {
            failures.add(table, r.key, e);
          }
        });
      }
    }
  } finally {
    // The row tasks catch their errors: this waits for them, before a scan's error goes up.
    await pool.drain();
  }
  const result = { watermark, effectiveWatermark: effective, locksResolved, versionsRemoved, rowsRewritten };
  const incomplete = failures.error('full', result);
  if (incomplete !== null) throw incomplete;
  return result;
}

const PHASE2_WIDTH = 32;
const DEFERRED = { durability: 'deferred' } as const;

/**
 * The deletions for one row's write cells (canonical order: per column, newest first): per column
 * with old versions, one group of its record range and its data range (deleted together). Where
 * the version visible at the watermark is a delete and `dropDelete(q)` allows it (no strong
 * notification of the column pending: `pendingNotifications`), the range takes that delete record
 * too: a reader at or above the watermark then finds no version where it found a delete, the same
 * nothing, and a deleted cell stops costing a row forever (TiKV's GC drops such a delete too).
 */
export function shadowedVersions(
  cells: readonly Cell[],
  watermark: number,
  dropDelete: (q: Uint8Array) => boolean = () => false,
): DeletionGroup[] {
  const out: DeletionGroup[] = [];
  forEachColumn(cells, (q, i, j) => {
    const keep = visibleAt(cells, i, j, watermark);
    // Rollback records below the watermark that no kept commit is below: of transactions
    // that ended (the watermark passed their start), whose late prewrites nothing can make commit
    // (cleanup.ts). Without a commit in the column they were never collected, and a row that a
    // rolled-back transaction created stayed forever (over `serve`, where commits are two-phase).
    const rollbacks = rollbacksAbove(cells, i, keep < 0 ? j : keep, watermark, q);
    if (rollbacks.versions > 0) out.push(rollbacks);
    if (keep < 0) return;
    const kept = decodeWrite((cells[keep] as Cell).value);
    const drop = kept.kind === 'delete' && dropDelete(q);
    if (drop || keep + 1 < j) {
      const keptTs = (cells[keep] as Cell).timestamp;
      const mutations: Mutation[] = [
        {
          deleteFromColumn: {
            familyName: WRITE,
            columnQualifier: q,
            timeRange: { startTimestampMicros: 0, endTimestampMicros: drop ? keptTs + 1 : keptTs },
          },
        },
        // Data cells of older versions all sit below the kept version's start ts (a delete has none).
        {
          deleteFromColumn: {
            familyName: DATA,
            columnQualifier: q,
            timeRange: { startTimestampMicros: 0, endTimestampMicros: kept.startTs },
          },
        },
      ];
      out.push({ mutations, versions: j - keep - (drop ? 0 : 1) });
    }
  });
  return out;
}

/**
 * The rollback records among cells[i..end) (one column, newest first; `end` the kept version or
 * the column's end) below the watermark, each deleted at its own timestamp: a range would
 * reach the kept version or newer records.
 */
function rollbacksAbove(cells: readonly Cell[], i: number, end: number, watermark: number, q: Uint8Array): DeletionGroup {
  const mutations: Mutation[] = [];
  for (let k = i; k < end; k++) {
    const c = cells[k] as Cell;
    // Strictly below: the oldest running transaction may have started at the watermark itself,
    // and its rollback record is what keeps its late primary prewrite from committing.
    if (c.timestamp >= watermark) continue;
    const at = { startTimestampMicros: c.timestamp, endTimestampMicros: c.timestamp + 1 };
    mutations.push({ deleteFromColumn: { familyName: WRITE, columnQualifier: q, timeRange: at } });
  }
  return { mutations, versions: mutations.length };
}

/** The index in cells[i..j) (one column, newest first) of the version visible at the watermark, or -1. */
function visibleAt(cells: readonly Cell[], i: number, j: number, watermark: number): number {
  for (let k = i; k < j; k++) {
    const c = cells[k] as Cell;
    if (c.timestamp <= watermark && decodeWrite(c.value).kind !== 'rollback') return k;
  }
  return -1;
}

/** The columns (encoded qualifiers) whose version visible at the watermark is a delete. */
export function visibleDeletes(cells: readonly Cell[], watermark: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  forEachColumn(cells, (q, i, j) => {
    const keep = visibleAt(cells, i, j, watermark);
    if (keep >= 0 && decodeWrite((cells[keep] as Cell).value).kind === 'delete') out.push(q);
  });
  return out;
}
