/**
 * The row cache's second tier: rows the decoded tier (row-cache.ts) evicted, and rows the store
 * just wrote (`RowCache.setEncoded`), kept as their encoded bytes. A decoded row costs its cells'
 * objects and views on the heap (~270 bytes a cell, ten times the encoded size of Percolator's
 * small lock and write cells); the encoded row costs its bytes, its key's bytes and a slot of an
 * index. So a few MiB here hold as many rows as tens of MiB of decoded cache, and a hit costs a
 * copy and a decode (a few µs) instead of an engine read (7–20 µs through LevelDB's block cache,
 * 40 µs and more once the database outgrows it).
 *
 * Nothing here is a heap object per row. The rows live in one ring buffer written in order, each
 * record its row's length, its key and its bytes: rows held for seconds and then dropped are what a
 * generational collector handles worst (a buffer object per row grew the web index's heap by
 * ~2.7 MiB per MiB of budget). The index is an open-addressing hash table in two typed arrays
 * (ring position, key hash), probed linearly, keys compared against the ring. It replaced a `Map`
 * from key strings to positions, which at 100 000 web-index documents held ~10^6 entries: its
 * lookups and inserts were ~5 % of the JS thread (cache misses in a hash table of that size, and the
 * key strings' hashing), every full garbage collection marked its entries and keys, and each row
 * was charged ~96 bytes for its map slot — as much as a small row (a posting) itself.
 *
 * Eviction is the ring's order (FIFO by demotion): a record is gone once the ring has been written
 * a full lap past it. Index slots of records the ring overwrote are dropped when a lookup meets
 * them or when the table is rebuilt (on growth, or once tombstones fill it).
 *
 * Memory: the ring (three quarters of the budget, allocated on first use) plus the index (12 bytes
 * a slot, at most half full, grown by doubling up to a quarter of the budget; when full at that
 * size, the older half of the ring is given up).
 *
 * Keys are the store's byte strings (bytes.ts `bytesKey`: one char per byte); a key with a char
 * above 0xFF or longer than 0xFFFF is never cached.
 *
 * Invariants (kept by RowCache, the only user): an entry holds exactly what the engine holds for
 * its key; a key is never in both tiers; setting or deleting a key in the decoded tier deletes it
 * here. `take` removes what it returns (the caller promotes it). Single-threaded.
 */

/** An absent row (cached too: Percolator reads many absent lock cells). */
export const ABSENT_ROW: Uint8Array = new Uint8Array(0);

/** A record's header: the row's length (u32, 0: absent — an encoded row is never empty) and the key's (u16). */
const HEADER_BYTES = 6;
const MAX_KEY_CHARS = 0xffff;
/** Bytes of ring a row takes: its header, its key (one byte a char) and its bytes. */
export const encodedRecordBytes = (key: string, rowBytes: number): number => HEADER_BYTES + key.length + rowBytes;
/** The ring's share of the budget (the index may take the rest). */
export const encodedRingBytes = (budgetBytes: number): number => Math.max(0, Math.floor((budgetBytes * 3) / 4));

const EMPTY = 0;
const TOMBSTONE = -1;
/** Bytes of one index slot: a Float64 position and an Int32 hash. */
const SLOT_BYTES = 12;
const MIN_SLOTS = 64;

export class EncodedRowCache {
  private readonly ringBytes: number;
  private ring: Buffer | null = null;
  /** Absolute position of the next write: ring bytes written so far, ever growing. */
  private head = 0;
  /** Records below this absolute position are gone (raised by `clear` and when the index is full at its largest). */
  private floor = 0;
  private readonly maxSlots: number;
  /** Slot → 1 + absolute ring position of a record (EMPTY, TOMBSTONE). */
  private slots: Float64Array;
  /** Slot → hash of its record's key. */
  private hashes: Int32Array;
  private mask: number;
  /** Slots not EMPTY (records and tombstones): probing stops only at an empty slot. */
  private used = 0;

