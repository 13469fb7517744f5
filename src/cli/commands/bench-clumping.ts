/**
 * `percolator bench clumping [--seconds S] [--scanners N] [--no-real] [--json] [--svg FILE]`
 *
 * Thin: runs src/bench/clumping.ts — the deterministic bus-clumping simulation (the headline
 * `withAntiClumping`, `withoutAntiClumping`, `ratio`) and, unless --no-real, the real worker in
 * both configurations for S seconds each. With --json, stdout carries exactly one JSON object;
 * progress goes to stderr, and only without --json. --svg also simulates 1, 2, 4, … scanners
 * (the result's `sweep`) and plots the scan rate against them.
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { clumpingSvg, runClumpingBench, sweepScanners } from '../../bench/clumping.js';
import { commandGroup, parsePositiveInteger, parsePositiveNumber, printResult } from '../parent-command.js';

interface Flags {
  seconds: number;
  scanners?: number;
  real: boolean;
  json?: boolean;
  svg?: string;
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
    .option('--svg <file>', 'also simulate 1, 2, 4, … scanners and plot rows scanned per second against them to this SVG file')
    .action(async (flags: Flags) => {
      const json = flags.json === true;
      const result = await runClumpingBench({
        simulation: flags.scanners === undefined ? {} : { scanners: flags.scanners },
        ...(flags.svg !== undefined ? { sweep: sweepScanners(flags.scanners ?? 16) } : {}),
        real: flags.real ? { seconds: flags.seconds, ...(flags.scanners === undefined ? {} : { scanners: flags.scanners }) } : null,
        log: json ? undefined : (line) => process.stderr.write(`${line}\n`),
      });
      if (flags.svg !== undefined) writeFileSync(flags.svg, clumpingSvg(result));
      printResult(result, json);
    });
}
