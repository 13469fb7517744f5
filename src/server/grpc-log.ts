/**
 * grpc-js logging for a process that serves (`percolator serve`). grpc-js logs through one
 * process-wide logger (`console.error` with an `E `/`I `/`D ` prefix by default, filtered by
 * GRPC_VERBOSITY); a library must not replace it, so only the command that owns the process calls
 * this.
 *
 * Invariant: every message grpc-js would print still reaches stderr as it would have, except the
 * one line it writes when a bind fails ("No address added out of total N resolved"): `bindAsync`
 * then rejects with those same words and the cause, which the server reports as its one-line
 * LISTEN_FAILED, so the log line only doubled it — and came first, before the typed error.
 */
import { setLogger } from '@grpc/grpc-js';

const BIND_FAILED = /^No address added out of total \d+ resolved$/;

export function quietRedundantGrpcLogs(): void {
  setLogger({
    error: (message?: unknown, ...rest: unknown[]) => {
      if (typeof message === 'string' && BIND_FAILED.test(message)) return;
      console.error(`E ${String(message)}`, ...rest);
    },
    info: (message?: unknown, ...rest: unknown[]) => console.error(`I ${String(message)}`, ...rest),
    debug: (message?: unknown, ...rest: unknown[]) => console.error(`D ${String(message)}`, ...rest),
  });
}
