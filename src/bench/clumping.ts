/**
 * `percolator bench clumping`: reproduces the "bus clumping" of Percolator §2.4 — many scanners
 * over a table with slow rows, with and without anti-clumping — and reports rows scanned per
 * second for both (a program, not a test).
 *
 * Two parts:
 * - `simulation` (the headline numbers, deterministic): clumping-sim.ts, a discrete-event model
 *   of N scanners on a ring of rows with a few slow rows and a Poisson stream of changes. The
 *   same options always give the same numbers.
 * - `real` (optional, noisy: it shares the machine): clumping-real.ts, the actual worker and
 *   scanner of src/notify, once with the real lock service (anti-clumping: jump on a held row)
 *   and once with a lock service that waits behind the holder (no anti-clumping), plus the
 *   anti-clumping run on a one-tablet table, where the scanner's random origin degenerates to
 *   the table's first row (test/notify-scanner.test.ts).
 *
 * `ratio` = rows scanned per second with anti-clumping ÷ without, from the simulation.
 *
 * With `sweep` (the CLI's `--svg`), the simulation also runs at 1, 2, 4, … scanners, the other
 * parameters unchanged: how the scan rate grows with scanners in each configuration, which is
 * what `clumpingSvg` plots (without anti-clumping, added scanners join the bus and add little).
 */
import { type RealClumpingOptions, type RealClumpingResult, runRealClumping } from './clumping-real.js';
import { type ClumpingSimOptions, type ClumpingSimResult, simulateClumping } from './clumping-sim.js';
import { renderLineChart } from './svg-plot.js';

export interface ClumpingBenchOptions {
  /** Simulation parameters (antiClumping is set by the bench). */
  readonly simulation?: Omit<ClumpingSimOptions, 'antiClumping'>;
  /** Real-worker parameters, or null to skip the real runs. */
  readonly real?: Omit<RealClumpingOptions, 'antiClumping'> | null;
  /** Also run the real anti-clumping configuration on a one-tablet table (default true). */
  readonly oneTablet?: boolean;
  /** Also simulate these scanner counts (each with and without anti-clumping). */
  readonly sweep?: readonly number[];
  readonly log?: (line: string) => void;
}

/** One scanner count of the sweep: the simulation with and without anti-clumping. */
export interface ClumpingSweepPoint {
  readonly scanners: number;
  readonly withAntiClumping: ClumpingSimResult;
  readonly withoutAntiClumping: ClumpingSimResult;
}

export interface ClumpingBenchResult {
  readonly withAntiClumping: ClumpingSimResult;
  readonly withoutAntiClumping: ClumpingSimResult;
  /** Rows scanned per second, with ÷ without anti-clumping (simulation). */
  readonly ratio: number;
  /** Notifications processed per second, with ÷ without (simulation). */
  readonly notificationsRatio: number;
  readonly parameters: Required<Omit<ClumpingSimOptions, 'antiClumping'>>;
  /** The scanner sweep (empty unless asked for), in increasing scanner counts. */
  readonly sweep: readonly ClumpingSweepPoint[];
  readonly real: {
    readonly withAntiClumping: RealClumpingResult;
    readonly withoutAntiClumping: RealClumpingResult;
    /** The anti-clumping run on a one-tablet table (the scanner's degenerate random origin). */
    readonly withAntiClumpingOneTablet: RealClumpingResult | null;
    /** Rows scanned per second, with ÷ without (the scanner's own count: followers' re-reads inflate "without"). */
    readonly ratio: number;
    /** Observer commits per second, with ÷ without. */
    readonly notificationsRatio: number;
    /** Median change-to-observer latency, without ÷ with. */
    readonly latencyRatio: number;
    readonly parameters: Required<Omit<RealClumpingOptions, 'antiClumping' | 'tabletSplitBytes'>> & {
      readonly tabletSplitBytes: number | null;
    };
  } | null;
}

export const DEFAULT_SIMULATION: Required<Omit<ClumpingSimOptions, 'antiClumping'>> = {
  rows: 10_000,
  scanners: 16,
  slowFraction: 0.01,
  slowCostMs: 50,
  fastCostMs: 1,
  cleanCostMs: 0.1,
  jumpCostMs: 0.5,
  changesPerSecond: 2_000,
  seconds: 60,
  warmupSeconds: 10,
  clumpGapRows: 2,
  seed: 1,
};

