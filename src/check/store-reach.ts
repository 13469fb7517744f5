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
 * `unlessGone(reach, work)` is what a checker awaits instead of `work` (a quiescence wait, the
 * workers' stop, a final read): `work`'s outcome, or STORE_OUT_OF_REACH as soon as the store is
 * gone. A failure of `work` while the store does not answer (IO_ERROR, ORACLE_UNAVAILABLE, a
 * timeout) is held until a probe started after it decides: answered, that failure is the outcome;
 * no answer for the outage, STORE_OUT_OF_REACH — an outage is not a finding of the check.
 * `watchServedStore` watches only what another process serves (`bigtable://`): a store of the
 * checker's own process cannot go away under it.
 * `closeCheckHandles` is a check's last step: with the store gone, its clients are closed first.
 *
 * Invariants: `lost()` is cheap and synchronous (the checker's loops ask it often); once it has
 * returned an error it keeps returning one; `stop()` ends the probing (it waits for no probe in
 * flight: that one may hang) and is idempotent; after `stop()` a held failure is given as it is.
 * `unlessGone` leaves `work` running when the store is gone: the caller's clean-up closes what it
 * hangs on.
 */

/** How long a check waits for a served store that stopped answering (ms): longer than a server restart. */
export const DEFAULT_OUTAGE_MS = 10_000;

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
  /** Whether a probe started after `since` (a `probesStarted()` value) has answered: the store was there then. */
  answeredSince(since: number): boolean;
  /** How many probes have started (a mark for `answeredSince`). */
  probesStarted(): number;
  readonly stopped: boolean;
  stop(): void;
}

export function watchStoreReach(probe: () => Promise<unknown>, options: StoreReachOptions): StoreReach {
  const everyMs = options.everyMs ?? Math.min(500, options.outageMs / 4);
  let lastOk = performance.now();
  let started = 0;
  /** The latest probe that answered (by start order). */
  let lastAnswered = 0;
  let lastError: StoreOutOfReachDetails['lastError'] | null = null;
  let stopped = false;
  let lost: StoreOutOfReachError | null = null;
  let pause: NodeJS.Timeout | null = null;
  let wake: (() => void) | null = null;

  const loop = async (): Promise<void> => {
    while (!stopped) {
      const serial = ++started;
      try {
        await probe();
        // When it answered, not when it was asked: a slow answer still shows the store there.
        lastOk = performance.now();
        lastError = null;
        lastAnswered = serial;
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
    answeredSince: (since) => lastAnswered > since,
    probesStarted: () => started,
    get stopped(): boolean {
      return stopped;
    },
    stop(): void {
      stopped = true;
      if (pause !== null) clearTimeout(pause);
      wake?.();
    },
  };
}

/**
 * A watch of `store` if another process serves it (`bigtable://`), else null. `probe` is one cheap
 * read of the check's own table.
 */
export function watchServedStore(
  url: string,
  probe: () => Promise<unknown>,
  options: { readonly outageMs?: number; readonly what: string },
): StoreReach | null {
  if (!url.startsWith('bigtable://')) return null;
  return watchStoreReach(probe, { store: url, outageMs: options.outageMs ?? DEFAULT_OUTAGE_MS, what: options.what });
}

/**
 * `work`'s outcome, or STORE_OUT_OF_REACH once `reach` says the store is gone (asked every
 * `pollMs`); with no watch, `work` itself. A failure of `work` is held while the store may be gone
 * (see the header).
 */
export function unlessGone<T>(reach: StoreReach | null, work: Promise<T>, pollMs = 100): Promise<T> {
  if (reach === null) return work;
  return new Promise<T>((resolve, reject) => {
    let failure: { readonly error: unknown; readonly mark: number } | null = null;
    let timer: NodeJS.Timeout | undefined;
    const decide = (): void => {
      const gone = reach.lost();
      if (gone !== null) {
        clearInterval(timer);
        reject(gone);
      } else if (failure !== null && (reach.stopped || reach.answeredSince(failure.mark))) {
        clearInterval(timer);
        reject(failure.error);
      }
    };
    // Polling a synchronous flag the probe loop sets; not a wait for a condition another await could give.
    timer = setInterval(decide, pollMs);
    work.then(
      (value) => {
        clearInterval(timer);
        resolve(value);
      },
      (error: unknown) => {
        failure = { error, mark: reach.probesStarted() };
        decide();
      },
    );
    decide();
  });
}

/** Something a check closes at its end. */
interface Closable {
  close(): Promise<unknown>;
}

/**
 * Closes a check's handles at its end, ignoring their errors (the outcome is decided): its
 * Percolator instances (`dbs`), then the oracle and store clients they run on — the clients first
 * when `reach` found the store gone: closed, they end at once the calls still waiting on it (a GC
 * pass in flight, which a Percolator's close waits for, took seconds more to time out).
 */
export async function closeCheckHandles(
  reach: StoreReach | null,
  dbs: readonly (Closable | null)[],
  clients: readonly (Closable | null)[],
): Promise<void> {
  const closeAll = async (handles: readonly (Closable | null)[]): Promise<void> => {
    for (const h of handles) await h?.close().catch(() => undefined);
  };
  const gone = (reach?.lost() ?? null) !== null;
  if (gone) await closeAll(clients);
  await closeAll(dbs);
  if (!gone) await closeAll(clients);
}
