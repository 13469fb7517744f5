/**
 * `percolator bench pairs`: one benchmark, this build against a baseline build, in alternating
 * runs — the only comparison this machine's noise allows (the same command varies by ±15 % from
 * run to run, and its speed drifts over minutes, BENCHMARKS.md). Each round runs both builds, one
 * after the other, each in a fresh process with the machine to itself; the order alternates from
 * round to round (candidate first in odd rounds, baseline first in even ones), so a drift weighs on
 * both sides alike. What it reports is per metric: both sides' runs, mean, median and range, the
 * ratio of the means, each pair's ratio and how many pairs the candidate measured higher.
 *
 * Invariants: runs never overlap (one child process at a time); every metric of every run is a
 * finite number read from the benchmark's `--json` object, or the whole comparison fails with a
 * typed error (PairsError) — a partial table would pass for a result.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export type PairsErrorCode = 'BASELINE_NOT_FOUND' | 'BENCH_RUN_FAILED' | 'METRIC_NOT_FOUND';

/** A comparison that could not be made; the evidence (side, round, metric, exit code) is in `details`. */
export class PairsError extends Error {
  constructor(
    readonly code: PairsErrorCode,
    message: string,
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.name = 'PairsError';
  }
}

export type Side = 'candidate' | 'baseline';

/** Runs the benchmark once on one side and returns its `--json` object. */
export type BenchRunner = (side: Side, round: number) => Promise<unknown>;

export interface PairsOptions {
  /** Rounds: each runs both sides once. */
  readonly rounds: number;
  /** Dotted paths of numbers in the benchmark's JSON (`documentsPerSecond`, `saturation.cpuCores`). */
  readonly metrics: readonly string[];
  readonly run: BenchRunner;
  /** Called after each run (progress). */
  readonly onRun?: (run: PairRun) => void;
}

export interface PairRun {
  readonly round: number;
  readonly side: Side;
  /** 1: this side ran first in its round, 2: second. */
  readonly order: 1 | 2;
  readonly metrics: Readonly<Record<string, number>>;
}

