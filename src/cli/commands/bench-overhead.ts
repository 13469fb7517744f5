/** `percolator bench overhead [--seconds S] [--clients N] [--store URL] [--txn-keys string|bytes] [--json] [--svg FILE]` (Figure 8). */
import { writeFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import type { TxnKeyForm } from '../../bench/overhead-bench.js';
import { commandGroup, parsePositiveInteger, parseTimerSeconds, printResult } from '../parent-command.js';

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('overhead')
    .description("Figure 8: Percolator's transactional reads/writes vs raw store reads/writes on one backend")
    .option('--seconds <s>', 'seconds per phase', parseTimerSeconds('seconds'), 3)
    .option('--clients <n>', 'concurrent clients on each side', parsePositiveInteger('clients'), 32)
    .option('--store <url>', 'backend: file: (a temporary directory), memory:, or a URL', 'file:')
    .addOption(
      new Option('--txn-keys <form>', "the transactional reads' row keys: as strings, or as the raw side's bytes")
        .choices(['string', 'bytes'])
        .default('string'),
    )
    .option('--json', 'print one JSON object')
    .option('--svg <file>', 'also write the bar chart (Figure 8) to this SVG file')
    .action(async (opts: { seconds: number; clients: number; store: string; txnKeys: TxnKeyForm; json?: boolean; svg?: string }) => {
      const { overheadSvg, runOverheadBench } = await import('../../bench/overhead-bench.js');
      const result = await runOverheadBench({ seconds: opts.seconds, clients: opts.clients, store: opts.store, txnKeys: opts.txnKeys });
      if (opts.svg !== undefined) writeFileSync(opts.svg, overheadSvg(result));
      printResult(result, opts.json === true);
    });
}
