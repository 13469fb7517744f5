/**
 * `bench pairs` end to end (compiled JS under dist/; `npm test` builds first): this build against
 * itself as the baseline, real child benchmarks, and its typed errors.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const mainJs = join(root, 'dist/cli/main.js');

function run(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [mainJs, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const tinyWebIndex = ['webindex', '--docs', '40', '--store', 'memory:', '--load-rates', 'none', '--light-docs', '0'];

it('runs the benchmark on both builds, alternating, and reports every metric of every run', () => {
  const r = run('bench', 'pairs', '--baseline', root, '--rounds', '2', '--json', '--', ...tinyWebIndex);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const out = JSON.parse(r.stdout) as {
    benchmark: string;
    args: string[];
    baseline: string;
    runs: { round: number; side: string; metrics: Record<string, number> }[];
    metrics: Record<string, { candidate: { runs: number[] }; baseline: { runs: number[] }; ratio: number }>;
  };
  expect(out.benchmark).toBe('webindex');
  expect(out.args).toEqual(tinyWebIndex.slice(1));
  expect(out.baseline).toBe(mainJs);
  expect(out.runs.map((x) => [x.round, x.side])).toEqual([
    [1, 'candidate'],
    [1, 'baseline'],
    [2, 'baseline'],
    [2, 'candidate'],
  ]);
  expect(Object.keys(out.metrics)).toEqual(['documentsPerSecond', 'cpuMsPerDocument', 'saturation.jsThreadCores']);
  for (const m of Object.values(out.metrics)) {
    expect(m.candidate.runs).toHaveLength(2);
    expect(m.baseline.runs).toHaveLength(2);
  }
  expect(out.metrics.documentsPerSecond?.ratio).toBeGreaterThan(0);
}, 120_000);

it('says which build, round and message when a run fails, and checks the baseline first', async () => {
  const bad = run('bench', 'pairs', '--baseline', root, '--rounds', '1', '--', 'webindex', '--docs', '-3');
  expect(bad.code).toBe(1);
  expect(bad.stderr).toBe(
    'percolator: BENCH_RUN_FAILED: candidate run 1 exited with 1: percolator: INVALID_ARGUMENT: --docs must be a positive integer, got -3\n',
  );
  const empty = await mkdtemp(join(tmpdir(), 'pairs-baseline-'));
  try {
    const none = run('bench', 'pairs', '--baseline', empty, '--', ...tinyWebIndex);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^percolator: BASELINE_NOT_FOUND: no built CLI at .*dist\/cli\/main\.js/);
  } finally {
    await rm(empty, { recursive: true, force: true });
  }
  const metric = run('bench', 'pairs', '--baseline', root, '--rounds', '1', '--metrics', 'saturation.nothing', '--', ...tinyWebIndex);
  expect(metric.stderr).toBe("percolator: METRIC_NOT_FOUND: the benchmark's JSON has no number at saturation.nothing\n");
  expect(run('bench', 'pairs', '--baseline', root, '--', 'store').stderr).toBe(
    'percolator: INVALID_ARGUMENT: bench store has no default metrics: give --metrics (dotted paths into its --json object)\n',
  );
}, 120_000);
