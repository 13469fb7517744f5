/**
 * The row cache's second tier: rows the decoded tier (row-cache.ts) evicted, kept as their encoded
 * bytes. A decoded row costs its cells' objects and views on the heap (~270 bytes a cell, ten times
 * the encoded size of Percolator's small lock and write cells) and, through the garbage
 * collector's headroom, about twice that in RSS; the encoded row costs its bytes and one small
 * entry. So a few MiB here hold as many rows as tens of MiB of decoded cache, and a hit costs a
 * decode (a few µs) instead of an engine read (7–20 µs through LevelDB's block cache or its files).
 *
 * Invariants (kept by RowCache, the only user): an entry holds exactly what the engine holds for
 * its key; a key is never in both tiers; setting or deleting a key in the decoded tier deletes it
 * here. `take` removes what it returns (the caller promotes it), so the eviction order is simply
 * the order of demotion (FIFO). Single-threaded.
 */
import { Queue } from '../util/queue.js';

/** An absent row (cached too: Percolator reads many absent lock cells). */
export const ABSENT_ROW: Uint8Array = new Uint8Array(0);

/**
 * Memory one entry costs besides its bytes and key: the entry object, the map slot, the
 * Uint8Array and its ArrayBuffer and backing-store record (measured: 200 000 entries of 50 and of
 * 1 200 bytes, heap plus external memory after a forced GC, ~330 bytes an entry both times).
 */
export const ENCODED_ENTRY_OVERHEAD_BYTES = 330;

interface Entry {
  readonly key: string;
  /** Emptied when the entry dies: the queue may hold a dead entry for a while and must not keep its bytes. */
  raw: Uint8Array;
  readonly bytes: number;
  live: boolean;
}

export class EncodedRowCache {
  private readonly map = new Map<string, Entry>();
  private readonly order = new Queue<Entry>();
  private bytes = 0;

  constructor(private readonly budgetBytes: number) {}

  /** Caches the encoded row `raw` (ABSENT_ROW: the row is absent) under `key`. */
  put(key: string, raw: Uint8Array): void {
    if (this.budgetBytes <= 0) return;
    this.delete(key);
    const bytes = raw.byteLength + key.length + ENCODED_ENTRY_OVERHEAD_BYTES;
    if (bytes > this.budgetBytes / 4) return;
    const e: Entry = { key, raw, bytes, live: true };
    this.map.set(key, e);
    this.order.push(e);
    this.bytes += bytes;
    while (this.bytes > this.budgetBytes) {
      const oldest = this.order.shift();
      if (oldest === undefined) break;
      if (oldest.live) this.drop(oldest);
    }
    if (this.order.size > 2 * this.map.size + 1024) this.order.retain((x) => x.live);
  }

  /** The cached encoded row of `key` (ABSENT_ROW: absent), removed from this tier; undefined if not cached. */
  take(key: string): Uint8Array | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    const raw = e.raw;
    this.drop(e);
    return raw;
  }

  delete(key: string): void {
    const e = this.map.get(key);
    if (e !== undefined) this.drop(e);
  }

  clear(): void {
    for (const e of this.map.values()) e.live = false;
    this.map.clear();
    this.order.drain();
    this.bytes = 0;
  }

  get size(): number {
    return this.map.size;
  }

  private drop(e: Entry): void {
    e.live = false;
    e.raw = ABSENT_ROW;
    this.map.delete(e.key);
    this.bytes -= e.bytes;
  }
}
