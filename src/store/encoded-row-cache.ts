/**
 * The row cache's second tier: rows the decoded tier (row-cache.ts) evicted, kept as their encoded
 * bytes. A decoded row costs its cells' objects and views on the heap (~270 bytes a cell, ten times
 * the encoded size of Percolator's small lock and write cells); the encoded row costs its bytes and
 * a map slot. So a few MiB here hold as many rows as tens of MiB of decoded cache, and a hit costs
 * a copy and a decode (a few µs) instead of an engine read (7–20 µs through LevelDB's block cache,
 * far more once its table cache thrashes).
 *
 * The bytes live in one ring buffer written in order, not in a buffer per row: rows held for
 * seconds and then dropped are what a generational collector handles worst, and a buffer object
 * per row (with its ArrayBuffer and backing-store record) grew the heap of the web index by ~2.7 MiB
 * per MiB of budget (peak RSS +150 MiB for a 32 MiB tier at 8 000 documents). In the ring a row
 * costs no object at all: the map holds its absolute position (a number). Eviction is the ring's
 * order (FIFO by demotion): a row is gone once the ring has been written a full lap past it.
 *
 * Memory: the ring (half the budget, allocated on first use) plus the map. Every row is charged
 * its bytes, its key and a map slot's worth of ring space, so the map's live entries cost at most
 * the other half; entries of rows overwritten are swept when the map has doubled.
 *
 * Invariants (kept by RowCache, the only user): an entry holds exactly what the engine holds for
 * its key; a key is never in both tiers; setting or deleting a key in the decoded tier deletes it
 * here. `take` removes what it returns (the caller promotes it). Single-threaded.
 */

/** An absent row (cached too: Percolator reads many absent lock cells). */
export const ABSENT_ROW: Uint8Array = new Uint8Array(0);

/**
 * Ring space charged per row besides its bytes and key: what a map slot and the key string's
 * header cost on the heap, so that the map's live part stays within half the budget.
 */
export const ENCODED_ENTRY_OVERHEAD_BYTES = 96;

/** Each row's length precedes it in the ring (0: absent — an encoded row is never empty). */
const HEADER_BYTES = 4;

export class EncodedRowCache {
  /** Physical ring size: half the budget (the map gets the other half). */
  private readonly ringBytes: number;
  private ring: Buffer | null = null;
  /** Key → absolute ring position of its row's header. Stale once `head - position > ringBytes`. */
  private readonly map = new Map<string, number>();
  /** Absolute position of the next write: ring space charged so far, ever growing. */
  private head = 0;
  private sweepAt = 1024;

  constructor(budgetBytes: number) {
    this.ringBytes = Math.max(0, Math.floor(budgetBytes / 2));
  }

  /** Caches the encoded row `raw` (ABSENT_ROW: the row is absent) under `key`. */
  put(key: string, raw: Uint8Array): void {
    if (this.ringBytes <= 0) return;
    const written = HEADER_BYTES + raw.byteLength;
    const charged = written + key.length + ENCODED_ENTRY_OVERHEAD_BYTES;
    if (charged > this.ringBytes / 4) {
      this.map.delete(key);
      return;
    }
    this.ring ??= Buffer.allocUnsafeSlow(this.ringBytes);
    let at = this.head % this.ringBytes;
    if (at + written > this.ringBytes) {
      // No row wraps: skip the lap's tail (it counts as written over).
      this.head += this.ringBytes - at;
      at = 0;
    }
    this.ring.writeUInt32LE(raw.byteLength, at);
    this.ring.set(raw, at + HEADER_BYTES);
    this.map.set(key, this.head);
    this.head += charged;
    if (this.map.size > this.sweepAt) this.sweep();
  }

  /** The cached encoded row of `key` (ABSENT_ROW: absent), removed from this tier; undefined if not cached. */
  take(key: string): Uint8Array | undefined {
    const pos = this.map.get(key);
    if (pos === undefined) return undefined;
    this.map.delete(key);
    if (!this.holds(pos)) return undefined;
    const ring = this.ring as Buffer;
    const at = pos % this.ringBytes;
    const length = ring.readUInt32LE(at);
    if (length === 0) return ABSENT_ROW;
    // A copy of its own: the caller's decoded cells are views into it, and the ring moves on.
    const out = Buffer.allocUnsafeSlow(length);
    ring.copy(out, 0, at + HEADER_BYTES, at + HEADER_BYTES + length);
    return out;
  }

  delete(key: string): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
    this.head += this.ringBytes; // nothing written before is valid any more
  }

  /** Rows held (for tests; O(entries)). */
  get size(): number {
    let n = 0;
    for (const pos of this.map.values()) if (this.holds(pos)) n++;
    return n;
  }

  /** The row at absolute position `pos` has not been written over: the ring has not lapped it. */
  private holds(pos: number): boolean {
    return this.head - pos <= this.ringBytes;
  }

  private sweep(): void {
    for (const [key, pos] of this.map) if (!this.holds(pos)) this.map.delete(key);
    this.sweepAt = Math.max(1024, 2 * this.map.size);
  }
}
