/**
 * Runs async tasks with at most `width` in flight, for loops that produce work as they go (a scan
 * whose rows each need a write). `add` waits while the pool is full; `drain` waits for the rest and
 * throws the first task error. After a task failed, `failed` is true and callers stop adding.
 *
 * Concurrency contract: one producer (the loop calling `add` and then `drain`).
 */
export class BoundedPool {
  private readonly inFlight = new Set<Promise<void>>();
  private failure: { readonly error: unknown } | null = null;

  constructor(private readonly width: number) {}

  get failed(): boolean {
    return this.failure !== null;
  }

  async add(task: () => Promise<void>): Promise<void> {
    const p: Promise<void> = task()
      .catch((error: unknown) => {
        this.failure ??= { error };
      })
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
    if (this.inFlight.size >= this.width) await Promise.race(this.inFlight);
  }

  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
    if (this.failure !== null) throw this.failure.error;
  }
}
