/**
 * Running a store operation again while the store is out of reach (IO_ERROR: a server restarting,
 * a connection reset), with a pause that doubles from `firstPauseMs` to `maxPauseMs`, for up to
 * `forMs`; then, or on any other error, the error is thrown. Only for operations that may run
 * twice (an attempt that failed may have been applied).
 */
import { isStoreError } from './errors.js';

export interface OutOfReachOptions {
  /** How long to keep trying (ms). */
  readonly forMs: number;
  /** Default 100. */
  readonly firstPauseMs?: number;
  /** Default 2 000. */
  readonly maxPauseMs?: number;
  /** Other errors that also mean "out of reach, try again" (e.g. COMMIT_UNDETERMINED). */
  readonly alsoRetry?: (e: unknown) => boolean;
}

export async function whileOutOfReach<T>(attempt: () => Promise<T>, options: OutOfReachOptions): Promise<T> {
  const giveUpAt = Date.now() + options.forMs;
  for (let pauseMs = options.firstPauseMs ?? 100; ; pauseMs = Math.min(2 * pauseMs, options.maxPauseMs ?? 2_000)) {
    try {
      return await attempt();
    } catch (e) {
      if (!(isStoreError(e, 'IO_ERROR') || options.alsoRetry?.(e) === true) || Date.now() + pauseMs > giveUpAt) throw e;
    }
    // Backoff while the store is out of reach, not a test wait.
    await new Promise((r) => setTimeout(r, pauseMs));
  }
}
