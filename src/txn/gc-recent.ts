/**
 * Targeted version GC: collects, in the rows this process committed to since the last pass, the
 * versions of transactions this process committed COMPLETELY — its own commit records written on
 * every cell, by the committer itself. Its cost is proportional to what changed, not to the
 * repository (the full pass in gc.ts scans every row), so it can run every second and keep hot
 * rows short under a steady load.
 *
 * Why it needs no lock-resolution phase: the full pass must resolve every lock below the
 * watermark before deleting anything, because a secondary's lock is resolved through its
 * primary's commit record. A completely committed transaction has no lock left anywhere, so no
 * one will ever look up its primary record; and a reader at or above the watermark W sees the
 * newest write record at or below W (kept), or a newer one, never an older one. So an older
 * version of such a transaction — its write record at its commit ts and its `data` cell at its
 * start ts, deleted exactly — is invisible to every reader that can still exist. So is the version
 * visible at W when it is a delete whose older versions all go with it: it hides nothing any more,
 * and goes too, unless a strong notification of its column is pending (`pendingNotifications`: an
 * observer compares the visible commit with its ack, and would take "no version" for a processed
 * change; such a delete is left to the full pass). Everything else
 * (rollback records, versions of other processes or of transactions whose secondaries the
 * committer could not commit, locks) is left to the full pass (gc.ts; opt-in in the background).
 *
 * Concurrency contract: single JS thread. `record` is called by the committer after its last
 * secondary commit; `collectRecent` takes the current dirty set, so commits during a pass dirty
 * the next one. A row whose newest version is still above the watermark stays dirty.
 * A column enters the dirty set from its second commit seen here (the first leaves nothing to
 * collect), and a pass reads only the dirty columns' write cells.
 * Memory: bounded (grown as it fills; SEEN_CELLS below). Past `transactions` remembered
 * transactions or `dirtyCells` dirty columns the oldest are forgotten and `overflowed` is set: their
 * versions wait for a full pass. Past `cells` cells committed once, the oldest are forgotten
 * silently: such a cell's next commit counts as a first (SEEN_CELLS below).
 */
import { bytesKey } from '../store/bytes.js';
import { type AtomicRowsStore, type Store, atomicRowsOf } from '../store/store.js';
import type { Cell, Mutation, RowFilter } from '../store/types.js';
import { BoundedPool } from '../util/bounded-pool.js';
import { IntFifoSet } from '../util/int-fifo-set.js';
import type { GcResult } from './gc.js';
import { type DeletionGroup, GcFailures, chunkDeletions, forEachColumn } from './gc-rows.js';
import { DATA, NOTIFY, WRITE, decodeWrite, exactColumn } from './layout.js';

/** What the committer reports after a commit: the cells it wrote and whether every cell committed. */
export interface CommittedTxn {
  readonly startTs: number;
  readonly rows: readonly {
    readonly table: string;
    readonly row: Uint8Array;
    /** The encoded system qualifiers of the row's committed columns. */
    readonly cells: readonly { readonly q: Uint8Array }[];
  }[];
  /** Every secondary's commit record was written by the committer (none left to readers). */
  readonly complete: boolean;
}

/** Dirty columns, per table and row (keys and qualifiers as latin1 strings). */
export type DirtySet = Map<string, Map<string, Set<string>>>;

// FNV-1a, with a separator after each part so that ("ab", "c") and ("a", "bc") differ.
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const SMI_MASK = 0x3fffffff;
function hashString(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
  return Math.imul(h ^ 0x100, FNV_PRIME);
}
function hashBytes(h: number, b: Uint8Array): number {
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ (b[i] as number), FNV_PRIME);
  return Math.imul(h ^ 0x100, FNV_PRIME);
}

/**
 * Cells remembered as committed once (`seen`): a column is collected here only if its second
 * commit comes before its first is forgotten. And completely committed transactions remembered
 * (`done`): an older version is collected here only if its transaction still is. Together they
 * decide how much waits for a full pass. At 100 000 each, a web index re-crawled at 100 documents
 * a second (~4 500 cells, ~250 transactions a second) forgets a cell after ~22 s and a transaction
 * after ~7 minutes: 10 minutes of `bench soak --docs 20000 --rate 100 --full-gc-interval-ms 0`
 * left 3.68 M versions to the final full pass (88 s). With 2 Mi cells and 1 Mi transactions
 * (2026-12-03): 140 498 (20 s), the store 186 MiB at the end instead of 367 — but the web index
 * at 100 000 documents, which runs no full pass, spent 10–13 % more CPU a document collecting
 * what it used to leave (424 and 381 docs/s against 468 and 447; BENCHMARKS.md). So these stay
 * the defaults, and a long-running process asks for more (Percolator's `recentGcWindows`, which
 * `percolator worker` sets): both sets take their memory as they fill (int-fifo-set.ts), ~14
 * bytes a cell and ~26 bytes a transaction.
 */
