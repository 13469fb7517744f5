/**
 * `percolator bench pairs --baseline DIR [--rounds N] [--metrics a,b.c] [--json] -- BENCH [OPTIONS…]`:
 * runs `bench BENCH OPTIONS --json` with this build and with the build in DIR, alternating (see
 * src/bench/pairs-bench.ts), and prints both sides per metric with the ratio of their means.
 */
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { DEFAULT_PAIR_METRICS, baselineEntry, childBenchRunner, runPairs } from '../../bench/pairs-bench.js';
import { commandGroup, parsePositiveInteger, printResult } from '../parent-command.js';
import { UsageError } from '../usage-error.js';

/** `--metrics`: comma-separated dotted paths, or the benchmark's defaults. */
export function pairMetrics(bench: string, raw: string | undefined): string[] {
  if (raw === undefined) {
    const defaults = DEFAULT_PAIR_METRICS[bench];
    if (defaults === undefined)
      throw new UsageError(`bench ${bench} has no default metrics: give --metrics (dotted paths into its --json object)`);
    return [...defaults];
  }
  const metrics = raw.split(',').map((m) => m.trim());
  if (metrics.some((m) => m === '' || m.split('.').some((p) => p === ''))) {
    throw new UsageError(`--metrics must be dotted paths, comma-separated, got ${raw}`);
  }
  return metrics;
}

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('pairs')
    .description('one benchmark, this build against a baseline build (DIR with dist/), in alternating runs: means, medians, ratios')
    .argument('<bench...>', 'the benchmark and its options, after -- (e.g. -- webindex --docs 30000 --load-rates none)')
    .requiredOption('--baseline <dir>', 'the baseline build: a checkout with dist/ built (npx tsc -p tsconfig.build.json)')
    .option('--rounds <n>', 'rounds; each runs both builds, the order alternating', parsePositiveInteger('rounds'), 4)
    .option('--metrics <list>', 'dotted paths of numbers in the benchmark JSON, comma-separated (default: per benchmark)')
    .option('--json', 'print one JSON object')
    .action(async (bench: string[], opts: { baseline: string; rounds: number; metrics?: string; json?: boolean }) => {
      const [name, ...args] = bench as [string, ...string[]];
      if (name === 'pairs') throw new UsageError('bench pairs cannot compare itself');
      const metrics = pairMetrics(name, opts.metrics);
      const entries = { candidate: fileURLToPath(new URL('../main.js', import.meta.url)), baseline: baselineEntry(opts.baseline) };
      const result = await runPairs({
        rounds: opts.rounds,
        metrics,
        run: childBenchRunner(entries, [name, ...args]),
        onRun:
          opts.json === true
            ? undefined
            : (r) =>
                process.stderr.write(
                  `bench pairs: round ${r.round} ${r.side.padEnd(9)} ${Object.entries(r.metrics)
                    .map(([k, v]) => `${k} ${v}`)
                    .join(', ')}\n`,
                ),
      });
      printResult({ benchmark: name, args, candidate: entries.candidate, baseline: entries.baseline, ...result }, opts.json === true);
    });
}
