/**
 * What the commands print for a person (compiled JS under dist/; `npm test` builds first):
 * `bench store` and `bench clumping`'s sweep as tables, one row per backend / scanner count, with
 * --json unchanged; `bench --help` naming every benchmark registered; `check durability` saying
 * its temporary directory is gone rather than naming it as if it were there; `oracle` saying it
 * stopped, as `serve` does.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import type { ClumpingSweepPoint } from '../src/bench/clumping.js';
import type { ClumpingSimResult } from '../src/bench/clumping-sim.js';
import type { DurabilityResult } from '../src/check/durability.js';
import { sweepListing } from '../src/cli/commands/bench-clumping.js';
import { durabilityListing } from '../src/cli/commands/check-durability.js';
import { spawnCli } from './support/cli-process.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'cli-listings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [mainJs, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

it('bench store prints one row per backend; --json is the result object', () => {
  const r = run('bench', 'store', '--seconds', '0.02');
  expect(r.code).toBe(0);
  const lines = r.stdout.split('\n');
  expect(lines[0]).toMatch(
    /^store +writes\/s +concurrent writes\/s +batched cell writes\/s +point reads\/s +uncached reads\/s +scanned cells\/s$/,
  );
  expect(lines[1]).toMatch(/^memory: +[\d,]+ +[\d,]+ +[\d,]+ +[\d,]+ +— +[\d,]+$/);
  expect(lines[2]).toMatch(/^file: +[\d,]+ +[\d,]+ +[\d,]+ +[\d,]+ +[\d,]+ +[\d,]+$/);
  expect(r.stdout).not.toContain('{');
  const json = run('bench', 'store', '--seconds', '0.02', '--store', 'memory:', '--json');
  expect(json.code).toBe(0);
  expect(JSON.parse(json.stdout)).toEqual({
    results: [
      {
        store: 'memory:',
        rowWritesPerSecond: expect.any(Number),
        concurrentRowWritesPerSecond: expect.any(Number),
        batchedCellWritesPerSecond: expect.any(Number),
        pointReadsPerSecond: expect.any(Number),
        pointReadsUncachedPerSecond: null,
        scanCellsPerSecond: expect.any(Number),
      },
    ],
  });
});

it("bench clumping's sweep is a table, one row per scanner count", () => {
  const sim = (rows: number, notifications: number, largest: number): ClumpingSimResult => ({
    antiClumping: true,
    rowsScannedPerSecond: rows,
    notificationsPerSecond: notifications,
    rowsScannedPerScannerSecond: rows,
    medianLatencyMs: 1,
    p99LatencyMs: 2,
    backlogAtEnd: 0,
    meanClumps: 1,
    meanLargestClump: largest,
    waitFraction: 0,
    jumps: 0,
    simulatedSeconds: 50,
    events: 10,
  });
  const sweep: ClumpingSweepPoint[] = [
    { scanners: 1, withAntiClumping: sim(713, 676, 1), withoutAntiClumping: sim(713, 676, 1) },
    { scanners: 16, withAntiClumping: sim(132325.4, 1970, 1.03), withoutAntiClumping: sim(12600, 680, 15.891) },
  ];
  const lines = sweepListing(sweep);
  expect(lines).toHaveLength(4);
  expect(lines[1]).toMatch(
    /^ {2}scanners +rows\/s with +rows\/s without +ratio +notifications\/s with +without +largest clump with +without$/,
  );
  expect(lines[2]?.trim().split(/ {2,}/)).toEqual(['1', '713', '713', '1.00×', '676', '676', '1.00', '1.00']);
  expect(lines[3]?.trim().split(/ {2,}/)).toEqual(['16', '132,325', '12,600', '10.50×', '1,970', '680', '1.03', '15.89']);
  expect(sweepListing([])).toEqual([]);
});

it('bench --help names every benchmark registered', () => {
  const help = run('bench', '--help').stdout;
  const description = help.slice(help.indexOf('\n\n') + 2, help.indexOf('\n\nOptions:')).replace(/\s+/g, ' ');
  const names = help
    .slice(help.indexOf('Commands:'))
    .split('\n')
    .slice(1)
    .map((l) => /^ {2}([a-z]+)/.exec(l)?.[1])
    .filter((n): n is string => n !== undefined && n !== 'help');
  expect(names).toContain('clumping');
  expect(names.length).toBeGreaterThanOrEqual(8);
  for (const name of names) expect(description).toMatch(new RegExp(`[:,] ${name}\\b`));
});

it("check durability's listing says a removed temporary directory is gone; --json keeps both fields", () => {
  const result: DurabilityResult = {
    acknowledged: 10,
    lost: 0,
    corrupted: 0,
    kills: 3,
    stops: 0,
    unacknowledgedFound: 1,
    squeezes: 0,
    refusedWrites: 0,
    rowsScanned: 11,
    seconds: 1,
    dataDir: '/tmp/percolator-durability-x',
    dataDirRemoved: true,
    mode: 'crash',
    examples: [],
  };
  const listed = durabilityListing(result);
  expect(listed.dataDir).toBe('/tmp/percolator-durability-x (a temporary directory: removed, the check passed)');
  expect(Object.keys(listed)).not.toContain('dataDirRemoved');
  expect(Object.keys(listed).indexOf('dataDir')).toBe(Object.keys(result).indexOf('dataDir'));
  expect(durabilityListing({ ...result, dataDirRemoved: false }).dataDir).toBe('/tmp/percolator-durability-x');
});

it('oracle says it stopped on SIGTERM, on stderr and in a JSON line, as serve does', async () => {
  const oracle = spawnCli(mainJs, ['oracle', '--port', '0', '--mark', join(dir, 'oracle.mark')]);
  const listening = await oracle.waitForStdout((out) => out.includes('\n'), 'listening');
  expect(JSON.parse(listening)).toMatchObject({ listening: { host: '127.0.0.1', port: expect.any(Number) } });
  oracle.child.kill('SIGTERM');
  expect(await oracle.exited).toBe(0);
  expect(oracle.stderr()).toBe('percolator oracle: SIGTERM: stopping\n');
  const lines = oracle.stdout().trimEnd().split('\n');
  expect(lines).toHaveLength(2);
  expect(JSON.parse(lines[1] ?? '')).toEqual({
    stopped: true,
    signal: 'SIGTERM',
    requests: 0,
    timestamps: 0,
    persistedMark: expect.any(Number),
  });
});
