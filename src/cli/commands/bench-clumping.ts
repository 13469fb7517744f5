/**
 * `percolator bench clumping [--seconds S] [--scanners N] [--no-real] [--json]`
 *
 * Thin: runs src/bench/clumping.ts — the deterministic bus-clumping simulation (the headline
 * `withAntiClumping`, `withoutAntiClumping`, `ratio`) and, unless --no-real, the real worker in
 * both configurations for S seconds each. With --json, stdout carries exactly one JSON object;
 * progress goes to stderr, and only without --json.
 */
import type { Command } from 'commander';
import { runClumpingBench } from '../../bench/clumping.js';
import { commandGroup, parsePositiveInteger, parsePositiveNumber, printResult } from '../parent-command.js';

interface Flags {
  seconds: number;
  scanners?: number;
  real: boolean;
  json?: boolean;
}

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('clumping')
    .description(
      'bus clumping (Percolator §2.4): scanners over a table with slow rows, with and without anti-clumping (prints withAntiClumping, withoutAntiClumping, ratio)',
    )
    .option('--seconds <s>', 'measured seconds of each real-worker configuration', parsePositiveNumber('seconds'), 5)
    .option('--scanners <n>', 'scanners, in the simulation and in the real run (defaults 16 and 8)', parsePositiveInteger('scanners'))
    .option('--no-real', 'only the (deterministic) simulation, not the real worker')
    .option('--json', 'print one JSON object')
    .action(async (flags: Flags) => {
      const json = flags.json === true;
      const result = await runClumpingBench({
        simulation: flags.scanners === undefined ? {} : { scanners: flags.scanners },
        real: flags.real ? { seconds: flags.seconds, ...(flags.scanners === undefined ? {} : { scanners: flags.scanners }) } : null,
        log: json ? undefined : (line) => process.stderr.write(`${line}\n`),
      });
      printResult(result, json);
    });
}
