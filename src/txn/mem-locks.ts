/**
 * In-memory locks of the one-phase commits in flight in this process (commit-one-phase.ts).
 *
 * A one-phase commit writes no lock cells: its rows go from "not written" to "committed at
 * commitTs" in one atomic store write. Percolator's snapshot guarantee still needs what a lock
 * gives readers: a reader whose start ts r is above the commit ts must see the commit. So the
 * committer takes these locks BEFORE it asks for its commit ts and drops them only AFTER the
 * write is visible; a reader looks for them (for its columns, with start ts below r) right
 * before it reads the store, and waits for them to end.
 *
 * Why that suffices: if a reader finds no lock of transaction T, then either T's write is already
 * visible, or T takes its lock after the reader looked — after the reader got r — and so gets a
 * commit ts above r, which the reader must not see anyway. Only readers of this process can look,
 * which is why one-phase commits are used only while the store is not shared (AtomicRowsStore).
 *
 * Write-write conflicts are not decided here: the atomic store write checks them, exactly as a
 * prewrite does. These locks only order readers.
 *
 * Concurrency contract: single JS thread. `blocking*` are synchronous, so a reader's check and
 * its (synchronously started) store read happen in one step. One instance per store object
 * (`memLocksOf`), shared by every Percolator in the process that uses that store.
 */
import { bytesKey, compareBytes } from '../store/bytes.js';
import type { Store } from '../store/store.js';
import type { BufferedCell, BufferedRow } from './actions/types.js';

interface Entry {
  readonly startTs: number;
  /** The row's cells as the commit buffered them (their `q`: the locked qualifiers). */
  readonly cells: readonly BufferedCell[];
  readonly done: Promise<void>;
}

/** A row's locks: most rows are locked by one commit at a time, held without an array. */
type Slot = Entry | Entry[];

export class MemLocks {
  /** table → row key (latin1) → the commits holding locks there. */
  private readonly tables = new Map<string, Map<string, Slot>>();
  private count = 0;

  /** Locks every cell of `rows` for the commit of `startTs`; returns the release function. */
  acquire(startTs: number, rows: readonly BufferedRow[]): () => void {
    let end!: () => void;
    const done = new Promise<void>((resolve) => {
      end = resolve;
    });
    // (row map, row key, entry) for each row, flat: one array however many rows.
    const placed: (Map<string, Slot> | string | Entry)[] = [];
    for (const r of rows) {
      let byRow = this.tables.get(r.table);
      if (byRow === undefined) this.tables.set(r.table, (byRow = new Map()));
      const k = r.rowKey ?? bytesKey(r.row);
      const entry: Entry = { startTs, cells: r.cells, done };
      const slot = byRow.get(k);
      if (slot === undefined) byRow.set(k, entry);
      else if (Array.isArray(slot)) slot.push(entry);
      else byRow.set(k, [slot, entry]);
      placed.push(byRow, k, entry);
      this.count++;
    }
    return () => {
      for (let i = 0; i < placed.length; i += 3)
        this.remove(placed[i] as Map<string, Slot>, placed[i + 1] as string, placed[i + 2] as Entry);
      end();
    };
  }

  private remove(byRow: Map<string, Slot>, k: string, entry: Entry): void {
    const slot = byRow.get(k);
    if (slot === entry) {
      byRow.delete(k);
      this.count--;
      return;
    }
    if (!Array.isArray(slot)) return;
    const i = slot.indexOf(entry);
    if (i < 0) return;
    slot.splice(i, 1);
    this.count--;
    if (slot.length === 1) byRow.set(k, slot[0] as Entry);
  }

  /**
   * Resolves once every commit holding locks now has ended. Commits that lock later are not waited
   * for: a caller that has just made new commits take two phases (`markShared`) waits here for the
   * one-phase commits that chose their protocol before (startServer).
   */
  settled(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    const pending = new Set<Promise<void>>();
    for (const byRow of this.tables.values()) {
      for (const slot of byRow.values()) {
        if (!Array.isArray(slot)) pending.add(slot.done);
        else for (const e of slot) pending.add(e.done);
      }
    }
    return Promise.all(pending).then(() => undefined);
  }

  /** Locked cells (for tests and status). */
  get size(): number {
    return this.count;
  }

  /**
   * A commit that may land below `ts` and holds one of `qualifiers` of the row (all columns when
   * null): the promise of its end. Null when the reader may read the store now. `row` as bytes or
   * as its bytesKey.
   */
  blocking(table: string, row: Uint8Array | string, qualifiers: readonly Uint8Array[] | null, ts: number): Promise<void> | null {
    if (this.count === 0) return null;
    const slot = this.tables.get(table)?.get(typeof row === 'string' ? row : bytesKey(row));
    if (slot === undefined) return null;
    if (!Array.isArray(slot)) return blocks(slot, qualifiers, ts) ? slot.done : null;
    for (const e of slot) if (blocks(e, qualifiers, ts)) return e.done;
    return null;
  }

  /** Like `blocking`, for any row of the table (scans). */
  blockingTable(table: string, ts: number): Promise<void> | null {
    if (this.count === 0) return null;
    const byRow = this.tables.get(table);
    if (byRow === undefined) return null;
    for (const slot of byRow.values()) {
      if (!Array.isArray(slot)) {
        if (slot.startTs < ts) return slot.done;
        continue;
      }
      for (const e of slot) if (e.startTs < ts) return e.done;
    }
    return null;
  }
}

/** `e` may land below `ts` (commits above a reader's start ts are invisible to it) and holds one of `qualifiers` (null: any). */
function blocks(e: Entry, qualifiers: readonly Uint8Array[] | null, ts: number): boolean {
  return e.startTs < ts && (qualifiers === null || overlaps(e.cells, qualifiers));
}

function overlaps(a: readonly BufferedCell[], b: readonly Uint8Array[]): boolean {
  for (const x of a) for (const y of b) if (compareBytes(x.q, y) === 0) return true;
  return false;
}

const byStore = new WeakMap<Store, MemLocks>();

/** The in-memory locks of `store` (one table per store object, whoever opened Percolator on it). */
export function memLocksOf(store: Store): MemLocks {
  let m = byStore.get(store);
  if (m === undefined) byStore.set(store, (m = new MemLocks()));
  return m;
}