export const DEFAULT_REAL: Required<Omit<RealClumpingOptions, 'antiClumping' | 'tabletSplitBytes'>> & {
  readonly tabletSplitBytes: number | null;
} = {
  rows: 400,
  scanners: 8,
  slowEvery: 4,
  slowMs: 50,
  changesPerSecond: 100,
  seconds: 5,
  warmupSeconds: 1,
  tabletSplitBytes: 1024,
  ioYield: true,
};

const ratioOf = (a: number, b: number): number => (b === 0 ? (a === 0 ? 1 : Number.POSITIVE_INFINITY) : Math.round((a / b) * 100) / 100);

export async function runClumpingBench(opts: ClumpingBenchOptions = {}): Promise<ClumpingBenchResult> {
  const log = opts.log ?? (() => undefined);
  const sim = { ...DEFAULT_SIMULATION, ...opts.simulation };
  log(`simulation: ${sim.scanners} scanners, ${sim.rows} rows, ${sim.seconds} simulated s`);
  const withSim = simulateClumping({ ...sim, antiClumping: true });
  const withoutSim = simulateClumping({ ...sim, antiClumping: false });
  const sweep: ClumpingSweepPoint[] = [];
  for (const scanners of [...new Set(opts.sweep ?? [])].sort((a, b) => a - b)) {
    log(`simulation sweep: ${scanners} scanners`);
    sweep.push({
      scanners,
      withAntiClumping: simulateClumping({ ...sim, scanners, antiClumping: true }),
      withoutAntiClumping: simulateClumping({ ...sim, scanners, antiClumping: false }),
    });
  }
  let real: ClumpingBenchResult['real'] = null;
  if (opts.real !== null) {
    const r = { ...DEFAULT_REAL, ...opts.real };
    log(`real worker: ${r.scanners} scanners, ${r.rows} rows, ${r.seconds} s per configuration`);
    const withReal = await runRealClumping({ ...r, antiClumping: true });
    const withoutReal = await runRealClumping({ ...r, antiClumping: false });
    const oneTablet = opts.oneTablet === false ? null : await runRealClumping({ ...r, antiClumping: true, tabletSplitBytes: null });
    real = {
      withAntiClumping: withReal,
      withoutAntiClumping: withoutReal,
      withAntiClumpingOneTablet: oneTablet,
      ratio: ratioOf(withReal.rowsScannedPerSecond, withoutReal.rowsScannedPerSecond),
      notificationsRatio: ratioOf(withReal.notificationsPerSecond, withoutReal.notificationsPerSecond),
      latencyRatio: ratioOf(withoutReal.medianLatencyMs, withReal.medianLatencyMs),
      parameters: r,
    };
  }
  return {
    withAntiClumping: withSim,
    withoutAntiClumping: withoutSim,
    ratio: ratioOf(withSim.rowsScannedPerSecond, withoutSim.rowsScannedPerSecond),
    notificationsRatio: ratioOf(withSim.notificationsPerSecond, withoutSim.notificationsPerSecond),
    parameters: sim,
    sweep,
    real,
  };
}

/** Scanner counts of the CLI's sweep: powers of two up to twice `scanners` (at least 32). */
export function sweepScanners(scanners: number): number[] {
  const out: number[] = [];
  for (let n = 1; n <= Math.max(32, 2 * scanners); n *= 2) out.push(n);
  return out;
}

/** The sweep as a line chart: rows scanned per simulated second against scanners, both configurations. */
export function clumpingSvg(result: ClumpingBenchResult): string {
  const p = result.parameters;
  const series = (name: string, pick: (pt: ClumpingSweepPoint) => ClumpingSimResult) => ({
    name,
    points: result.sweep.map((pt) => [pt.scanners, pick(pt).rowsScannedPerSecond] as const),
  });
  return renderLineChart({
    title: `Bus clumping (Percolator §2.4): ${p.rows} rows, ${p.slowFraction * 100} % slow (${p.slowCostMs} ms), ${p.changesPerSecond} changes/s, simulated`,
    xLabel: 'scanners',
    yLabel: 'rows scanned per second',
    logX: true,
    logY: true,
    series: [
      series('with anti-clumping', (pt) => pt.withAntiClumping),
      series('without (scanners wait behind a held row)', (pt) => pt.withoutAntiClumping),
    ],
    markers: [{ x: p.scanners, label: `${p.scanners} scanners: ${result.ratio}×` }],
  });
}
