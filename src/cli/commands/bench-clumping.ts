/**
 * `percolator bench clumping [--seconds S] [--scanners N] [--no-real] [--json] [--svg FILE]`
 *
 * Thin: runs src/bench/clumping.ts — the deterministic bus-clumping simulation (the headline
 * `withAntiClumping`, `withoutAntiClumping`, `ratio`) and, unless --no-real, the real worker in
 * both configurations for S seconds each. With --json, stdout carries exactly one JSON object;
 * progress goes to stderr, and only without --json. --svg also simulates 1, 2, 4, … scanners
 * (the result's `sweep`) and plots the scan rate against them; the listing shows the sweep as a
 * table, one row per scanner count (--json keeps it as the result's array).
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { ClumpingSweepPoint } from '../../bench/clumping.js';
import { commandGroup, parsePositiveInteger, parseTimerSeconds, printResult } from '../parent-command.js';
import { formatTable } from '../table.js';

/** The sweep as a table: one row per scanner count, both configurations (empty without a sweep). */
export function sweepListing(sweep: readonly ClumpingSweepPoint[]): string[] {
  if (sweep.length === 0) return [];
  const ratio = (a: number, b: number) => (b === 0 ? null : `${(Math.round((a / b) * 100) / 100).toFixed(2)}×`);
  return [
    'sweep (simulated; rows scanned and notifications processed per second, with and without anti-clumping):',
    ...formatTable(
      ['scanners', 'rows/s with', 'rows/s without', 'ratio', 'notifications/s with', 'without', 'largest clump with', 'without'],
      sweep.map((p) => [
        String(p.scanners),
        Math.round(p.withAntiClumping.rowsScannedPerSecond),
        Math.round(p.withoutAntiClumping.rowsScannedPerSecond),
        ratio(p.withAntiClumping.rowsScannedPerSecond, p.withoutAntiClumping.rowsScannedPerSecond),
        Math.round(p.withAntiClumping.notificationsPerSecond),
        Math.round(p.withoutAntiClumping.notificationsPerSecond),
        p.withAntiClumping.meanLargestClump.toFixed(2),
        p.withoutAntiClumping.meanLargestClump.toFixed(2),
      ]),
      '  ',
    ),
  ];
}

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
    .option('--seconds <s>', 'measured seconds of each real-worker configuration', parseTimerSeconds('seconds'), 5)
    .option('--scanners <n>', 'scanners, in the simulation and in the real run (defaults 16 and 8)', parsePositiveInteger('scanners'))
    .option('--no-real', 'only the (deterministic) simulation, not the real worker')
    .option('--json', 'print one JSON object')
    .option('--svg <file>', 'also simulate 1, 2, 4, … scanners and plot rows scanned per second against them to this SVG file')
    .action(async (flags: Flags) => {
      const { clumpingSvg, runClumpingBench, sweepScanners } = await import('../../bench/clumping.js');
      const json = flags.json === true;
      const result = await runClumpingBench({
        simulation: flags.scanners === undefined ? {} : { scanners: flags.scanners },
        ...(flags.svg !== undefined ? { sweep: sweepScanners(flags.scanners ?? 16) } : {}),
        real: flags.real ? { seconds: flags.seconds, ...(flags.scanners === undefined ? {} : { scanners: flags.scanners }) } : null,
        log: json ? undefined : (line) => process.stderr.write(`${line}\n`),
      });
      if (flags.svg !== undefined) writeFileSync(flags.svg, clumpingSvg(result));
      if (json) {
        printResult(result, true);
        return;
      }
      const { sweep, ...rest } = result;
      printResult(rest, false);
      const table = sweepListing(sweep);
      if (table.length > 0) process.stdout.write(`${table.join('\n')}\n`);
    });
}
