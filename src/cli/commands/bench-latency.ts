/**
 * `percolator bench latency [--docs N] [--seed S] [--hour-seconds H] [--rates LIST] [--svg FILE] [--json]`:
 * the paper's Figure 7 — crawl-to-index median latency of the incremental web indexer vs a batch
 * recomputation in back-to-back rounds, at crawl rates of 1–100 % of the repository per hour
 * (time compressed). See src/bench/latency-bench.ts. Progress goes to stderr.
 */
import { writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_RATES } from '../../bench/bench-defaults.js';
import type { LatencyBenchResult } from '../../bench/latency-bench.js';
import { checkedSvg, renderLineChart } from '../../bench/svg-plot.js';
import {
  commandGroup,
  given,
  parseNonNegativeInteger,
  parsePositiveInteger,
  parsePositiveNumber,
  parseTimerSeconds,
  printResult,
} from '../parent-command.js';
import { UsageError } from '../usage-error.js';
import { makeDirs } from '../../util/make-dirs.js';

/** The Figure-7-style plot: median latency vs crawl rate, both pipelines, log-log. */
export function latencySvg(r: LatencyBenchResult): string {
  const svg = renderLineChart({
    title: `Crawl-to-index median latency, ${r.repositoryDocuments} documents (1 h = ${r.hourSeconds} s, ${r.timeCompression}× compressed)`,
    xLabel: 'crawl rate (% of the repository re-crawled per compressed hour)',
    yLabel: 'median latency (ms)',
    logX: true,
    logY: true,
    series: [
      { name: 'batch (back-to-back full recomputation)', points: r.points.map((p) => [p.crawlRatePercentPerHour, p.batchMedianMs]) },
      { name: 'incremental (Percolator observers)', points: r.points.map((p) => [p.crawlRatePercentPerHour, p.incrementalMedianMs]) },
    ],
    markers:
      r.crossoverPercentPerHour !== null && r.crossoverPercentPerHour <= 100
        ? [
            {
              x: r.crossoverPercentPerHour,
              label: `crossover ${r.crossoverPercentPerHour} %/h${r.crossoverExtrapolated ? ' (extrapolated)' : ''}`,
            },
          ]
        : [],
  });
  return checkedSvg(svg);
}

function printTable(r: LatencyBenchResult): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  out(`repository: ${r.repositoryDocuments} documents (${r.keyMode} keys, ${r.store} store, seed ${r.seed})`);
  out(`time compression: ${r.timeCompression}× (one crawl-rate hour = ${r.hourSeconds} real seconds); latencies are real milliseconds`);
  out(
    `batch round: ${r.batch.roundMs} ms median of ${JSON.stringify(r.batch.roundsMs)} (read ${r.batch.readMs} + compute ${r.batch.computeMs}); ${r.batch.msPerDocument} ms/document`,
  );
  out(
    `incremental capacity: ${r.incremental.capacityDocsPerSecond} re-crawls/s (saturates at ${r.incremental.saturationPercentPerHour} %/h)`,
  );
  out('');
  out('rate %/h   crawls  indexed  incremental p50 ms  p90 ms    batch p50 ms   ratio    drain ms');
  for (const p of r.points) {
    out(
      `${String(p.crawlRatePercentPerHour).padStart(8)}  ${String(p.crawls).padStart(7)}  ${String(p.indexed).padStart(7)}  ${String(p.incrementalMedianMs).padStart(18)}  ${String(p.incrementalP90Ms).padStart(6)}  ${String(p.batchMedianMs).padStart(14)}  ${String(p.ratio).padStart(6)}  ${String(p.drainMs).padStart(10)}${p.saturated ? '  saturated' : ''}`,
    );
  }
  out('');
  out(`crossover: ${r.crossoverPercentPerHour === null ? 'none' : `${r.crossoverPercentPerHour} %/h`} — ${r.crossoverMethod}`);
  out(
    `target: ≥ ${r.target.ratio}× at ${r.target.atPercentPerHour} %/h: measured ${r.target.measuredRatio}× (${r.target.met ? 'met' : 'NOT met'})${r.target.extrapolatedDocuments === null ? '' : `; batch rounds growing in proportion would reach it at ≈ ${r.target.extrapolatedDocuments} documents`}`,
  );
  out(
    `elapsed: ${(r.elapsedMs / 1000).toFixed(1)} s; load (1 min) ${r.machine.load1mStart} → ${r.machine.load1mEnd} on ${r.machine.cpus} CPUs`,
  );
}

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('latency')
    .description('Figure 7: median crawl-to-index latency, incremental vs batch recomputation, at crawl rates 1-100 %/h (time compressed)')
    .option('--docs <n>', 'repository size (synthetic documents)', parsePositiveInteger('docs'), 1000)
    .option('--seed <n>', 'corpus and schedule seed', parseNonNegativeInteger('seed'), 42)
    .option('--hour-seconds <s>', 'real seconds per compressed hour (compression = 3600 / s)', parseTimerSeconds('hour-seconds'), 10)
    .option('--rates <list>', 'crawl rates, % of the repository per hour, comma-separated', DEFAULT_RATES.join(','))
    .option('--min-samples <n>', 're-crawls per rate at least (low rates run several hours)', parsePositiveInteger('min-samples'), 20)
    .option('--threads <n>', 'concurrent observer runs', parsePositiveInteger('threads'), 16)
    .option('--store <kind>', 'file: (a fresh temporary directory) or memory:', 'file:')
    .option('--svg <file>', 'write the Figure-7-style plot (log-log) to this file')
    .option('--json', 'print one JSON object')
    .action(
      async (opts: {
        docs: number;
        seed: number;
        hourSeconds: number;
        rates: string;
        minSamples: number;
        threads: number;
        store: string;
        svg?: string;
        json?: boolean;
      }) => {
        if (opts.store !== 'file:' && opts.store !== 'memory:') throw new UsageError(`--store must be file: or memory:, got ${opts.store}`);
        // Each read as every number option is (plain decimal: not 0x10 or 1e1), then capped.
        const rates = opts.rates.split(',').map((s) => parsePositiveNumber('rates')(s.trim()));
        if (rates.some((r) => r > 100)) throw new UsageError(`--rates must be numbers in (0, 100], got ${given(opts.rates)}`);
        const { runLatencyBench } = await import('../../bench/latency-bench.js');
        const result = await runLatencyBench({
          docs: opts.docs,
          seed: opts.seed,
          hourSeconds: opts.hourSeconds,
          rates,
          minSamples: opts.minSamples,
          threads: opts.threads,
          store: opts.store,
          log: (line) => process.stderr.write(`[bench latency] ${line}\n`),
        });
        if (opts.svg !== undefined) {
          await makeDirs(dirname(opts.svg));
          await writeFile(opts.svg, latencySvg(result));
        }
        if (opts.json === true) printResult(result, true);
        else printTable(result);
      },
    );
}
