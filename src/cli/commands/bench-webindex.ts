/** `percolator bench webindex [--docs N] [--json] [--store file:|memory:] [--threads N] [--seed S]` */
import type { Command } from 'commander';
import { runWebIndexBench } from '../../bench/webindex-bench.js';
import { commandGroup, parsePositiveNumber, printResult } from '../parent-command.js';

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('webindex')
    .description('the web indexer on the synthetic corpus (3 clustering keys, ~3.3 docs per cluster): documents/s and crawl-to-index latency')
    .option('--docs <n>', 'documents', parsePositiveNumber('docs'), 2000)
    .option('--store <kind>', 'file: (a fresh temporary directory) or memory:', 'file:')
    .option('--threads <n>', 'concurrent observer runs', parsePositiveNumber('threads'), 16)
    .option('--seed <n>', 'corpus seed', Number, 42)
    .option('--json', 'print one JSON object')
    .action(async (opts: { docs: number; store: string; threads: number; seed: number; json?: boolean }) => {
      if (opts.store !== 'file:' && opts.store !== 'memory:') {
        throw Object.assign(new Error(`--store must be file: or memory:, got ${opts.store}`), { code: 'INVALID_ARGUMENT' });
      }
      const result = await runWebIndexBench({ docs: opts.docs, store: opts.store, threads: opts.threads, seed: opts.seed });
      printResult(result, opts.json === true);
    });
}
