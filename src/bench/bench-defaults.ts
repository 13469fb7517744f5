/**
 * Benchmark defaults the command line's help shows, in a module of their own: importing them from
 * the benchmarks loaded the web index and its store (gRPC, LevelDB) to print `bench … --help`.
 */

/** The stores `bench webindex --store` takes. */
export const WEB_INDEX_BENCH_STORES = ['file:', 'memory:', 'serve'] as const;
export type WebIndexBenchStore = (typeof WEB_INDEX_BENCH_STORES)[number];

/** The saturation phase's default window (see WebIndexBenchOptions.window). */
export const DEFAULT_SATURATION_WINDOW = 4096;

/** `bench latency`'s crawl rates, % of the repository per hour. */
export const DEFAULT_RATES: readonly number[] = [1, 2, 5, 10, 20, 50, 100];
