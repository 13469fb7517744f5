/** `percolator bench overhead [--seconds S] [--clients N] [--store URL] [--json]` (Figure 8). */
import type { Command } from 'commander';
import { runOverheadBench } from '../../bench/overhead-bench.js';
import { commandGroup, parsePositiveNumber, printResult } from '../parent-command.js';

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('overhead')
    .description("Figure 8: Percolator's transactional reads/writes vs raw store reads/writes on one backend")
    .option('--seconds <s>', 'seconds per phase', parsePositiveNumber('seconds'), 3)
    .option('--clients <n>', 'concurrent clients on each side', parsePositiveNumber('clients'), 32)
    .option('--store <url>', 'backend: file: (a temporary directory), memory:, or a URL', 'file:')
    .option('--json', 'print one JSON object')
    .action(async (opts: { seconds: number; clients: number; store: string; json?: boolean }) => {
      printResult(await runOverheadBench({ seconds: opts.seconds, clients: opts.clients, store: opts.store }), opts.json === true);
    });
}
