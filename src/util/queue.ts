/**
 * A first-in first-out queue over an array with a moving head: push and shift in amortized O(1).
 *
 * Why not a Map or Set's own insertion order: V8 leaves deleted slots at the front of a Map until
 * it rehashes, so `map.keys().next()` after many front deletions walks over up to half the
 * table's capacity — an eviction loop built on it costs O(capacity) per insert once full.
 *
 * Contract: single-threaded. `undefined` is not a valid element.
 */
export class Queue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The oldest element, left in place; undefined when empty. */
  peek(): T | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }

  /** The oldest element, removed; undefined when empty. */
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    // Drop the consumed prefix once it is half the array: each element is copied O(1) times.
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** Removes and returns every element, oldest first. */
  drain(): T[] {
    const out = this.items.slice(this.head) as T[];
    this.items = [];
    this.head = 0;
    return out;
  }

  /** Keeps only the elements `keep` accepts, in order (O(size)). */
  retain(keep: (item: T) => boolean): void {
    const out: T[] = [];
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i] as T;
      if (keep(item)) out.push(item);
    }
    this.items = out;
    this.head = 0;
  }
}
