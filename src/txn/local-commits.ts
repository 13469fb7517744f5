/**
 * The commits in flight in this process, by start timestamp. A reader blocked on a lock of one of
 * them (an in-process conflict: the common case in an embedded deployment) waits for that commit
 * to end — it is woken the moment the locks are committed or rolled back — instead of polling
 * with growing sleeps (≥ 1 ms each, timers being what they are).
 *
 * Safety does not depend on it: a woken reader simply reads again and resolves whatever it finds
 * as before. A lock of this process whose commit is not in flight (left behind by a failure) gets
 * the ordinary backoff, so there is no busy loop.
 */
export class LocalCommits {
  private readonly inFlight = new Map<number, { readonly done: Promise<void>; readonly end: () => void }>();

  /** Marks the commit of `startTs` as in flight; call the returned function when it has ended. */
  begin(startTs: number): () => void {
    let end!: () => void;
    const done = new Promise<void>((resolve) => {
      end = resolve;
    });
    const entry = { done, end };
    this.inFlight.set(startTs, entry);
    return () => {
      if (this.inFlight.get(startTs) === entry) this.inFlight.delete(startTs);
      entry.end();
    };
  }

  /** Whether the commit of `startTs` is in flight here. */
  isInFlight(startTs: number): boolean {
    return this.inFlight.has(startTs);
  }

  /**
   * Waits until the commit of `startTs` ends, at most `maxMs`. Returns false at once when no such
   * commit is in flight here (the caller then backs off as usual).
   */
  async waitFor(startTs: number, maxMs: number): Promise<boolean> {
    const entry = this.inFlight.get(startTs);
    if (entry === undefined) return false;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([entry.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, maxMs)))]);
    clearTimeout(timer);
    return true;
  }
}
