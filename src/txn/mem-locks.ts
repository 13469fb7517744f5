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
import type { BufferedRow } from './actions/types.js';

interface Entry {
  readonly startTs: number;
  readonly qualifiers: readonly Uint8Array[];
  readonly done: Promise<void>;
}

export class MemLocks {
  /** table → row key (latin1) → the commits holding locks there. */
  private readonly tables = new Map<string, Map<string, Entry[]>>();
  private count = 0;

  /** Locks every cell of `rows` for the commit of `startTs`; returns the release function. */
  acquire(startTs: number, rows: readonly BufferedRow[]): () => void {
    let end!: () => void;
    const done = new Promise<void>((resolve) => {
      end = resolve;
    });
    const placed: [Map<string, Entry[]>, string, Entry][] = [];
    for (const r of rows) {
      let byRow = this.tables.get(r.table);
      if (byRow === undefined) this.tables.set(r.table, (byRow = new Map()));
      const k = bytesKey(r.row);
      const entry: Entry = { startTs, qualifiers: r.cells.map((c) => c.q), done };
      const list = byRow.get(k);
      if (list === undefined) byRow.set(k, [entry]);
      else list.push(entry);
      placed.push([byRow, k, entry]);
      this.count++;
    }
    return () => {
      for (const [byRow, k, entry] of placed) {
        const list = byRow.get(k);
        if (list === undefined) continue;
        const i = list.indexOf(entry);
        if (i < 0) continue;
        list.splice(i, 1);
        this.count--;
        if (list.length === 0) byRow.delete(k);
      }
      end();
    };
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
    const list = this.tables.get(table)?.get(typeof row === 'string' ? row : bytesKey(row));
    if (list === undefined) return null;
    for (const e of list) {
      if (e.startTs >= ts) continue; // commits above its start ts, invisible to this reader
      if (qualifiers === null || overlaps(e.qualifiers, qualifiers)) return e.done;
    }
    return null;
  }

  /** Like `blocking`, for any row of the table (scans). */
  blockingTable(table: string, ts: number): Promise<void> | null {
    if (this.count === 0) return null;
    const byRow = this.tables.get(table);
    if (byRow === undefined) return null;
    for (const list of byRow.values()) for (const e of list) if (e.startTs < ts) return e.done;
    return null;
  }
}

function overlaps(a: readonly Uint8Array[], b: readonly Uint8Array[]): boolean {
  for (const x of a) for (const y of b) if (compareBytes(x, y) === 0) return true;
  return false;
}

const byStore = new WeakMap<Store, MemLocks>();

/** The in-memory locks of `store` (one table per store object, whoever opened Percolator on it). */
export function memLocksOf(store: Store): MemLocks {
  let m = byStore.get(store);
  if (m === undefined) byStore.set(store, (m = new MemLocks()));
  return m;
}
