/** `percolator bench store [--seconds S] [--store memory:|file:] [--json] [--svg FILE]` */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { runStoreBench, storeSvg } from '../../bench/store-bench.js';
import { commandGroup, parsePositiveNumber, printResult } from '../parent-command.js';

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('store')
    .description('raw store throughput (writes single/concurrent/batched, point reads, scans) for memory: and file:')
    .option('--seconds <s>', 'seconds per phase', parsePositiveNumber('seconds'), 2)
    .option('--store <kind>', 'only this backend: memory: or file:')
    .option('--json', 'print one JSON object')
    .option('--svg <file>', 'also write a bar chart of every rate to this SVG file')
    .action(async (opts: { seconds: number; store?: string; json?: boolean; svg?: string }) => {
      const stores = opts.store ? [opts.store.startsWith('file:') ? 'file:' : opts.store] : undefined;
      const result = await runStoreBench({ seconds: opts.seconds, stores });
      if (opts.svg !== undefined) writeFileSync(opts.svg, storeSvg(result.results));
      printResult(result, opts.json === true);
    });
}
