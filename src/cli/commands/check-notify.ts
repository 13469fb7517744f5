/**
 * `percolator check notify [--crash] [--full-disk] [--seconds S] [--store URL] [--workers W] [--rows N] [--outage-ms MS] [--json]`
 *
 * Thin: parses flags and runs src/check/notify.ts. With --json, stdout carries exactly one JSON
 * object (`changes`, `processed`, `missed`, `duplicateCommits`, `crashes`, …); progress goes to
 * stderr, and only without --json. Exit code 1 when the guarantee failed: a missed change, a
 * duplicate observer commit, an out-of-order or unknown log entry, no quiescence, a failed
 * worker, or no change at all. A `bigtable://` store that goes away (its server stopped) ends it
 * with STORE_OUT_OF_REACH, exit 1.
 */
import type { Command } from 'commander';
import { DEFAULT_OUTAGE_MS } from '../../check/store-reach.js';
import { commandGroup, parsePositiveInteger, parseTimerSeconds, printResult } from '../parent-command.js';

interface Flags {
  crash?: boolean;
  fullDisk?: boolean;
  seconds: number;
  store?: string;
  workers: number;
  rows: number;
  writers: number;
  outageMs: number;
  json?: boolean;
}

export function register(program: Command): void {
  commandGroup(program, 'check')
    .command('notify')
    .description(
      'observers under kill -9: every change processed, none committed twice (prints changes, processed, missed, duplicateCommits, crashes)',
    )
    .option('--crash', 'SIGKILL workers at random moments and inside observer commits (without it: no kills)')
    .option(
      '--full-disk',
      "squeeze the store's file-size limit while the writers run, as a disk filling up and emptying (file: only; needs prlimit)",
    )
    .option('--seconds <s>', 'how long writers run', parseTimerSeconds('seconds'), 10)
    .option(
      '--store <url>',
      "store URL (memory:, file:DIR, bigtable://HOST:PORT): the check's own, one holding other tables is refused (STORE_IN_USE); default memory: (the supervisor holding it is never killed), with --full-disk file: in a temporary directory removed when the check passes",
    )
    .option('--workers <n>', 'worker processes', parsePositiveInteger('workers'), 3)
    .option('--rows <n>', 'rows the writers change', parsePositiveInteger('rows'), 50)
    .option('--writers <n>', 'concurrent writer loops', parsePositiveInteger('writers'), 2)
    .option(
      '--outage-ms <ms>',
      'a bigtable:// store out of reach this long ends the check (STORE_OUT_OF_REACH)',
      parsePositiveInteger('outage-ms'),
      DEFAULT_OUTAGE_MS,
    )
    .option('--json', 'print one JSON object')
    .action(async (flags: Flags) => {
      const { runNotifyCheck } = await import('../../check/notify.js');
      const json = flags.json === true;
      const result = await runNotifyCheck({
        seconds: flags.seconds,
        crash: flags.crash === true,
        fullDisk: flags.fullDisk === true,
        store: flags.store,
        workers: flags.workers,
        rows: flags.rows,
        writers: flags.writers,
        outageMs: flags.outageMs,
        log: json ? undefined : (line) => process.stderr.write(`${line}\n`),
      });
      printResult(result, json);
      if (!result.ok) process.exitCode = 1;
    });
}
