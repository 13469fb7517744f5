/**
 * `percolator check bank [--crash] [--full-disk] [--seconds S] [--store URL] [--accounts N] [--workers W] [--gc-interval-ms MS]
 *  [--tail N] [--outage-ms MS] [--json]`
 *
 * Thin: parses flags and runs src/check/bank.ts. With --json, stdout carries exactly one JSON
 * object (progress goes to stderr, and only without --json). Exit code 1 when the guarantee
 * failed: any anomaly, any lock left, totals that differ, a failed worker, or no commit at all.
 * A `bigtable://` store that goes away (its server stopped) ends it with STORE_OUT_OF_REACH, exit 1.
 */
import type { Command } from 'commander';
import { DEFAULT_OUTAGE_MS } from '../../check/store-reach.js';
import { commandGroup, parseNonNegativeInteger, parsePositiveInteger, parseTimerSeconds, printResult } from '../parent-command.js';

interface Flags {
  crash?: boolean;
  fullDisk?: boolean;
  seconds: number;
  store?: string;
  accounts: number;
  workers: number;
  concurrency: number;
  gcIntervalMs: number;
  tail: number;
  outageMs: number;
  json?: boolean;
}

export function register(program: Command): void {
  commandGroup(program, 'check')
    .command('bank')
    .description(
      'concurrent transfers under kill -9; snapshot sums and an Elle-style history check (prints accounts, transfers, committed, crashes, totalBefore, totalAfter, anomalies, locksLeft)',
    )
    .option('--crash', 'SIGKILL workers at commit protocol points and at random moments (without it: no kills)')
    .option(
      '--full-disk',
      "squeeze the store's file-size limit at random moments, as a disk filling up and emptying (file: only; needs prlimit)",
    )
    .option(
      '--seconds <s>',
      'how long transfers run (with --crash, longer if needed for 50 crashes per 30 s, up to 3×)',
      parseTimerSeconds('seconds'),
      10,
    )
    .option(
      '--store <url>',
      "store URL (memory:, file:DIR): the check's own, one holding other tables is refused (STORE_IN_USE); default: file: in a temporary directory, removed when the check passes",
    )
    .option('--accounts <n>', 'number of accounts (at least 2)', parsePositiveInteger('accounts'), 10)
    .option('--workers <n>', 'worker processes', parsePositiveInteger('workers'), 3)
    .option('--concurrency <n>', 'concurrent transfer loops per worker', parsePositiveInteger('concurrency'), 2)
    .option(
      '--gc-interval-ms <ms>',
      'version GC during the run: a full pass by the supervisor and targeted passes in every worker this often (0: off)',
      parseNonNegativeInteger('gc-interval-ms'),
      0,
    )
    .option(
      '--tail <n>',
      "transfer ids kept in each account's log (more than ~24 makes it a long value, stored in data cells)",
      parsePositiveInteger('tail'),
      16,
    )
    .option(
      '--outage-ms <ms>',
      'a bigtable:// store out of reach this long ends the check (STORE_OUT_OF_REACH)',
      parsePositiveInteger('outage-ms'),
      DEFAULT_OUTAGE_MS,
    )
    .option('--json', 'print one JSON object')
    .action(async (flags: Flags) => {
      const { runBankCheck } = await import('../../check/bank.js');
      const json = flags.json === true;
      const result = await runBankCheck({
        seconds: flags.seconds,
        crash: flags.crash === true,
        fullDisk: flags.fullDisk === true,
        store: flags.store,
        accounts: flags.accounts,
        workers: flags.workers,
        concurrency: flags.concurrency,
        gcIntervalMs: flags.gcIntervalMs,
        tailLength: flags.tail,
        outageMs: flags.outageMs,
        minCrashes: flags.crash === true ? Math.ceil((flags.seconds * 50) / 30) : 0,
        log: json ? undefined : (line) => process.stderr.write(`${line}\n`),
      });
      printResult(result, json);
      if (!result.ok) process.exitCode = 1;
    });
}