export const SEEN_CELLS = 100_000;
export const DONE_TRANSACTIONS = 100_000;

/** What `percolator worker` asks the targeted GC to remember (Percolator's `recentGcWindows`). */
export const LONG_RUNNING_GC_WINDOWS = { cells: 1 << 21, transactions: 1 << 20 } as const;

/** RecentCommits' bounds: `transactions` done, `dirtyCells` dirty columns, `cells` seen once. */
export interface RecentBounds {
  readonly transactions?: number;
  readonly dirtyCells?: number;
  readonly cells?: number;
}

export class RecentCommits {
  /** Start timestamps of completely committed transactions (the newest `transactions`). */
  private readonly done: IntFifoSet;
  /** No reference to the committers' buffers: keys are strings. */
  private dirty: DirtySet = new Map();
  private dirtyCount = 0;
  /**
   * Hashes of the cells committed here at least once (the newest `cells`): small integers, not
   * `table\0row\0q` strings built and hashed for every committed cell. A collision only makes a
   * cell's first commit count as a second one (an extra read in the next pass). In typed arrays
   * (int-fifo-set.ts): as a `Set`, a delete and an add per new cell once full were 1.5 % of the web
   * index's JS thread.
   */
  private readonly seen: IntFifoSet;
  /** Something was forgotten (a bound was hit) since the last full pass. */
  overflowed = false;
  /** How many times something was forgotten: a full pass clears only what it started after. */
  private forgotten = 0;

  private readonly maxCells: number;

  constructor(bounds: RecentBounds = {}) {
    this.maxCells = bounds.dirtyCells ?? 100_000;
    this.done = new IntFifoSet(bounds.transactions ?? DONE_TRANSACTIONS, { wide: true });
    this.seen = new IntFifoSet(bounds.cells ?? SEEN_CELLS);
  }

  /**
   * A column's first commit seen here makes no version of ours collectable (a version is
   * collected only under a newer one of the same column), so it is only remembered; from the
   * second on it is dirty. This keeps write-once cells (new documents, posting-list entries) out
   * of the passes. A forgotten cell's next commit is taken for a first one (it is collected from
   * the third on).
   */
  record(c: CommittedTxn): void {
    if (c.complete && this.done.add(c.startTs)) this.forgot();
    for (const r of c.rows) {
      const rowHash = hashBytes(hashString(FNV_OFFSET, r.table), r.row);
      let row: string | null = null;
      for (const cell of r.cells) {
        const k = hashBytes(rowHash, cell.q) & SMI_MASK;
        if (this.seen.has(k)) this.markDirty(r.table, (row ??= bytesKey(r.row)), bytesKey(cell.q));
        else this.seen.add(k);
      }
    }
  }

  /** Marks one column (latin1 row key and qualifier) for the next pass. */
  markDirty(table: string, row: string, q: string): void {
    let rows = this.dirty.get(table);
    if (rows === undefined) this.dirty.set(table, (rows = new Map()));
    let cols = rows.get(row);
    if (cols?.has(q) === true) return;
    if (this.dirtyCount >= this.maxCells) {
      this.forgot();
      return;
    }
    if (cols === undefined) rows.set(row, (cols = new Set()));
    cols.add(q);
    this.dirtyCount++;
  }

  isDone(startTs: number): boolean {
    return this.done.has(startTs);
  }

  /** Dirty columns waiting for the next pass. */
  get dirtyCells(): number {
    return this.dirtyCount;
  }

  /**
   * Hands over the dirty columns — at most about `maxCells` of them, whole rows — and keeps the
   * rest for the next pass.
   */
  take(maxCells = Number.POSITIVE_INFINITY): DirtySet {
    const d = this.dirty;
    this.dirty = new Map();
    if (this.dirtyCount <= maxCells) {
      this.dirtyCount = 0;
      return d;
    }
    // Split in one walk into fresh maps (deleting from the front of a Map would leave V8's
    // deleted slots for the next walk to step over).
    const taken: DirtySet = new Map();
    let n = 0;
    for (const [table, rows] of d) {
      for (const [row, cols] of rows) {
        const into = n < maxCells ? taken : this.dirty;
        let t = into.get(table);
        if (t === undefined) into.set(table, (t = new Map()));
        t.set(row, cols);
        if (into === taken) n += cols.size;
      }
    }
    this.dirtyCount -= n;
    return taken;
  }

  private forgot(): void {
    this.overflowed = true;
    this.forgotten++;
  }

  /** Taken when a full pass starts, for `fullPassDone`. */
  fullPassMark(): number {
    return this.forgotten;
  }

