/**
 * A set that forgets its oldest members beyond `capacity` (first in, first out). Eviction order
 * lives in a ring buffer, not in the Set's own iteration order: evicting through
 * `set.values().next()` walks over the deleted slots V8 leaves at the front of a Set until it
 * rehashes, which made every insertion O(capacity) once the set was full.
 *
 * Contract: single-threaded; `add` of a present member is a no-op (it keeps its age).
 * The targeted GC used it for its transactions until 2026-12-03 (now int-fifo-set.ts, `wide`);
 * it stays as the plain model IntFifoSet's randomized tests are checked against, and for sets of
 * strings (the web index's metrics).
 */
export class FifoSet<T> {
  private readonly members = new Set<T>();
  private readonly ring: (T | undefined)[];
  private head = 0;

  constructor(private readonly capacity: number) {
    this.ring = new Array<T | undefined>(capacity);
  }

  has(value: T): boolean {
    return this.members.has(value);
  }

  get size(): number {
    return this.members.size;
  }

  /** Adds `value`; returns true when an older member was forgotten to make room. */
  add(value: T): boolean {
    if (this.capacity <= 0 || this.members.has(value)) return false;
    const slot = this.head;
    this.head = (this.head + 1) % this.capacity;
    const evicted = this.members.size === this.capacity;
    if (evicted) this.members.delete(this.ring[slot] as T);
    this.ring[slot] = value;
    this.members.add(value);
    return evicted;
  }
}
