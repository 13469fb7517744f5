/**
 * Whether a checker's store is still there: a store served by another process (`bigtable://`: a
 * `percolator serve`, the emulator) can go away in the middle of a check, and a check that goes
 * on without it only waits — workers restarted to fail again, readers and commits timing out one
 * by one, the end of the run reached minutes later with nothing to show.
 *
 * `watchStoreReach(probe, …)` runs `probe` (one cheap read) again and again, a pause apart, and
 * `lost()` says STORE_OUT_OF_REACH once no probe has succeeded for `outageMs` and the last one
 * failed. A shorter outage (a server restarting, connections reset) is ridden out. A probe that
 * is only slow (a loaded machine) never counts: the store is gone only when the probe says so —
 * a server that stopped refuses the connection at once, one that hangs fails the probe at the
 * client's own deadline.
 *
 * Invariants: `lost()` is cheap and synchronous (the checker's loops ask it often); once it has
 * returned an error it keeps returning one; `stop()` ends the probing (it waits for no probe in
 * flight: that one may hang) and is idempotent.
 */

export interface StoreOutOfReachDetails {
  readonly store: string;
  /** How long no probe had succeeded when the outage was declared (ms). */
  readonly outOfReachMs: number;
  readonly outageMs: number;
  /** The last probe's failure. */
  readonly lastError: { readonly code: string | null; readonly message: string };
}

/** The store of a check stayed out of reach for longer than the check waits: it cannot go on. */
export class StoreOutOfReachError extends Error {
  readonly code = 'STORE_OUT_OF_REACH';
  constructor(
    message: string,
    readonly details: StoreOutOfReachDetails,
  ) {
    super(message);
    this.name = 'StoreOutOfReachError';
  }
}

export interface StoreReachOptions {
  /** The store's URL, for the error. */
  readonly store: string;
  /** How long without a successful probe makes the store gone (ms). */
  readonly outageMs: number;
  /** Pause between probes (ms). Default min(500, outageMs / 4). */
  readonly everyMs?: number;
  /** What the error says it ended ("check bank"). */
  readonly what: string;
}

export interface StoreReach {
  /** STORE_OUT_OF_REACH once no probe has succeeded for `outageMs` and the last one failed; else null. */
  lost(): StoreOutOfReachError | null;
  stop(): void;
}

export function watchStoreReach(probe: () => Promise<unknown>, options: StoreReachOptions): StoreReach {
  const everyMs = options.everyMs ?? Math.min(500, options.outageMs / 4);
  let lastOk = performance.now();
  let lastError: StoreOutOfReachDetails['lastError'] | null = null;
  let stopped = false;
  let lost: StoreOutOfReachError | null = null;
  let pause: NodeJS.Timeout | null = null;
  let wake: (() => void) | null = null;

  const loop = async (): Promise<void> => {
    while (!stopped) {
      try {
        await probe();
        // When it answered, not when it was asked: a slow answer still shows the store there.
        lastOk = performance.now();
        lastError = null;
      } catch (e) {
        const code = typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : null;
        lastError = { code, message: e instanceof Error ? e.message : String(e) };
      }
      if (stopped) return;
      // Pacing the probes, not a test wait.
      await new Promise<void>((r) => {
        wake = r;
        pause = setTimeout(r, everyMs);
      });
    }
  };
  void loop();

  return {
    lost(): StoreOutOfReachError | null {
      if (lost !== null || stopped || lastError === null) return lost;
      const outOfReachMs = Math.round(performance.now() - lastOk);
      if (outOfReachMs < options.outageMs) return null;
      const why = `${lastError.code === null ? '' : `${lastError.code}: `}${lastError.message}`;
      lost = new StoreOutOfReachError(
        `${options.what}: the store ${options.store} has been out of reach for ${(outOfReachMs / 1000).toFixed(1)} s (${why}); the check cannot go on without it`,
        { store: options.store, outOfReachMs, outageMs: options.outageMs, lastError },
      );
      return lost;
    },
    stop(): void {
      stopped = true;
      if (pause !== null) clearTimeout(pause);
      wake?.();
    },
  };
}