  /**
   * A full pass that started at `mark` has collected whatever the bounds made this set forget
   * before it started. What was forgotten since (targeted passes go on during a full one) is
   * newer than its watermark: the flag stays, and the next full pass is due at once.
   */
  fullPassDone(mark = this.forgotten): void {
    if (mark === this.forgotten) this.overflowed = false;
  }
}

/**
 * One row's deletions (write cells in canonical order: per column, newest first): the versions
 * older than the one visible at `watermark` whose transactions `isDone`, one group per version
 * (its write record, then its `data` cell: deleted together). `pending` says the row holds
 * versions that may become collectable once the watermark passes its newer ones.
 *
 * `tombstones`: columns whose visible version is a delete of a done transaction with every older
 * version among `deletions` (rollback records aside), each with the group that deletes that
 * delete record too. Once those go, a reader at or above the watermark finds no version where it
 * found a delete: the same nothing (TiKV's GC drops such a delete as well). They are not in
 * `deletions`: the caller first makes sure no strong notification of the column is pending (an
 * observer compares the column's visible commit with its ack, and would take "no version" for a
 * change already processed).
 */
export function recentVersions(
  cells: readonly Cell[],
  watermark: number,
  isDone: (startTs: number) => boolean,
): { deletions: DeletionGroup[]; versions: number; pending: boolean; tombstones: Tombstone[] } {
  const deletions: DeletionGroup[] = [];
  const tombstones: Tombstone[] = [];
  let pending = false;
  forEachColumn(cells, (q, i, j) => {
    let kept: Cell | null = null;
    let keptDeleteDone = false;
    let newerThanWatermark = false;
    for (let k = i; k < j; k++) {
      const c = cells[k] as Cell;
      const w = decodeWrite(c.value);
      if (w.kind === 'rollback') continue;
      if (kept === null) {
        if (c.timestamp > watermark) {
          newerThanWatermark = true;
          continue;
        }
        kept = c; // the version a reader at the watermark sees
        keptDeleteDone = w.kind === 'delete' && isDone(w.startTs);
        continue;
      }
      if (!isDone(w.startTs)) {
        keptDeleteDone = false; // an older version stays: the delete must keep hiding it
        continue;
      }
      const mutations: Mutation[] = [{ deleteFromColumn: { familyName: WRITE, columnQualifier: q, timeRange: at(c.timestamp) } }];
      if (w.value.mode === 'data') mutations.push({ deleteFromColumn: { familyName: DATA, columnQualifier: q, timeRange: at(w.startTs) } });
      deletions.push({ mutations, versions: 1 });
    }
    if (kept !== null && keptDeleteDone) {
      const mutations: Mutation[] = [{ deleteFromColumn: { familyName: WRITE, columnQualifier: q, timeRange: at(kept.timestamp) } }];
      tombstones.push({ q, group: { mutations, versions: 1 } });
    }
    // Older versions under a newer one the watermark has not passed yet: look again next pass.
    if (newerThanWatermark && j - i > 1) pending = true;
  });
  return { deletions, versions: deletions.length, pending, tombstones };
}

/** A column whose visible version is a delete that can go with its older versions (recentVersions). */
export interface Tombstone {
  readonly q: Uint8Array;
  readonly group: DeletionGroup;
}

const at = (ts: number) => ({ startTimestampMicros: ts, endTimestampMicros: ts + 1 });

/** The families a pass reads on an embedded store to find pending strong notifications. */
const NOTIFY_ONLY: readonly string[] = Object.freeze([NOTIFY]);

/**
 * The columns among `qualifiers` (encoded) with a strong notification pending in `row`, as latin1
 * strings. A strong notify cell is written with (or before, by a secondary's prewrite) the commit
 * it announces and deleted only after the observers processed it, so a column without one has no
 * unprocessed change at or below the watermark.
 */
export async function pendingNotifications(
  store: Store,
  sync: AtomicRowsStore | null,
  table: string,
  row: Uint8Array,
  qualifiers: readonly Uint8Array[],
): Promise<Set<string>> {
  const wanted = new Set(qualifiers.map((q) => bytesKey(q)));
  const cells =
    sync !== null
      ? sync.readCellsSync(table, row, NOTIFY_ONLY)
      : ((await store.readRow(table, row, cellsOf(NOTIFY, qualifiers)))?.cells ?? []);
  const out = new Set<string>();
  for (const c of cells) {
    if (c.family !== NOTIFY) continue;
    const q = bytesKey(c.qualifier);
    if (wanted.has(q)) out.add(q);
  }
  return out;
}

/** The cells of one family in the given columns (encoded qualifiers). */
function cellsOf(family: string, qualifiers: readonly Uint8Array[]): RowFilter {
  const branches = qualifiers.map((q) => exactColumn(family, q));
  return branches.length === 1 ? (branches[0] as RowFilter) : { interleave: branches };
}

