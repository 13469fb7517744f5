/**
 * `percolator bench webindex [--docs N] [--json] [--store file:|memory:] [--threads N] [--loaders N] [--seed S]
 * [--window N] [--light-docs N] [--light-rate R] [--load-rates LIST|none] [--load-seconds S]
 * [--svg FILE] [--size-svg FILE] [--gc-interval-ms MS] [--full-gc-interval-ms MS] [--stages]`
 */
import { writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { checkedSvg, renderLineChart } from '../../bench/svg-plot.js';
import { DEFAULT_SATURATION_WINDOW, WEB_INDEX_BENCH_STORES } from '../../bench/bench-defaults.js';
import type { WebIndexBenchResult } from '../../bench/webindex-bench.js';
import { DEFAULT_LOADERS, DEFAULT_REMOTE_THREADS, DEFAULT_THREADS } from '../../apps/webindex/defaults.js';
import { UsageError } from '../usage-error.js';
import {
  commandGroup,
  given,
  parseNonNegativeInteger,
  parsePositiveInteger,
  parsePositiveNumber,
  parseTimerSeconds,
  printResult,
} from '../parent-command.js';
import { makeDirs } from '../../util/make-dirs.js';

/** Offered loads of the default load curve, documents per second: light load to past saturation. */
export const DEFAULT_LOAD_RATES: readonly number[] = [20, 50, 100, 150, 200, 300];

/**
 * `--load-rates`: comma-separated positive numbers, or `none` (no load curve). Each is read as
 * every number option is (parent-command.ts: plain decimal, so not `0x10` or `1e2`).
 */
export function parseLoadRates(raw: string): number[] {
  if (raw.trim() === 'none') return [];
  const rate = parsePositiveNumber('load-rates');
  try {
    return raw.split(',').map((x) => rate(x.trim()));
  } catch {
    throw new UsageError(`--load-rates must be positive numbers, comma-separated, or none; got ${given(raw)}`);
  }
}

/**
 * Latency against throughput, one point per offered load (load curve) and the saturation run:
 * the median and p99 crawl-to-index latency (log scale) at the documents per second achieved.
 */
export function webIndexSvg(r: WebIndexBenchResult): string {
  const steps = [...r.loadCurve].sort((a, b) => a.achievedPerSecond - b.achievedPerSecond);
  const sat = r.saturation;
  const svg = renderLineChart({
    title: `Web index (${r.store}): crawl-to-index latency vs throughput; saturation ${sat.documentsPerSecond} docs/s at ${r.documents} documents`,
    xLabel: 'documents indexed per second (achieved)',
    yLabel: 'crawl-to-index latency (ms)',
    logY: true,
    series: [
      { name: 'median', points: steps.map((p) => [p.achievedPerSecond, Math.max(1, p.medianLatencyMs)]) },
      { name: 'p99', points: steps.map((p) => [p.achievedPerSecond, Math.max(1, p.p99LatencyMs)]) },
      {
        name: `saturation (window ${sat.window}): median, p99`,
        points: [
          [sat.documentsPerSecond, Math.max(1, sat.medianLatencyMs)],
          [sat.documentsPerSecond, Math.max(1, sat.p99LatencyMs)],
        ],
      },
    ],
    markers: [{ x: sat.documentsPerSecond, label: `saturation ${sat.documentsPerSecond} docs/s` }],
  });
  return checkedSvg(svg);
}

/**
 * Throughput against repository size in the saturation phase (`saturation.bySize`): each tenth's
 * documents/s at the documents searchable when it ended, with CPU ms per document and engine reads
 * per document (the row caches' misses) on the same axis, as they explain the fall.
 */
export function webIndexSizeSvg(r: WebIndexBenchResult): string {
  const steps = r.saturation.bySize;
  const reads = steps.filter((p) => p.engineReadsPerDocument !== null);
  const svg = renderLineChart({
    title: `Web index (${r.store}): one repository growing to ${r.documents} documents, saturated`,
    xLabel: 'documents searchable',
    yLabel: 'per second / per document',
    series: [
      { name: 'documents/s', points: steps.map((p) => [p.indexedTo, p.documentsPerSecond]) },
      { name: 'CPU ms per document', points: steps.map((p) => [p.indexedTo, p.cpuMsPerDocument]) },
      ...(reads.length === 0
        ? []
        : [
            {
              name: 'engine reads per document',
              points: reads.map((p): [number, number] => [p.indexedTo, p.engineReadsPerDocument as number]),
            },
          ]),
    ],
  });
  return checkedSvg(svg);
}

export function register(program: Command): void {
  commandGroup(program, 'bench')
    .command('webindex')
    .description(
      'the web indexer on the synthetic corpus (3 clustering keys, ~3.3 docs per cluster): documents/s at saturation, crawl-to-index latency at light load, peak RSS',
    )
    .option('--docs <n>', 'documents (saturation phase)', parsePositiveInteger('docs'), 2000)
    .option(
      '--store <kind>',
      'file: (a fresh temporary directory), memory:, or serve (a percolator serve process on a fresh directory, the pipeline its bigtable:// client)',
      'file:',
    )
    .option(
      '--threads <n>',
      `concurrent observer runs (default: ${DEFAULT_THREADS}; ${DEFAULT_REMOTE_THREADS} with --store serve, whose client batches the calls of concurrent runs)`,
      parsePositiveInteger('threads'),
    )
    .option('--loaders <n>', 'concurrent loader transactions', parsePositiveInteger('loaders'), DEFAULT_LOADERS)
    .option('--seed <n>', 'corpus seed', parseNonNegativeInteger('seed'), 42)
    .option(
      '--window <n>',
      'saturation: documents loaded but not yet searchable before loaders wait',
      parsePositiveInteger('window'),
      DEFAULT_SATURATION_WINDOW,
    )
    .option('--light-docs <n>', 'light-load phase: documents (0 skips it)', parseNonNegativeInteger('light-docs'), 200)
    .option('--light-rate <n>', 'light-load phase: documents arriving per second', parsePositiveNumber('light-rate'), 20)
    .option(
      '--load-rates <list>',
      'load curve: offered documents per second, comma-separated, each on a fresh store (none: skip)',
      DEFAULT_LOAD_RATES.join(','),
    )
    .option('--load-seconds <s>', 'load curve: seconds of arrivals per offered load', parseTimerSeconds('load-seconds'), 8)
    .option('--svg <file>', 'write the latency-vs-throughput plot (load curve and saturation) to this file')
    .option('--size-svg <file>', 'write the throughput-vs-repository-size plot (saturation, by tenths) to this file')
    .option(
      '--gc-interval-ms <ms>',
      "targeted background GC passes every this many ms (0: all GC off; default: Percolator's)",
      parseNonNegativeInteger('gc-interval-ms'),
    )
    .option(
      '--full-gc-interval-ms <ms>',
      'full background GC passes at most this often (0: off)',
      parseNonNegativeInteger('full-gc-interval-ms'),
      0,
    )
    .option('--stages', 'also run the pipeline cut after the processor and after clustering (fresh stores): what each stage costs')
    .option('--json', 'print one JSON object')
    .action(
      async (opts: {
        docs: number;
        store: string;
        threads?: number;
        loaders: number;
        seed: number;
        window: number;
        lightDocs: number;
        lightRate: number;
        loadRates: string;
        loadSeconds: number;
        svg?: string;
        sizeSvg?: string;
        gcIntervalMs?: number;
        fullGcIntervalMs: number;
        stages?: boolean;
        json?: boolean;
      }) => {
        const store = WEB_INDEX_BENCH_STORES.find((k) => k === opts.store);
        if (store === undefined) throw new UsageError(`--store must be file:, memory: or serve, got ${opts.store}`);
        const { runWebIndexBench } = await import('../../bench/webindex-bench.js');
        const result = await runWebIndexBench({
          docs: opts.docs,
          store,
          threads: opts.threads,
          loaders: opts.loaders,
          seed: opts.seed,
          window: opts.window,
          lightDocs: opts.lightDocs,
          lightRate: opts.lightRate,
          loadRates: parseLoadRates(opts.loadRates),
          loadSeconds: opts.loadSeconds,
          gcIntervalMs: opts.gcIntervalMs,
          fullGcIntervalMs: opts.fullGcIntervalMs,
          stages: opts.stages === true,
          log: opts.json === true ? undefined : (line) => process.stderr.write(`bench webindex: ${line}\n`),
        });
        if (opts.svg !== undefined) {
          await makeDirs(dirname(opts.svg));
          await writeFile(opts.svg, webIndexSvg(result));
        }
        if (opts.sizeSvg !== undefined) {
          await makeDirs(dirname(opts.sizeSvg));
          await writeFile(opts.sizeSvg, webIndexSizeSvg(result));
        }
        printResult(result, opts.json === true);
      },
    );
}