  constructor(budgetBytes: number) {
    this.ringBytes = encodedRingBytes(budgetBytes);
    let max = MIN_SLOTS;
    while (max * 2 * SLOT_BYTES <= budgetBytes / 4) max *= 2;
    this.maxSlots = max;
    this.slots = new Float64Array(this.ringBytes > 0 ? MIN_SLOTS : 0);
    this.hashes = new Int32Array(this.slots.length);
    this.mask = this.slots.length - 1;
  }

  /** The tier has a budget (otherwise it caches nothing). */
  get enabled(): boolean {
    return this.ringBytes > 0;
  }

  /** Caches the encoded row `raw` (ABSENT_ROW: the row is absent) under `key`. */
  put(key: string, raw: Uint8Array): void {
    if (this.ringBytes <= 0) return;
    const h = hashOf(key);
    const kl = key.length;
    const written = HEADER_BYTES + kl + raw.byteLength;
    if (h === UNCACHEABLE || kl > MAX_KEY_CHARS || written > this.ringBytes / 4) {
      this.remove(key, h); // the key's old record must not outlive this put
      return;
    }
    // One probe finds both the key's old record and the slot for the new one (most puts are of
    // rows the tier does not hold: a written row was taken from it to be rewritten).
    let s = this.slotFor(key, h);
    if (s < 0) {
      this.rebuild();
      s = this.slotFor(key, h);
    }
    const ring = (this.ring ??= Buffer.allocUnsafeSlow(this.ringBytes));
    let at = this.head % this.ringBytes;
    if (at + written > this.ringBytes) {
      // No record wraps: skip the lap's tail (it counts as written over).
      this.head += this.ringBytes - at;
      at = 0;
    }
    ring.writeUInt32LE(raw.byteLength, at);
    ring.writeUInt16LE(kl, at + 4);
    const k0 = at + HEADER_BYTES;
    for (let i = 0; i < kl; i++) ring[k0 + i] = key.charCodeAt(i);
    if (raw.byteLength > 0) ring.set(raw, k0 + kl);
    if (this.slots[s] === EMPTY) this.used++;
    this.slots[s] = this.head + 1;
    this.hashes[s] = h;
    this.head += written;
  }

  /** The cached encoded row of `key` (ABSENT_ROW: absent), removed from this tier; undefined if not cached. */
  take(key: string): Uint8Array | undefined {
    if (this.ringBytes <= 0) return undefined;
    const h = hashOf(key);
    const s = this.find(key, h);
    if (s < 0) return undefined;
    const pos = (this.slots[s] as number) - 1;
    this.slots[s] = TOMBSTONE;
    const ring = this.ring as Buffer;
    const at = pos % this.ringBytes;
    const length = ring.readUInt32LE(at);
    if (length === 0) return ABSENT_ROW;
    const start = at + HEADER_BYTES + key.length;
    // A copy of its own: the caller's decoded cells are views into it, and the ring moves on.
    const out = Buffer.allocUnsafeSlow(length);
    ring.copy(out, 0, start, start + length);
    return out;
  }

  delete(key: string): void {
    if (this.ringBytes > 0) this.remove(key, hashOf(key));
  }

  clear(): void {
    this.slots.fill(EMPTY);
    this.used = 0;
    this.head += this.ringBytes; // nothing written before is valid any more
    this.floor = this.head;
  }

  /** Rows held (for tests; O(slots)). */
  get size(): number {
    return this.held();
  }

  private held(): number {
    let n = 0;
    const slots = this.slots;
    // Indexed: for-of over a typed array here allocated an iterator result per slot.
    for (let i = 0; i < slots.length; i++) {
      const p = slots[i] as number;
      if (p > 0 && this.holds(p - 1)) n++;
    }
    return n;
  }

