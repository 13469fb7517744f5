/**
 * The end of a checker's run (bank.ts, notify.ts): waiting for its worker processes to exit after
 * they were told to stop.
 *
 * Invariants: every promise in `closed` is awaited, including those added while waiting (a worker
 * still starting or restarting when the stop was sent); a worker of `live` still running after
 * `ms` is killed and the kill noted in `errors`; with a served store that goes away
 * (store-reach.ts) the wait ends with STORE_OUT_OF_REACH instead of waiting out the workers' own
 * timeouts. The kill timer never outlives the call.
 */
import type { ChildProcess } from 'node:child_process';
import { type StoreReach, unlessGone } from './store-reach.js';

export async function awaitWorkersClosed(
  live: Iterable<{ readonly incarnation: number; readonly proc: ChildProcess }>,
  closed: readonly Promise<unknown>[],
  reach: StoreReach | null,
  errors: string[],
  ms = 20_000,
): Promise<void> {
  const deadline = setTimeout(() => {
    for (const w of live) {
      errors.push(`worker ${w.incarnation} did not stop within ${ms / 1000} s: killed`);
      w.proc.kill('SIGKILL');
    }
  }, ms);
  try {
    for (let seen = 0; seen < closed.length;) {
      const n = closed.length;
      await unlessGone(reach, Promise.all(closed.slice(seen)));
      seen = n;
    }
  } finally {
    clearTimeout(deadline);
  }
}
