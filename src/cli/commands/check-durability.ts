/**
 * `percolator check durability [--crash] [--full-disk] [--seconds S] [--data DIR | --store file:DIR] [--json]`
 *
 * Thin: parses flags and runs src/check/durability.ts. With --json, stdout carries exactly one
 * JSON object (progress goes to stderr, and only without --json). Exit code 1 when any
 * acknowledged write was lost or any row came back corrupted: the guarantee failed.
 */
import type { Command } from 'commander';
import { type DurabilityResult, runDurabilityCheck } from '../../check/durability.js';
import { commandGroup, parsePositiveInteger, parseTimerSeconds, printResult } from '../parent-command.js';

interface Flags {
  crash?: boolean;
  fullDisk?: boolean;
  seconds: number;
  data?: string;
  store?: string;
  writers?: number;
  json?: boolean;
}

/** The readable listing's fields: `dataDir` says whether it is gone rather than name a directory that no longer exists. */
export function durabilityListing(result: DurabilityResult): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(result)
      .filter(([k]) => k !== 'dataDirRemoved')
      .map(([k, v]) => [
        k,
        k === 'dataDir' && result.dataDirRemoved ? `${String(v)} (a temporary directory: removed, the check passed)` : v,
      ]),
  );
}

export function register(program: Command): void {
  commandGroup(program, 'check')
    .command('durability')
    .description('every acknowledged write survives kill -9 of the writer (prints acknowledged, lost, kills)')
    .option('--crash', 'SIGKILL the writer at random moments (without it: graceful stops)')
    .option('--full-disk', "squeeze the writer's file-size limit at random moments, as a disk filling up and emptying (needs prlimit)")
    .option('--seconds <s>', 'minimum run time (at least 3 kills happen regardless)', parseTimerSeconds('seconds'), 10)
    .option(
      '--data <dir>',
      "store directory: the check's own, a store holding other tables is refused (STORE_IN_USE); default: a temporary directory, removed when the check passes",
    )
    .option('--store <url>', 'same as --data, as a file:DIR URL')
    .option('--writers <n>', 'concurrent write loops in the writer process', parsePositiveInteger('writers'), 8)
    .option('--json', 'print one JSON object')
    .action(async (flags: Flags) => {
      let dataDir = flags.data;
      if (flags.store !== undefined) {
        if (!flags.store.startsWith('file:')) {
          throw Object.assign(
            new Error(`check durability kills the process that owns the store, so it needs a file:DIR store (got ${flags.store})`),
            {
              code: 'INVALID_STORE_URL',
            },
          );
        }
        if (dataDir !== undefined) throw Object.assign(new Error('give --data or --store, not both'), { code: 'INVALID_ARGUMENT' });
        dataDir = flags.store.slice('file:'.length);
      }
      const json = flags.json === true;
      const result = await runDurabilityCheck({
        dataDir,
        seconds: flags.seconds,
        crash: flags.crash === true,
        fullDisk: flags.fullDisk === true,
        writers: Math.floor(flags.writers ?? 8),
        log: json ? undefined : (line) => process.stderr.write(`${line}\n`),
      });
      printResult(json ? result : durabilityListing(result), json);
      if (result.lost > 0 || result.corrupted > 0) process.exitCode = 1;
    });
}
