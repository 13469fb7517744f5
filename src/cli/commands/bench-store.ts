/** `percolator bench store [--seconds S] [--store memory:|file:] [--json] [--svg FILE]` */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { runStoreBench, storeSvg } from '../../bench/store-bench.js';
import { commandGroup, parsePositiveNumber, printResult } from '../parent-command.js';
import { UsageError } from '../usage-error.js';

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('store')
    .description('raw store throughput (writes single/concurrent/batched, point reads, scans) for memory: and file:')
    .option('--seconds <s>', 'seconds per phase', parsePositiveNumber('seconds'), 2)
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
      printResult(result, opts.json === true);
    });
}
