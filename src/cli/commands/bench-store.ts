/** `percolator bench store [--seconds S] [--store memory:|file:] [--json]` */
import type { Command } from 'commander';
import { runStoreBench } from '../../bench/store-bench.js';
import { commandGroup, parsePositiveNumber, printResult } from '../parent-command.js';

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('store')
    .description('raw store throughput (writes single/concurrent/batched, point reads, scans) for memory: and file:')
    .option('--seconds <s>', 'seconds per phase', parsePositiveNumber('seconds'), 2)
    .option('--store <kind>', 'only this backend: memory: or file:')
    .option('--json', 'print one JSON object')
    .action(async (opts: { seconds: number; store?: string; json?: boolean }) => {
      const stores = opts.store ? [opts.store.startsWith('file:') ? 'file:' : opts.store] : undefined;
      const result = await runStoreBench({ seconds: opts.seconds, stores });
      printResult(result, opts.json === true);
    });
}
