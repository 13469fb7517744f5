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
   * Holds the latches of every key at once while fn runs: one promise for all of them, registered
   * as the tail of every key in one synchronous step. So a writer only ever waits for writers that
   * registered before it — the waits cannot form a cycle, in whatever order the keys come — and a
   * write of many rows costs one promise and one async frame, not one nested frame per key
   * (a posting-heavy commit names ~50 rows). Duplicate keys are held once.
   */
  runMany<T>(keys: readonly string[], fn: () => Promise<T>): Promise<T> {
    if (keys.length === 1) return this.run(keys[0] as string, fn);
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    let waits: Promise<void>[] | null = null;
    const held: string[] = [];
    for (const key of keys) {
      const prev = this.tails.get(key);
      if (prev === mine) continue;
      if (prev !== undefined) (waits ??= []).push(prev);
      this.tails.set(key, mine);
      held.push(key);
    }
    const hold = async (): Promise<T> => {
      try {
        if (waits !== null) await (waits.length === 1 ? waits[0] : Promise.all(waits));
        return await fn();
      } finally {
        release();
        for (const key of held) if (this.tails.get(key) === mine) this.tails.delete(key);
      }
    };
    return hold();
  }

  get size(): number {
    return this.tails.size;
  }
}