export interface SideSummary {
  readonly runs: readonly number[];
  readonly mean: number;
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

export interface MetricSummary {
  readonly candidate: SideSummary;
  readonly baseline: SideSummary;
  /** candidate mean ÷ baseline mean (null when the baseline's mean is 0). */
  readonly ratio: number | null;
  /** candidate ÷ baseline within each round (null where the baseline measured 0). */
  readonly pairRatios: readonly (number | null)[];
  /** Rounds in which the candidate measured more than the baseline. */
  readonly candidateHigherIn: number;
}

export interface PairsResult {
  readonly rounds: number;
  readonly runs: readonly PairRun[];
  readonly metrics: Readonly<Record<string, MetricSummary>>;
}

/** The sides of `round` (1-based) in the order they run. */
export function orderOf(round: number): readonly [Side, Side] {
  return round % 2 === 1 ? ['candidate', 'baseline'] : ['baseline', 'candidate'];
}

/**
 * The number at dotted `path` in `json`.
 * Throws: METRIC_NOT_FOUND when it is missing or not a finite number.
 */
export function metricAt(json: unknown, path: string): number {
  let v: unknown = json;
  for (const part of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[part] : undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new PairsError('METRIC_NOT_FOUND', `the benchmark's JSON has no number at ${path}`, {
      metric: path,
      found: v === undefined ? null : v,
    });
  }
  return v;
}

/** Summaries and ratios are rounded (a benchmark's own figures carry no more precision). */
const round = (x: number, digits: number): number => Number(x.toFixed(digits));
const ratioOf = (a: number, b: number): number | null => (b === 0 ? null : round(a / b, 4));

function summarize(runs: readonly number[]): SideSummary {
  const sorted = [...runs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return {
    runs,
    mean: round(runs.reduce((s, x) => s + x, 0) / runs.length, 3),
    median: round(median, 3),
    min: sorted[0] as number,
    max: sorted[sorted.length - 1] as number,
  };
}

/**
 * Runs `rounds` alternating pairs.
 * Returns: every run's metrics and, per metric, both sides' summaries and ratios.
 * Throws: what `run` throws (BENCH_RUN_FAILED for a child benchmark), METRIC_NOT_FOUND; nothing is
 *   summarized then.
 */
export async function runPairs(options: PairsOptions): Promise<PairsResult> {
  const runs: PairRun[] = [];
  const values = new Map<string, { candidate: number[]; baseline: number[] }>(
    options.metrics.map((m) => [m, { candidate: [], baseline: [] }]),
  );
  for (let r = 1; r <= options.rounds; r++) {
    const order = orderOf(r);
    for (let i = 0; i < 2; i++) {
      const side = order[i] as Side;
      const json = await options.run(side, r);
      const metrics: Record<string, number> = {};
      for (const m of options.metrics) {
        metrics[m] = metricAt(json, m);
        values.get(m)?.[side].push(metrics[m]);
      }
      const run: PairRun = { round: r, side, order: i === 0 ? 1 : 2, metrics };
      runs.push(run);
      options.onRun?.(run);
    }
  }
  const metrics: Record<string, MetricSummary> = {};
  for (const [m, v] of values) {
    const candidate = summarize(v.candidate);
    const baseline = summarize(v.baseline);
    metrics[m] = {
      candidate,
      baseline,
      ratio: ratioOf(candidate.mean, baseline.mean),
      pairRatios: v.candidate.map((c, i) => ratioOf(c, v.baseline[i] as number)),
      candidateHigherIn: v.candidate.filter((c, i) => c > (v.baseline[i] as number)).length,
    };
  }
  return { rounds: options.rounds, runs, metrics };
}

/** A build's command-line entry: `<root>/dist/cli/main.js`. */
export function buildEntry(root: string): string {
  return join(root, 'dist', 'cli', 'main.js');
}

/**
 * The baseline build's entry.
 * Throws: BASELINE_NOT_FOUND when `root` holds no built CLI (run `npx tsc -p tsconfig.build.json` there).
 */
export function baselineEntry(root: string): string {
  const entry = buildEntry(root);
  if (!existsSync(entry)) {
    throw new PairsError('BASELINE_NOT_FOUND', `no built CLI at ${entry} (build the baseline first: npx tsc -p tsconfig.build.json)`, {
      baseline: root,
    });
  }
  return entry;
}

/** Bytes of a failed child's stderr kept as evidence. */
const STDERR_TAIL = 2_000;

/**
 * A runner that starts `node <entry> bench <args> --json` for each side (one process a run,
 * stdout parsed as the benchmark's JSON object).
 * Throws (from the runner): BENCH_RUN_FAILED when the child exits non-zero, is killed, or prints
 * no JSON object.
 */
export function childBenchRunner(entries: Readonly<Record<Side, string>>, args: readonly string[]): BenchRunner {
  const argv = args.includes('--json') ? [...args] : [...args, '--json'];
  return (side, round) =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [entries[side], 'bench', ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-STDERR_TAIL)));
      child.on('error', (e) => reject(new PairsError('BENCH_RUN_FAILED', `${side} run ${round}: ${e.message}`, { side, round })));
      child.on('close', (code, signal) => {
        const evidence = { side, round, exitCode: code, signal, stderr: err.trim() };
        if (code !== 0) {
          const last = evidence.stderr.split('\n').pop() ?? '';
          reject(
            new PairsError(
              'BENCH_RUN_FAILED',
              `${side} run ${round} exited with ${signal ?? code}${last === '' ? '' : `: ${last}`}`,
              evidence,
            ),
          );
          return;
        }
        try {
          resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as unknown);
        } catch {
          reject(new PairsError('BENCH_RUN_FAILED', `${side} run ${round} printed no JSON object`, evidence));
        }
      });
    });
}

/** Metrics compared when `--metrics` is not given, by benchmark. */
export const DEFAULT_PAIR_METRICS: Readonly<Record<string, readonly string[]>> = {
  webindex: ['documentsPerSecond', 'cpuMsPerDocument', 'saturation.jsThreadCores'],
  overhead: ['readRatio', 'writeRatio'],
  oracle: ['timestampsPerSecond'],
  peers: ['percolatorTps', 'ratio'],
};
