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

  get size(): number {
    return this.tails.size;
  }
}