/**
 * Rows a pass works on at once: on an embedded store its reads are synchronous and 32 keep the
 * deferred writes flowing; over a network each row waits for a read and a write, and the stores'
 * batchers (bigtable/*-batcher.ts) put the rows of one event-loop turn in one call, so a wider
 * pool fills each call — a pass of 10 000 columns then takes a few round trips, not ~300.
 */
const WIDTH = 32;
export const REMOTE_WIDTH = 256;
const DEFERRED = { durability: 'deferred' } as const;

/** The families a pass reads on an embedded store (one constant array: the store remembers its groups). */
const WRITE_ONLY: readonly string[] = Object.freeze([WRITE]);

/**
 * The write cells of the given columns in one row. An embedded store (`sync`) answers from its
 * cached row, picked here: a filter built for each row's set of columns would be compiled for each.
 */
async function readWriteCells(
  store: Store,
  sync: AtomicRowsStore | null,
  table: string,
  row: Uint8Array,
  qualifiers: ReadonlySet<string>,
): Promise<readonly Cell[]> {
  if (sync === null) return (await store.readRow(table, row, writeCellsOf(qualifiers)))?.cells ?? [];
  return sync.readCellsSync(table, row, WRITE_ONLY).filter((c) => c.family === WRITE && qualifiers.has(bytesKey(c.qualifier)));
}

/** The write cells of the given columns (qualifiers as latin1 strings). */
function writeCellsOf(qualifiers: ReadonlySet<string>): RowFilter {
  return cellsOf(
    WRITE,
    [...qualifiers].map((q) => Buffer.from(q, 'latin1')),
  );
}

/**
 * Collects the dirty columns of `recent` at `watermark` (the oracle's GC watermark), reading
 * only those columns' write cells; at most about `maxCells` columns per call (the rest waits).
 * Deletions are deferred writes, up to 32 rows at once (REMOTE_WIDTH on a store without
 * synchronous reads; a lost deletion only leaves a version the next pass or a full pass collects);
 * a row's go in as many row mutations as the store's per-row limit needs, each version's record
 * and `data` cell together (gc-rows.ts).
 * Returns: what it did (`locksResolved` is always 0: it never touches locks).
 * Throws: GC_INCOMPLETE when some rows failed (the first one's error as its `cause`), after the
 * other rows were collected; the failed rows' columns are marked dirty again, and so are those of
 * the rows a pass that gave up (too many failures) left.
 */
export async function collectRecent(
  store: Store,
  recent: RecentCommits,
  watermark: number,
  maxCells = Number.POSITIVE_INFINITY,
): Promise<GcResult> {
  const dirty = recent.take(maxCells);
  const sync = atomicRowsOf(store);
  const limit = store.limits.maxMutationsPerRow;
  let versionsRemoved = 0;
  let rowsRewritten = 0;
  const failures = new GcFailures();
  const pool = new BoundedPool(sync === null ? REMOTE_WIDTH : WIDTH);
  const again = (table: string, row: string, cols: ReadonlySet<string>): void => {
    for (const q of cols) recent.markDirty(table, row, q);
  };
  for (const [table, rows] of dirty) {
    for (const [key, cols] of rows) {
      if (failures.stop()) {
        again(table, key, cols);
        continue;
      }
      await pool.add(async () => {
        const row = Buffer.from(key, 'latin1');
        try {
          const cells = await readWriteCells(store, sync, table, row, cols);
          const { deletions, pending, tombstones } = recentVersions(cells, watermark, (ts) => recent.isDone(ts));
          if (pending) again(table, key, cols);
          if (tombstones.length > 0) {
            // After the older versions (a crash that loses a deferred deletion loses the later ones
            // with it); a delete whose change an observer has not processed yet waits for a full pass.
            const notified = await pendingNotifications(
              store,
              sync,
              table,
              row,
              tombstones.map((t) => t.q),
            );
            for (const t of tombstones) if (!notified.has(bytesKey(t.q))) deletions.push(t.group);
          }
          if (deletions.length === 0) return;
          for (const chunk of chunkDeletions(deletions, limit)) {
            await store.mutateRow(table, row, chunk.mutations, DEFERRED);
            versionsRemoved += chunk.versions;
          }
          rowsRewritten++;
        } catch (e) {
          again(table, key, cols);
          failures.add(table, row, e);
        }
      });
    }
  }
  await pool.drain();
  const result = { watermark, effectiveWatermark: watermark, locksResolved: 0, versionsRemoved, rowsRewritten };
  const incomplete = failures.error('recent', result);
  if (incomplete !== null) throw incomplete;
  return result;
}
