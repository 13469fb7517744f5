/**
 * `percolator bench soak [--docs N] [--rate R] [--seconds S] [--sample-seconds S]
 * [--full-gc-interval-ms MS] [--worker-gc-windows] [--store file:|memory:|serve] [--seed N] [--json]
 * [--row-cache-mib N] [--block-cache-mib N]` (the last two: the server's caches, with --store serve)
 *
 * Thin: runs src/bench/soak-bench.ts — a repository re-crawled continuously, sampled for memory
 * and store size, then checked against the batch and counted for rows GC left. With --json,
 * stdout carries exactly one JSON object; progress goes to stderr, and only without --json.
 */
import type { Command } from 'commander';
import { type CacheFlags, addCacheOptions } from '../cache-options.js';
import {
  commandGroup,
  parseNonNegativeInteger,
  parsePositiveInteger,
  parsePositiveNumber,
  parseTimerSeconds,
  printResult,
} from '../parent-command.js';
import { UsageError } from '../usage-error.js';
import { formatTable } from '../table.js';

interface Flags extends CacheFlags {
  docs: number;
  rate: number;
  seconds: number;
  sampleSeconds: number;
  fullGcIntervalMs: number;
  workerGcWindows?: boolean;
  store: string;
  seed: number;
  json?: boolean;
}

export function register(program: Command): void {
  const command = commandGroup(program, 'bench')
    .command('soak')
    .description(
      'the web index re-crawled continuously: RSS, heap and store size over time, the index against the batch at the end, and the rows version GC left (prints crawlsPerSecond, samples, differencesFromBatch, rowsAtEnd, rowsAfterFullPass)',
    )
    .option('--docs <n>', 'repository size (synthetic documents)', parsePositiveInteger('docs'), 5000)
    .option('--rate <n>', 're-crawls offered per second', parsePositiveNumber('rate'), 100)
    .option('--seconds <s>', 'seconds of re-crawling', parseTimerSeconds('seconds'), 120)
    .option('--sample-seconds <s>', 'seconds between samples', parseTimerSeconds('sample-seconds'), 30)
    .option(
      '--full-gc-interval-ms <ms>',
      'full background GC passes at most this often (0: off)',
      parseNonNegativeInteger('full-gc-interval-ms'),
      0,
    )
    .option(
      '--worker-gc-windows',
      "targeted GC passes remember what percolator worker's do (2 Mi cells, 1 Mi transactions), not the library's 100 000",
    )
    .option(
      '--store <kind>',
      'file: (a fresh temporary directory), memory:, or serve (a percolator serve process on a fresh directory, the pipeline its client)',
      'file:',
    )
    .option('--seed <n>', 'corpus and crawl seed', parseNonNegativeInteger('seed'), 42)
    .option('--json', 'print one JSON object');
  // The embedded pipeline sizes its own caches (apps/webindex/run.ts); these size the server's.
  addCacheOptions(command).action(async (flags: Flags) => {
    const store = flags.store;
    if (store !== 'file:' && store !== 'memory:' && store !== 'serve')
      throw new UsageError(`--store must be file:, memory: or serve, got ${store}`);
    const serveArgs = cacheArgs(flags);
    if (serveArgs.length > 0 && store !== 'serve')
      throw new UsageError(`--row-cache-mib and --block-cache-mib size the server's caches: give them with --store serve`);
    const { runSoakBench } = await import('../../bench/soak-bench.js');
    const json = flags.json === true;
    const result = await runSoakBench({
      docs: flags.docs,
      rate: flags.rate,
      seconds: flags.seconds,
      sampleSeconds: flags.sampleSeconds,
      fullGcIntervalMs: flags.fullGcIntervalMs,
      workerGcWindows: flags.workerGcWindows === true,
      store,
      serveArgs,
      seed: flags.seed,
      log: json ? undefined : (line) => process.stderr.write(`${line}\n`),
    });
    if (json) {
      printResult(result, true);
      return;
    }
    const { samples, rowsAtEnd, rowsAfterFullPass, ...rest } = result;
    printResult(rest, false);
    const lines = [
      'samples:',
      ...formatTable(
        ['seconds', 'crawls', 'RSS MiB', 'anonymous MiB', 'heap MiB', 'store MiB', 'server RSS MiB', 'GC backlog cells'],
        samples.map((s) => [
          String(s.seconds),
          String(s.crawls),
          String(s.rssMiB),
          s.anonRssMiB === null ? '-' : String(s.anonRssMiB),
          String(s.heapMiB),
          s.storeMiB === null ? '-' : String(s.storeMiB),
          s.serverRssMiB === null ? '-' : String(s.serverRssMiB),
          String(s.gcBacklogCells),
        ]),
        '  ',
      ),
      'rows (holding only delete records), at the end and after a full GC pass:',
      ...formatTable(
        ['table', 'rows', 'deleted only', 'rows after', 'deleted only after'],
        Object.keys(rowsAtEnd).map((t) => [
          t,
          String(rowsAtEnd[t]?.rows),
          String(rowsAtEnd[t]?.deletedOnly),
          String(rowsAfterFullPass[t]?.rows),
          String(rowsAfterFullPass[t]?.deletedOnly),
        ]),
        '  ',
      ),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  });
}

/** The cache flags as `percolator serve` takes them. */
function cacheArgs(flags: CacheFlags): string[] {
  return [
    ...(flags.rowCacheMib === undefined ? [] : ['--row-cache-mib', String(flags.rowCacheMib)]),
    ...(flags.blockCacheMib === undefined ? [] : ['--block-cache-mib', String(flags.blockCacheMib)]),
  ];
}
