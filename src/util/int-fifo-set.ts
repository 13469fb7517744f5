/**
 * FifoSet (fifo-set.ts) for integers, in typed arrays: an open-addressing hash table with linear
 * probing, at most half full, and the insertion order in a ring. Removing the oldest member shifts
 * the entries after it in its probe run back (no tombstones), so a full set stays as fast as an
 * empty one. Members are int32 (Int32Array), or with `wide` any safe integer (Float64Array: the
 * targeted GC's transaction timestamps, which a hash must not stand for — a collision there would
 * take an unfinished transaction for a finished one).
 *
 * Why: the targeted version GC remembers a hash of every cell committed (gc-recent.ts), ~100 000 of
 * them, with a delete and an add per new cell once full. In a `Set` that was 1.5 % of the web
 * index's JS thread (`--cpu-prof`, 30 000 documents; 0.4 % here, and its caller's share 2.3 → 1.9 %:
 * a small gain). A script of 3 000 000 has-or-add steps over 100 000 members, keys hashed as
 * gc-recent.ts hashes them: 310–337 ms as a `Set`, 152–230 ms here. And memory: a million
 * timestamps take ~26 MB here (9 bytes a slot, two slots a member, 8 bytes in the ring); as a
 * FifoSet (a `Set` of heap numbers) they added ~45 MB to a soak's peak RSS (2026-12-03).
 *
 * Contract: single-threaded; members are integers in the int32 range, or safe integers with
 * `wide` (others throw RangeError); `add` of a present member is a no-op (it keeps its age).
 */
type Slots = Int32Array | Float64Array;

export interface IntFifoSetOptions {
  /** Room allocated at first (default 65 536, at most the capacity), doubled as the set fills. */
  readonly initial?: number;
  /** Safe integers rather than int32 (8 bytes a slot rather than 4). */
  readonly wide?: boolean;
}

export class IntFifoSet {
  private ring: Slots;
  private keys: Slots = new Int32Array(0);
  private used: Uint8Array = new Uint8Array(0);
  private mask = 0;
  /** 32 − log2(table size): a home slot is the top bits of a Fibonacci hash. */
  private shift = 0;
  private head = 0;
  private count = 0;
  private readonly wide: boolean;

  /**
   * A large capacity costs its memory only once that many members were added: room grows from
   * `options.initial` by doubling, up to `capacity`.
   */
  constructor(
    private readonly capacity: number,
    options: IntFifoSetOptions = {},
  ) {
    this.wide = options.wide === true;
    this.ring = this.slots(Math.max(0, Math.min(capacity, options.initial ?? 1 << 16)));
    this.allocateTable(this.ring.length);
  }

  private slots(n: number): Slots {
    return this.wide ? new Float64Array(n) : new Int32Array(n);
  }

  /** An empty hash table, at most half full with `room` members. */
  private allocateTable(room: number): void {
    let bits = 1;
    while (2 ** bits < room * 2) bits++;
    const n = 2 ** bits;
    this.mask = n - 1;
    this.shift = 32 - bits;
    this.keys = this.slots(n);
    this.used = new Uint8Array(n);
  }

  /** Doubles the room (up to the capacity); members keep their order of age. */
  private grow(): void {
    const room = this.ring.length;
    const ring = this.slots(Math.min(this.capacity, Math.max(1, room * 2)));
    for (let i = 0; i < this.count; i++) ring[i] = this.ring[(this.head + i) % room] as number;
    this.ring = ring;
    this.head = this.count;
    this.allocateTable(ring.length);
    for (let i = 0; i < this.count; i++) {
      const v = ring[i] as number;
      const s = this.slot(v);
      this.keys[s] = v;
      this.used[s] = 1;
    }
  }

  get size(): number {
    return this.count;
  }

  has(value: number): boolean {
    return this.used[this.slot(this.check(value))] === 1;
  }

  /** Adds `value`; returns true when an older member was forgotten to make room. */
  add(value: number): boolean {
    this.check(value);
    if (this.capacity <= 0) return false;
    let s = this.slot(value);
    if (this.used[s] === 1) return false;
    if (this.count === this.ring.length && this.count < this.capacity) {
      this.grow();
      s = this.slot(value);
    }
    const evicted = this.count === this.capacity;
    if (evicted) {
      this.remove(this.ring[this.head] as number);
      this.count--;
      s = this.slot(value); // the removal may have shifted value's probe run
    }
    this.keys[s] = value;
    this.used[s] = 1;
    this.ring[this.head] = value;
    this.head = (this.head + 1) % this.ring.length;
    this.count++;
    return evicted;
  }

  private home(value: number): number {
    // Wide: the low 32 bits (ToInt32 is modulo 2^32) mixed with the high ones.
    const h = this.wide ? (value | 0) ^ Math.imul(Math.floor(value / 4294967296) | 0, 0x85ebca6b) : value;
    return Math.imul(h, 0x9e3779b1) >>> this.shift;
  }

  private check(value: number): number {
    if (this.wide ? !Number.isSafeInteger(value) : (value | 0) !== value)
      throw new RangeError(`IntFifoSet holds ${this.wide ? 'safe' : 'int32'} integers, not ${value}`);
    return value;
  }

  /** The slot holding `value`, or the empty slot that ends its probe run. */
  private slot(value: number): number {
    let i = this.home(value);
    while (this.used[i] === 1 && this.keys[i] !== value) i = (i + 1) & this.mask;
    return i;
  }

  /** Empties `value`'s slot, moving back every later entry of the run that may not skip the gap. */
  private remove(value: number): void {
    let gap = this.slot(value);
    if (this.used[gap] !== 1) return;
    this.used[gap] = 0;
    for (let j = (gap + 1) & this.mask; this.used[j] === 1; j = (j + 1) & this.mask) {
      const h = this.home(this.keys[j] as number);
      // The entry at j stays only if its home lies cyclically in (gap, j]: probing from there
      // never crosses the gap.
      const stays = gap <= j ? gap < h && h <= j : gap < h || h <= j;
      if (stays) continue;
      this.keys[gap] = this.keys[j] as number;
      this.used[gap] = 1;
      this.used[j] = 0;
      gap = j;
    }
  }
}
