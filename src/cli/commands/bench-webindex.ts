/**
 * `percolator bench webindex [--docs N] [--json] [--store file:|memory:] [--threads N] [--seed S]
 * [--window N] [--light-docs N] [--light-rate R] [--gc-interval-ms MS] [--full-gc-interval-ms MS]`
 */
import type { Command } from 'commander';
import { DEFAULT_SATURATION_WINDOW, runWebIndexBench } from '../../bench/webindex-bench.js';
import { commandGroup, parseNonNegativeInteger, parsePositiveNumber, printResult } from '../parent-command.js';

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('webindex')
    .description(
      'the web indexer on the synthetic corpus (3 clustering keys, ~3.3 docs per cluster): documents/s at saturation, crawl-to-index latency at light load, peak RSS',
    )
    .option('--docs <n>', 'documents (saturation phase)', parsePositiveNumber('docs'), 2000)
    .option('--store <kind>', 'file: (a fresh temporary directory) or memory:', 'file:')
    .option('--threads <n>', 'concurrent observer runs', parsePositiveNumber('threads'), 16)
    .option('--seed <n>', 'corpus seed', Number, 42)
    .option(
      '--window <n>',
      'saturation: documents loaded but not yet searchable before loaders wait',
      parsePositiveNumber('window'),
      DEFAULT_SATURATION_WINDOW,
    )
    .option('--light-docs <n>', 'light-load phase: documents (0 skips it)', Number, 200)
    .option('--light-rate <n>', 'light-load phase: documents arriving per second', parsePositiveNumber('light-rate'), 20)
    .option(
      '--gc-interval-ms <ms>',
      "targeted background GC passes every this many ms (0: all GC off; default: Percolator's)",
      parseNonNegativeInteger('gc-interval-ms'),
    )
    .option(
      '--full-gc-interval-ms <ms>',
      'full background GC passes at most this often (0: off)',
      parseNonNegativeInteger('full-gc-interval-ms'),
      0,
    )
    .option('--json', 'print one JSON object')
    .action(
      async (opts: {
        docs: number;
        store: string;
        threads: number;
        seed: number;
        window: number;
        lightDocs: number;
        lightRate: number;
        gcIntervalMs?: number;
        fullGcIntervalMs: number;
        json?: boolean;
      }) => {
        if (opts.store !== 'file:' && opts.store !== 'memory:') {
          throw Object.assign(new Error(`--store must be file: or memory:, got ${opts.store}`), { code: 'INVALID_ARGUMENT' });
        }
        const result = await runWebIndexBench({
          docs: opts.docs,
          store: opts.store,
          threads: opts.threads,
          seed: opts.seed,
          window: opts.window,
          lightDocs: opts.lightDocs,
          lightRate: opts.lightRate,
          gcIntervalMs: opts.gcIntervalMs,
          fullGcIntervalMs: opts.fullGcIntervalMs,
          log: opts.json === true ? undefined : (line) => process.stderr.write(`bench webindex: ${line}\n`),
        });
        printResult(result, opts.json === true);
      },
    );
}
