/**
 * FifoSet (fifo-set.ts) for 32-bit integers, in typed arrays: an open-addressing hash table with
 * linear probing, at most half full, and the insertion order in a ring. Removing the oldest member
 * shifts the entries after it in its probe run back (no tombstones), so a full set stays as fast as
 * an empty one.
 *
 * Why: the targeted version GC remembers a hash of every cell committed (gc-recent.ts), ~100 000 of
 * them, with a delete and an add per new cell once full. In a `Set` that was 1.5 % of the web
 * index's JS thread (`--cpu-prof`, 30 000 documents; 0.4 % here, and its caller's share 2.3 → 1.9 %:
 * a small gain). A script of 3 000 000 has-or-add steps over 100 000 members, keys hashed as
 * gc-recent.ts hashes them: 310–337 ms as a `Set`, 152–230 ms here.
 *
 * Contract: single-threaded; members are integers in the int32 range (others throw RangeError);
 * `add` of a present member is a no-op (it keeps its age).
 */
export class IntFifoSet {
  private readonly ring: Int32Array;
  private readonly keys: Int32Array;
  private readonly used: Uint8Array;
  private readonly mask: number;
  /** 32 − log2(table size): a home slot is the top bits of a Fibonacci hash. */
  private readonly shift: number;
  private head = 0;
  private count = 0;

  constructor(private readonly capacity: number) {
    this.ring = new Int32Array(Math.max(0, capacity));
    let bits = 1;
    while (2 ** bits < capacity * 2) bits++;
    const n = 2 ** bits;
    this.mask = n - 1;
    this.shift = 32 - bits;
    this.keys = new Int32Array(n);
    this.used = new Uint8Array(n);
  }

  get size(): number {
    return this.count;
  }

  has(value: number): boolean {
    return this.used[this.slot(check(value))] === 1;
  }

  /** Adds `value`; returns true when an older member was forgotten to make room. */
  add(value: number): boolean {
    check(value);
    if (this.capacity <= 0) return false;
    let s = this.slot(value);
    if (this.used[s] === 1) return false;
    const evicted = this.count === this.capacity;
    if (evicted) {
      this.remove(this.ring[this.head] as number);
      this.count--;
      s = this.slot(value); // the removal may have shifted value's probe run
    }
    this.keys[s] = value;
    this.used[s] = 1;
    this.ring[this.head] = value;
    this.head = (this.head + 1) % this.capacity;
    this.count++;
    return evicted;
  }

  private home(value: number): number {
    return Math.imul(value, 0x9e3779b1) >>> this.shift;
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

function check(value: number): number {
  if ((value | 0) !== value) throw new RangeError(`IntFifoSet holds int32 integers, not ${value}`);
  return value;
}