  /** The record at absolute position `pos` has not been written over (the ring has not lapped it) nor given up. */
  private holds(pos: number): boolean {
    return pos >= this.floor && this.head - pos <= this.ringBytes;
  }

  /** The slot of `key`'s record, or -1. Slots of overwritten records met on the way become tombstones. */
  private find(key: string, h: number): number {
    const slots = this.slots;
    const mask = this.mask;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const p = slots[s] as number;
      if (p === EMPTY) return -1;
      if (p === TOMBSTONE || this.hashes[s] !== h) continue;
      if (!this.holds(p - 1)) {
        slots[s] = TOMBSTONE;
        continue;
      }
      if (this.keyAt(p - 1, key)) return s;
    }
  }

  private remove(key: string, h: number): void {
    const s = this.find(key, h);
    if (s >= 0) this.slots[s] = TOMBSTONE;
  }

  private keyAt(pos: number, key: string): boolean {
    const ring = this.ring as Buffer;
    const at = pos % this.ringBytes;
    const kl = key.length;
    if (ring.readUInt16LE(at + 4) !== kl) return false;
    const k0 = at + HEADER_BYTES;
    for (let i = 0; i < kl; i++) if (ring[k0 + i] !== key.charCodeAt(i)) return false;
    return true;
  }

  /**
   * The slot a new record of `key` goes in: the key's own record's (which it replaces), else the
   * first tombstone on the key's probe path, else the empty slot ending it — or -1 when taking an
   * empty slot would fill the table past half (the caller rebuilds and asks again). Slots of
   * overwritten records met on the way become tombstones, as in `find`.
   */
  private slotFor(key: string, h: number): number {
    const slots = this.slots;
    const mask = this.mask;
    let free = -1;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const p = slots[s] as number;
      if (p === EMPTY) {
        if (free >= 0) return free;
        return (this.used + 1) * 2 > slots.length ? -1 : s;
      }
      if (p !== TOMBSTONE && this.hashes[s] === h) {
        if (!this.holds(p - 1)) slots[s] = TOMBSTONE;
        else if (this.keyAt(p - 1, key)) return s;
      }
      if (free < 0 && slots[s] === TOMBSTONE) free = s;
    }
  }

  /** A table for the records still held, without tombstones: doubled if they need it, the older half of the ring given up if it cannot grow. */
  private rebuild(): void {
    let live = this.held();
    let size = MIN_SLOTS;
    while (size < 4 * (live + 1) && size < this.maxSlots) size *= 2;
    // At its largest and still too full: give up the older half of what is held, until it fits.
    while ((live + 1) * 2 > size) {
      this.floor = this.head - Math.floor((this.head - Math.max(this.floor, this.head - this.ringBytes)) / 2);
      live = this.held();
    }
    const oldSlots = this.slots;
    const oldHashes = this.hashes;
    this.slots = new Float64Array(size);
    this.hashes = new Int32Array(size);
    this.mask = size - 1;
    this.used = 0;
    for (let i = 0; i < oldSlots.length; i++) {
      const p = oldSlots[i] as number;
      if (p <= 0 || !this.holds(p - 1)) continue;
      const h = oldHashes[i] as number;
      let s = h & this.mask;
      while (this.slots[s] !== EMPTY) s = (s + 1) & this.mask;
      this.slots[s] = p;
      this.hashes[s] = h;
      this.used++;
    }
  }
}

/** Returned by `hashOf` for a key that cannot be stored (a char above 0xFF); never the hash of a storable key. */
const UNCACHEABLE = 0x7fffffff;

/** FNV-1a over the key's chars, finished with murmur3's mixer (linear probing uses the low bits). */
function hashOf(key: string): number {
  let h = 0x811c9dc5;
  let wide = 0;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    wide |= c;
    h = Math.imul(h ^ c, 0x01000193);
  }
  if (wide > 0xff) return UNCACHEABLE;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h === UNCACHEABLE ? 0 : h | 0;
}
