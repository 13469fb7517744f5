/**
 * `percolator bench peers [--seconds S] [--clients N] [--accounts N] [--gc-interval-ms MS] [--commit-protocol auto|two-phase] [--json] [--svg FILE]`: the bank-transfer
 * workload on Percolator (`file:`) vs PostgreSQL at REPEATABLE READ on loopback (installed and
 * started privately by the benchmark itself). See src/bench/peers-bench.ts.
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import {
  commandGroup,
  given,
  numberOf,
  parseNonNegativeInteger,
  parsePositiveInteger,
  parseTimerSeconds,
  printResult,
} from '../parent-command.js';
import { UsageError } from '../usage-error.js';

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('peers')
    .description('bank transfers/s: Percolator (file:) vs PostgreSQL REPEATABLE READ on loopback, same clients (target ratio >= 1.0)')
    .option('--seconds <s>', 'measured seconds per side and round', parseTimerSeconds('seconds'), 10)
    .option('--clients <n>', 'concurrent clients on each side', parsePositiveInteger('clients'), 16)
    .option('--accounts <n>', 'accounts (equal initial balances)', parsePositiveInteger('accounts'), 1000)
    .option('--warmup <s>', 'unmeasured warm-up seconds per side (default: min(2, seconds/5))', (raw: string) => {
      const n = numberOf(raw, 'decimal');
      if (!Number.isFinite(n) || n < 0) throw new UsageError(`--warmup must be a number >= 0, got ${given(raw)}`);
      return n;
    })
    .option('--rounds <n>', 'rounds; each measures both sides, alternating which goes first', parsePositiveInteger('rounds'), 1)
    .option('--postgres <url>', 'use this PostgreSQL server (postgres://...) instead of a private throwaway cluster')
    .option(
      '--gc-interval-ms <ms>',
      "Percolator's background version GC interval (0: off; default: Percolator's default)",
      parseNonNegativeInteger('gc-interval-ms'),
    )
    .option('--commit-protocol <p>', "Percolator's commit protocol: auto (one phase on the unshared file: store) or two-phase", 'auto')
    .option('--only <side>', 'run one side only: percolator or postgres')
    .option('--json', 'print one JSON object')
    .option('--svg <file>', 'also write a bar chart of both sides to this SVG file')
    .action(
      async (opts: {
        seconds: number;
        clients: number;
        accounts: number;
        warmup?: number;
        rounds: number;
        postgres?: string;
        only?: string;
        gcIntervalMs?: number;
        commitProtocol: string;
        json?: boolean;
        svg?: string;
      }) => {
        if (opts.commitProtocol !== 'auto' && opts.commitProtocol !== 'two-phase') {
          throw new UsageError(`--commit-protocol must be auto or two-phase, got ${opts.commitProtocol}`);
        }
        if (opts.only !== undefined && opts.only !== 'percolator' && opts.only !== 'postgres') {
          throw new UsageError(`--only must be percolator or postgres, got ${opts.only}`);
        }
        const { peersSvg, runPeersBench } = await import('../../bench/peers-bench.js');
        const result = await runPeersBench({
          seconds: opts.seconds,
          clients: opts.clients,
          accounts: opts.accounts,
          warmupSeconds: opts.warmup,
          rounds: opts.rounds,
          postgresUrl: opts.postgres,
          only: opts.only as 'percolator' | 'postgres' | undefined,
          gcIntervalMs: opts.gcIntervalMs,
          commitProtocol: opts.commitProtocol,
        });
        if (opts.svg !== undefined) writeFileSync(opts.svg, peersSvg(result));
        printResult(result, opts.json === true);
        if (!result.totalsOk) process.exitCode = 1;
      },
    );
}
