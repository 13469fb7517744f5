/**
 * Version garbage collection for Percolator tables, below a watermark W that no running
 * transaction can still read under (the oracle's GC watermark: the oldest registered start ts).
 *
 * 1. Locks older than W are resolved first (roll forward / roll back). This must precede any
 *    deletion: a secondary's lock is resolved by looking up its primary's commit record, and that
 *    record could otherwise be collected while the lock still points at it. A lock that cannot be
 *    resolved yet (a live owner within its TTL) lowers the effective watermark to its start ts.
 * 2. For each column, the newest committed (put or delete) write record at or below W is the
 *    version a reader at W sees: it and everything newer are kept; older write records (puts,
 *    deletes, rollbacks) and their `data` cells are deleted. Rollback records older than a kept
 *    commit are no longer needed: a late prewrite of their transaction meets the newer commit and
 *    fails anyway.
 *
 * Concurrency: safe alongside running transactions. New locks and commits all have timestamps
 * above W (transactions register their start ts before using it), so deleting the range below
 * the kept version never races with a writer.
 */
import type { Store } from '../store/store.js';
import type { Cell, Mutation } from '../store/types.js';
import { BoundedPool } from '../util/bounded-pool.js';
import { resolveLock } from './actions/resolve-lock.js';
import type { ResolveContext } from './actions/types.js';
import { DATA, LOCK, WRITE, decodeWrite } from './layout.js';
import { lockedCell } from './snapshot-read.js';

export interface GcResult {
  readonly watermark: number;
  readonly effectiveWatermark: number;
  readonly locksResolved: number;
  readonly versionsRemoved: number;
  readonly rowsRewritten: number;
}

export async function collectGarbage(store: Store, tables: readonly string[], watermark: number, ctx: ResolveContext): Promise<GcResult> {
  let effective = watermark;
  let locksResolved = 0;
  if (!(watermark > 0)) return { watermark, effectiveWatermark: watermark, locksResolved: 0, versionsRemoved: 0, rowsRewritten: 0 };
  // Phase 1: resolve old locks.
  for (const table of tables) {
    const old = store.readRows(table, {
      filter: { chain: [{ familyNameRegexFilter: LOCK }, { timestampRangeFilter: { endTimestampMicros: watermark } }] },
    });
    for await (const r of old) {
      for (const c of r.cells) {
        const outcome = await resolveLock(store, lockedCell(table, r.key, c), ctx);
        if (outcome === 'locked') effective = Math.min(effective, c.timestamp);
        else locksResolved++;
      }
    }
  }
  // Phase 2: collect versions shadowed at the effective watermark. The deletions are deferred
  // (a crash that loses one only leaves versions the next pass collects; the store's log is
  // ordered, so no later durable write can survive without them) and up to PHASE2_WIDTH rows are
  // rewritten at once: a pass costs a few group commits instead of one fsync per row, which is
  // what keeps hot rows short under a steady load.
  let versionsRemoved = 0;
  let rowsRewritten = 0;
  const pool = new BoundedPool(PHASE2_WIDTH);
  for (const table of tables) {
    const rows = store.readRows(table, { filter: { familyNameRegexFilter: WRITE } });
    for await (const r of rows) {
      if (pool.failed) break;
      const mutations = shadowedVersions(r.cells, effective);
      if (mutations.length === 0) continue;
      await pool.add(async () => {
        await store.mutateRow(
          table,
          r.key,
          mutations.map((m) => m.mutation),
          DEFERRED,
        );
        versionsRemoved += mutations.reduce((n, m) => n + m.versions, 0);
        rowsRewritten++;
      });
    }
  }
  await pool.drain();
  return { watermark, effectiveWatermark: effective, locksResolved, versionsRemoved, rowsRewritten };
}

const PHASE2_WIDTH = 32;
const DEFERRED = { durability: 'deferred' } as const;

/** The deletions for one row's write cells (canonical order: per column, newest first). */
export function shadowedVersions(cells: readonly Cell[], watermark: number): { mutation: Mutation; versions: number }[] {
  const out: { mutation: Mutation; versions: number }[] = [];
  let i = 0;
  while (i < cells.length) {
    const q = (cells[i] as Cell).qualifier;
    let j = i;
    while (j < cells.length && Buffer.compare((cells[j] as Cell).qualifier, q) === 0) j++;
    // cells[i..j) are one column's write records, newest first.
    let keep = -1;
    for (let k = i; k < j; k++) {
      const c = cells[k] as Cell;
      if (c.timestamp > watermark) continue;
      if (decodeWrite(c.value).kind !== 'rollback') {
        keep = k;
        break;
      }
    }
    if (keep >= 0 && keep + 1 < j) {
      const kept = cells[keep] as Cell;
      const keptStart = decodeWrite(kept.value).startTs;
      out.push({
        mutation: {
          deleteFromColumn: {
            familyName: WRITE,
            columnQualifier: q,
            timeRange: { startTimestampMicros: 0, endTimestampMicros: kept.timestamp },
          },
        },
        versions: j - keep - 1,
      });
      // Data cells of older versions all sit below the kept version's start ts.
      out.push({
        mutation: {
          deleteFromColumn: { familyName: DATA, columnQualifier: q, timeRange: { startTimestampMicros: 0, endTimestampMicros: keptStart } },
        },
        versions: 0,
      });
    }
    i = j;
  }
  return out;
}
