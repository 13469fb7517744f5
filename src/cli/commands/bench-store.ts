/**
 * `percolator bench store [--seconds S] [--store memory:|file:] [--json] [--svg FILE]`: prints one
 * row per backend (its rates per second), or with --json the result object as it is.
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { type StoreBenchResult, runStoreBench, storeSvg } from '../../bench/store-bench.js';
import { commandGroup, parseTimerSeconds, printResult } from '../parent-command.js';
import { formatTable } from '../table.js';
import { UsageError } from '../usage-error.js';

/** The readable listing: one row per backend. */
export function storeBenchListing(results: readonly StoreBenchResult[]): string[] {
  return [
    ...formatTable(
      ['store', 'writes/s', 'concurrent writes/s', 'batched cell writes/s', 'point reads/s', 'uncached reads/s', 'scanned cells/s'],
      results.map((r) => [
        // file: ran in a temporary directory, removed since: its path says nothing.
        r.store.startsWith('file:') ? 'file:' : r.store,
        r.rowWritesPerSecond,
        r.concurrentRowWritesPerSecond,
        r.batchedCellWritesPerSecond,
        r.pointReadsPerSecond,
        r.pointReadsUncachedPerSecond,
        r.scanCellsPerSecond,
      ]),
    ),
    '',
    'writes/s: one writer, each single-cell write awaited; concurrent: 64 writers; batched: 100 rows × 10 cells a call, 4 calls in flight.',
    'Writes to file: (a fresh temporary directory, removed after) are durable when acknowledged. Uncached reads: the row cache off.',
  ];
}

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('store')
    .description('raw store throughput (writes single/concurrent/batched, point reads, scans) for memory: and file:')
    .option('--seconds <s>', 'seconds per phase', parseTimerSeconds('seconds'), 2)
    .option('--store <kind>', 'only this backend: memory: or file: (a fresh temporary directory)')
    .option('--json', 'print one JSON object')
    .option('--svg <file>', 'also write a bar chart of every rate to this SVG file')
    .action(async (opts: { seconds: number; store?: string; json?: boolean; svg?: string }) => {
      // Each backend runs in a store of its own (file: in a fresh temporary directory).
      if (opts.store !== undefined && opts.store !== 'memory:' && opts.store !== 'file:')
        throw new UsageError(`--store must be memory: or file:, got ${opts.store}`);
      const stores = opts.store === undefined ? undefined : [opts.store];
      const result = await runStoreBench({ seconds: opts.seconds, stores });
      if (opts.svg !== undefined) writeFileSync(opts.svg, storeSvg(result.results));
      if (opts.json === true) printResult(result, true);
      else process.stdout.write(`${storeBenchListing(result.results).join('\n')}\n`);
    });
}
