/**
 * The web index's concurrency defaults, in a module of their own: the command line's help shows
 * them, and loading run.ts for them loaded the whole pipeline (the store, gRPC, LevelDB) to print
 * `bench webindex --help`.
 */

/** Concurrent loader transactions unless told (RunOptions.loaders). */
export const DEFAULT_LOADERS = 16;

/** Concurrent observer runs unless told (RunOptions.threads), on an embedded or in-memory store. */
export const DEFAULT_THREADS = 16;

/**
 * The same over `bigtable://` (`percolator serve`, the emulator, Cloud Bigtable). A run there
 * spends most of its time waiting for replies, and the client batches the calls of one event-loop
 * turn (conditional mutations, point reads): more runs at once fill each call with more entries.
 * Over `percolator serve` on this machine, 64 runs index ~40 % more documents a second than 16,
 * at less CPU a document on both sides; 128 gain nothing more (BENCHMARKS.md, 2026-11-30 seventh
 * session).
 */
export const DEFAULT_REMOTE_THREADS = 64;

/** The observer runs a web index takes unless told, for a store at `url`. */
export function defaultThreadsFor(url: string): number {
  return url.startsWith('bigtable://') ? DEFAULT_REMOTE_THREADS : DEFAULT_THREADS;
}
