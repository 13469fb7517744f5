/**
 * Per-row latches: serializes read-modify-write of one row within this process, so concurrent
 * writers to a row apply one after another (Bigtable's row atomicity). Latches are held across
 * the engine write, so a row's next writer reads the previous writer's durable result.
 * The uncontended path allocates one promise and awaits nothing.
 */
export class RowLatches {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key);
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.tails.set(key, mine);
    try {
      if (prev !== undefined) await prev;
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === mine) this.tails.delete(key);
    }
  }

  /**
   * Holds the latches of every key at once, taken in sorted order (so two multi-row writers can
   * never wait for each other in a cycle), while fn runs.
   */
  runMany<T>(keys: readonly string[], fn: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(keys)].sort();
    const take = (i: number): Promise<T> => (i === sorted.length ? fn() : this.run(sorted[i] as string, () => take(i + 1)));
    return take(0);
  }

  get size(): number {
    return this.tails.size;
  }
}
