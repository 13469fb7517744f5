/**
 * `bench latency` — the paper's Figure 7: median crawl-to-index latency of the incremental web
 * indexer vs a batch pipeline that recomputes the whole index from scratch in back-to-back rounds
 * (the MapReduce pipeline Percolator replaced), at crawl rates from 1 % to 100 % of the
 * repository per hour.
 *
 * Why it is built this way:
 * - Incremental side: the real system. A synthetic repository of `docs` documents is loaded
 *   through the real loader, observers and worker (runWebIndex, a fresh `file:` store by default).
 *   Then, for each crawl rate, that share of the repository is re-crawled (a new version of each
 *   document: new content, so it re-parses, re-clusters and re-exports) at uniformly random
 *   moments of the window. A document's latency is the one the export observer recorded for that
 *   exact fetch (`export:fetchedAt` = our fetch time, `export:latencyMs`): from the loader's
 *   transaction to the export transaction that made it searchable. Read back from the store.
 *   Each crawl is one loader transaction that, once committed, hints the in-process worker, as
 *   the web index's loader does (run.ts); without the hint the first observer waits for a
 *   scanner, which idles up to ~100 ms between passes when there is little work.
 * - Time compression: one "hour" is `hourSeconds` real seconds (default 10 s, i.e. 360×), so r %/h
 *   means r % of the repository re-crawled per `hourSeconds`. Latencies are real milliseconds on
 *   both sides. Compression only raises the load: the incremental side sees the crawl load of a
 *   repository 360× larger crawled in real hours, while the batch side recomputes the actual
 *   repository. That is what puts a crossover inside 1–100 %/h at these sizes.
 * - Batch side: its round duration is MEASURED by running the batch recomputation (batch.ts:
 *   parse, link inversion, clustering, terms of every document) over the repository read from the
 *   store at a snapshot, several times. With rounds back to back, a document crawled at moment t
 *   waits for the round in progress to end (its snapshot missed it) and then for the next round to
 *   finish; each point's batch median is computed that way from the point's own crawl moments
 *   against a schedule of the measured rounds (≈ 0.5 × period + duration = 1.5 × round). The
 *   batch rounds do not write their output anywhere, which favours the batch side.
 * - Crossover: the lowest crawl rate at which incremental no longer beats batch (interpolated in
 *   log-log between the measured points around it). If none in range it is extrapolated from the
 *   measured incremental capacity (a burst of re-crawls, timed to quiescence): beyond the rate where crawls arrive
 *   faster than the pipeline indexes them the backlog grows through the hour, and its median
 *   reaches the batch median at r_sat × (1 + 2 × (batch − incremental) / hour).
 */
import { cpus, loadavg } from 'node:os';
import { type CorpusDoc, batchIndex } from '../apps/webindex/batch.js';
import { SyntheticCorpus } from '../apps/webindex/corpus/synthetic.js';
import { writeFetch } from '../apps/webindex/loader.js';
import { percentile } from '../apps/webindex/metrics.js';
import type { DocType, KeyMode } from '../apps/webindex/parse.js';
import { runWebIndex } from '../apps/webindex/run.js';
import { DOCS, EXPORT_FETCHED_AT, EXPORT_LATENCY_MS, PAGES, RAW_CONTENT, RAW_TYPE } from '../apps/webindex/schema.js';
import type { Worker } from '../notify/worker.js';
import type { Percolator } from '../txn/percolator.js';
import { mulberry32 as rng } from '../util/seeded-random.js';
import { BenchOptionError } from './bench-option-error.js';

export { DEFAULT_RATES } from './bench-defaults.js';
import { DEFAULT_RATES } from './bench-defaults.js';
import { benchStoreUrl, withBenchDir } from './bench-dir.js';
/** The DESIGN §10 target: incremental median latency ≥ 1000× lower than batch at 1 %/h. */
export const TARGET_RATIO = 1000;

export interface LatencyBenchOptions {
  /** Repository size (synthetic documents). */
  readonly docs: number;
  readonly seed?: number;
  /** Real seconds per compressed hour. Default 10 (compression 360×). */
  readonly hourSeconds?: number;
  /** Crawl rates, % of the repository per (compressed) hour, each in (0, 100]. */
  readonly rates?: readonly number[];
  /** At least this many re-crawls per rate (low rates then run several compressed hours). Default 20. */
  readonly minSamples?: number;
  /** Batch rounds measured over the whole repository. Default 5. */
  readonly batchRounds?: number;
  /** Re-crawls in the capacity burst. Default min(docs, 300). */
  readonly probeDocs?: number;
  readonly threads?: number;
  readonly store?: 'file:' | 'memory:';
  /** Progress lines (the CLI sends them to stderr). */
  readonly log?: (line: string) => void;
}

export interface LatencyPoint {
  readonly crawlRatePercentPerHour: number;
  readonly incrementalMedianMs: number;
  readonly batchMedianMs: number;
  /** batchMedianMs / incrementalMedianMs. */
  readonly ratio: number;
  readonly incrementalP90Ms: number;
  readonly incrementalMaxMs: number;
  /** Re-crawls in the window, and how many of those fetches the export observer indexed. */
  readonly crawls: number;
  readonly indexed: number;
  /** Compressed hours the window lasted (> 1 at low rates, for `minSamples`). */
  readonly hours: number;
  readonly arrivalDocsPerSecond: number;
  /** From the end of the window to the last of its fetches indexed (a backlog draining). */
  readonly drainMs: number;
  /** Crawls arrived faster than the measured incremental capacity. */
  readonly saturated: boolean;
}

export interface BatchMeasurement {
  /** Median full round: read the repository at a snapshot + recompute the index. */
  readonly roundMs: number;
  readonly readMs: number;
  readonly computeMs: number;
  readonly roundsMs: number[];
  /**
   * roundMs / documents. A round's work (parse every document, invert every link, cluster, score
   * every cluster) grows in proportion to a repository of the same shape; the extrapolation below
   * assumes that. (Rounds over a prefix of the URL-ordered table are no smaller repository: they
   * split clusters, and per-cluster work dominates, so they are not used.)
   */
  readonly msPerDocument: number;
}

export interface LatencyBenchResult {
  readonly repositoryDocuments: number;
  /** Real time is compressed this many times: one crawl-rate hour lasts 3600 / timeCompression s. */
  readonly timeCompression: number;
  readonly hourSeconds: number;
  readonly points: LatencyPoint[];
  readonly crossoverPercentPerHour: number | null;
  readonly crossoverExtrapolated: boolean;
  readonly crossoverMethod: string;
  readonly batch: BatchMeasurement;
  readonly incremental: {
    /** Re-crawls per second of a burst, until the index is quiescent (the pipeline's capacity). */
    readonly capacityDocsPerSecond: number;
    /**
     * The burst behind it: re-crawls, ms from its first crawl to quiescence and to the last of its
     * crawls made searchable, and what a quiescence wait took with nothing pending just before it.
     */
    readonly probe: {
      readonly crawls: number;
      readonly quiescentMs: number;
      readonly indexedMs: number;
      readonly quiescenceIdleMs: number;
    };
    /** The crawl rate (%/h, compressed) at which crawls arrive as fast as that. */
    readonly saturationPercentPerHour: number;
    readonly initialLoadDocumentsPerSecond: number;
    readonly initialLoadMs: number;
    readonly threads: number;
  };
  readonly target: {
    readonly ratio: number;
    readonly atPercentPerHour: number;
    readonly measuredRatio: number;
    readonly met: boolean;
    /**
     * Repository size at which the batch median (≈ 1.5 rounds) would reach ratio × the incremental
     * median measured at the lowest rate, rounds growing in proportion to the repository — assuming (as Percolator's design intends)
     * that the incremental latency at light load does not grow with the repository.
     */
    readonly extrapolatedDocuments: number | null;
  };
  readonly keyMode: KeyMode;
  readonly store: string;
  readonly seed: number;
  readonly elapsedMs: number;
  /** `node`: the Node.js that ran it (`process.version`). */
  readonly machine: { cpus: number; node: string; load1mStart: number; load1mEnd: number };
}

const round = (v: number, digits = 1) => Math.round(v * 10 ** digits) / 10 ** digits;
const median = (xs: readonly number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );
const utf8 = (v: Uint8Array) => Buffer.from(v).toString('utf8');

/** One batch round over the whole repository: read every live page at a snapshot, recompute the index. */
export async function batchRound(db: Percolator, keyMode: KeyMode): Promise<{ documents: number; readMs: number; computeMs: number }> {
  const t0 = performance.now();
  const docs: CorpusDoc[] = [];
  const snap = await db.snapshot();
  try {
    for await (const r of snap.scan(PAGES, {}, { columns: [RAW_CONTENT, RAW_TYPE] })) {
      const content = r.columns.get(RAW_CONTENT);
      if (content === undefined) continue;
      const type = r.columns.get(RAW_TYPE);
      docs.push({ url: utf8(r.row), content, type: type === undefined ? undefined : (utf8(type) as DocType) });
    }
  } finally {
    snap.release();
  }
  const t1 = performance.now();
  const state = batchIndex(docs, keyMode);
  const t2 = performance.now();
  if (docs.length > 0 && Object.keys(state.clusters).length === 0) throw new Error('batch round produced no clusters');
  return { documents: docs.length, readMs: t1 - t0, computeMs: t2 - t1 };
}

async function measureBatch(db: Percolator, keyMode: KeyMode, documents: number, rounds: number): Promise<BatchMeasurement> {
  await batchRound(db, keyMode); // warm-up (JIT, caches), not measured
  const full: { documents: number; readMs: number; computeMs: number }[] = [];
  for (let i = 0; i < rounds; i++) full.push(await batchRound(db, keyMode));
  const totals = full.map((r) => r.readMs + r.computeMs);
  return {
    roundMs: round(median(totals)),
    readMs: round(median(full.map((r) => r.readMs))),
    computeMs: round(median(full.map((r) => r.computeMs))),
    roundsMs: totals.map((t) => round(t)),
    msPerDocument: round(median(totals) / Math.max(1, full[0]?.documents ?? documents), 5),
  };
}

/**
 * Batch latencies of documents crawled at `crawlMs` (ms from an arbitrary origin) when rounds
 * of the given durations run back to back, starting at a random phase: a document waits for the
 * round in progress to end (that round's snapshot missed it), then for the next one to finish.
 */
export function batchLatencies(crawlMs: readonly number[], roundsMs: readonly number[], random: () => number): number[] {
  if (roundsMs.length === 0 || crawlMs.length === 0) return [];
  const sorted = [...crawlMs].sort((a, b) => a - b);
  let k = 0;
  let start = (sorted[0] as number) - random() * Math.max(0.001, roundsMs[0] as number);
  const duration = (i: number) => Math.max(0.001, roundsMs[i % roundsMs.length] as number);
  return sorted.map((t) => {
    while (start + duration(k) <= t) start += duration(k++);
    return start + duration(k) - t + duration(k + 1);
  });
}

interface Crawl {
  readonly index: number;
  readonly url: string;
  readonly doc: { url: string; content: string; type: DocType };
  /** Scheduled moment, ms from the window start. */
  readonly atMs: number;
  /** The fetch time written by the loader transaction that committed. */
  fetchedAt: number;
}

/** Fires each crawl at its moment (one loader transaction each), then waits for the index to settle. */
async function runCrawls(db: Percolator, worker: Worker, crawls: Crawl[]): Promise<{ startWall: number }> {
  const t0 = performance.now();
  const startWall = Date.now();
  const inflight: Promise<void>[] = [];
  for (const c of crawls) {
    const wait = t0 + c.atMs - performance.now();
    // Pacing the crawl schedule (the arrival process), not waiting for a condition.
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    inflight.push(
      db
        .transaction(async (tx) => {
          c.fetchedAt = Date.now();
          writeFetch(tx, c.doc, c.fetchedAt);
        })
        // As the web index's own loader does (run.ts): announce the commit to the in-process worker.
        .then(() => worker.hint(PAGES, c.url)),
    );
  }
  await Promise.all(inflight);
  await db.waitForQuiescence({ timeoutMs: 900_000 });
  return { startWall };
}

/** Wall-clock ms at which the last of `crawls` was made searchable (a fetch not indexed counts at its fetch time). */
function lastIndexedAt(crawls: readonly Crawl[], latencies: readonly (number | null)[]): number {
  return Math.max(...crawls.map((c, i) => c.fetchedAt + (latencies[i] ?? 0)));
}

/** The latency the export observer recorded for each crawl's fetch (null if that fetch was not indexed). */
async function readLatencies(db: Percolator, crawls: readonly Crawl[]): Promise<(number | null)[]> {
  const snap = await db.snapshot();
  try {
    const values = await snap.getMany(
      DOCS,
      crawls.flatMap((c) => [EXPORT_FETCHED_AT, EXPORT_LATENCY_MS].map((column) => ({ row: c.url, column }))),
    );
    return crawls.map((c, i) => {
      const fetched = values[2 * i];
      const latency = values[2 * i + 1];
      if (fetched === null || fetched === undefined || latency === null || latency === undefined) return null;
      return Number(utf8(fetched)) === c.fetchedAt ? Number(utf8(latency)) : null;
    });
  } finally {
    snap.release();
  }
}

export async function runLatencyBench(options: LatencyBenchOptions): Promise<LatencyBenchResult> {
  const started = performance.now();
  const load1mStart = loadavg()[0] as number;
  const log = options.log ?? (() => undefined);
  const n = Math.floor(options.docs);
  if (!(n >= 8)) throw new BenchOptionError('--docs', options.docs, `--docs must be at least 8, got ${options.docs}`);
  const seed = options.seed ?? 42;
  const hourSeconds = options.hourSeconds ?? 10;
  const rates = [...(options.rates ?? DEFAULT_RATES)].sort((a, b) => a - b);
  for (const r of rates) if (!(r > 0 && r <= 100)) throw new BenchOptionError('--rates', r, `--rates must be in (0, 100] %/h, got ${r}`);
  if (rates.length === 0) throw new BenchOptionError('--rates', rates, '--rates must name at least one crawl rate');
  const minSamples = Math.max(1, Math.floor(options.minSamples ?? 20));
  const threads = options.threads ?? 16;
  const random = rng(seed ^ 0x5bd1e995);
  const corpus = new SyntheticCorpus({ docs: n, seed });
  const versions = new Int32Array(n);

  return withBenchDir(options.store === 'memory:', 'latency', async (dir) => {
    log(`loading ${n} documents through the incremental pipeline (${benchStoreUrl(dir)})`);
    const handle = await runWebIndex({
      corpus: 'synthetic',
      docs: n,
      seed,
      store: benchStoreUrl(dir),
      keep: true,
      threads,
    });
    try {
      const db = handle.db;
      const keyMode = handle.summary.keyMode;
      log(`loaded in ${(handle.summary.loadAndProcessMs / 1000).toFixed(1)} s; measuring batch rounds`);
      const batch = await measureBatch(db, keyMode, n, Math.max(1, options.batchRounds ?? 5));
      log(`batch round ${batch.roundMs} ms (read ${batch.readMs} + compute ${batch.computeMs})`);

      /** Re-crawl versions of `count` distinct random documents at the given moments. */
      const makeCrawls = (moments: number[]): Crawl[] => {
        const order = Array.from({ length: n }, (_, i) => i);
        for (let i = n - 1; i > 0; i--) {
          const j = Math.floor(random() * (i + 1));
          [order[i], order[j]] = [order[j] as number, order[i] as number];
        }
        return moments.map((atMs, k) => {
          const index = order[k] as number;
          const version = ++versions[index];
          const d = corpus.doc(index, version);
          return { index, url: d.url, doc: { url: d.url, content: d.content as string, type: 'md' }, atMs, fetchedAt: 0 };
        });
      };

      const raw: { rate: number; hours: number; crawls: Crawl[]; latencies: (number | null)[]; windowMs: number; drainMs: number }[] = [];
      for (const rate of rates) {
        const perHour = (rate / 100) * n;
        const hours = Math.max(1, Math.ceil(minSamples / perHour));
        const count = Math.min(n, Math.max(1, Math.round(perHour * hours)));
        const windowMs = hours * hourSeconds * 1000;
        const moments = Array.from({ length: count }, () => random() * windowMs).sort((a, b) => a - b);
        const crawls = makeCrawls(moments);
        log(`${rate} %/h: ${count} re-crawls over ${hours} compressed hour(s) = ${(windowMs / 1000).toFixed(1)} s`);
        const { startWall } = await runCrawls(db, handle.worker, crawls);
        const latencies = await readLatencies(db, crawls);
        const lastIndexed = lastIndexedAt(crawls, latencies);
        raw.push({ rate, hours, crawls, latencies, windowMs, drainMs: Math.max(0, lastIndexed - (startWall + windowMs)) });
      }

      const probeCount = Math.min(n, Math.max(1, Math.floor(options.probeDocs ?? 300)));
      log(`capacity: a burst of ${probeCount} re-crawls, timed to quiescence`);
      // What telling quiescence costs by itself (a full notification pass with nothing pending),
      // measured on the same store just before the burst: part of every burst's time below.
      const idleStart = performance.now();
      await db.waitForQuiescence({ timeoutMs: 900_000 });
      const quiescenceIdleMs = performance.now() - idleStart;
      const probe = makeCrawls(Array.from({ length: probeCount }, () => 0));
      const { startWall: probeStart } = await runCrawls(db, handle.worker, probe);
      const probeMs = Date.now() - probeStart;
      const probeLatencies = await readLatencies(db, probe);
      const probeIndexedMs = Math.max(0, lastIndexedAt(probe, probeLatencies) - probeStart);
      // To quiescence, not to the last export of a crawled document: a re-crawl also causes
      // follow-up work (link relay, in-link recounts and re-exports of the pages it links to)
      // that competes for the same capacity when crawls keep coming.
      const capacity = probeCount / Math.max(0.001, probeMs / 1000);
      const saturationPercentPerHour = (100 * capacity * hourSeconds) / n;

      const points: LatencyPoint[] = raw.map((p) => {
        const got = p.latencies.filter((v): v is number => v !== null).sort((a, b) => a - b);
        const batchMedian = median(
          batchLatencies(
            p.crawls.map((c) => c.atMs),
            batch.roundsMs,
            random,
          ),
        );
        const incMedian = percentile(got, 0.5);
        const arrival = p.crawls.length / (p.windowMs / 1000);
        return {
          crawlRatePercentPerHour: p.rate,
          incrementalMedianMs: incMedian,
          batchMedianMs: round(batchMedian),
          ratio: round(batchMedian / Math.max(1, incMedian), 2),
          incrementalP90Ms: percentile(got, 0.9),
          incrementalMaxMs: got[got.length - 1] ?? 0,
          crawls: p.crawls.length,
          indexed: got.length,
          hours: p.hours,
          arrivalDocsPerSecond: round(arrival, 2),
          drainMs: Math.round(p.drainMs),
          saturated: arrival > capacity,
        };
      });

      const { crossover, extrapolated, method } = findCrossover(points, { capacity, hourSeconds, saturationPercentPerHour });
      const first = points[0] as LatencyPoint;
      const wantBatchMs = TARGET_RATIO * Math.max(1, first.incrementalMedianMs);
      // Batch median ≈ 1.5 × round; round ≈ fixed + perDoc × N.
      const extrapolatedDocuments = batch.msPerDocument > 0 ? Math.max(n, Math.round(wantBatchMs / 1.5 / batch.msPerDocument)) : null;
      return {
        repositoryDocuments: n,
        timeCompression: round(3600 / hourSeconds, 2),
        hourSeconds,
        points,
        crossoverPercentPerHour: crossover,
        crossoverExtrapolated: extrapolated,
        crossoverMethod: method,
        batch,
        incremental: {
          capacityDocsPerSecond: round(capacity),
          probe: {
            crawls: probeCount,
            quiescentMs: probeMs,
            indexedMs: Math.round(probeIndexedMs),
            quiescenceIdleMs: Math.round(quiescenceIdleMs),
          },
          saturationPercentPerHour: round(saturationPercentPerHour),
          initialLoadDocumentsPerSecond: handle.summary.documentsPerSecond,
          initialLoadMs: handle.summary.loadAndProcessMs,
          threads,
        },
        target: {
          ratio: TARGET_RATIO,
          atPercentPerHour: first.crawlRatePercentPerHour,
          measuredRatio: first.ratio,
          met: first.ratio >= TARGET_RATIO,
          extrapolatedDocuments,
        },
        keyMode,
        store: dir === null ? 'memory:' : 'file:',
        seed,
        elapsedMs: Math.round(performance.now() - started),
        machine: {
          cpus: cpus().length,
          node: process.version,
          load1mStart: round(load1mStart, 2),
          load1mEnd: round(loadavg()[0] as number, 2),
        },
      };
    } finally {
      await handle.close();
    }
  });
}

/**
 * The lowest crawl rate at which the incremental median is no longer below the batch median:
 * interpolated in log-log between the two measured points around it; else extrapolated from the
 * saturation model (see the header).
 */
export function findCrossover(
  points: readonly LatencyPoint[],
  model: { capacity: number; hourSeconds: number; saturationPercentPerHour: number },
): { crossover: number | null; extrapolated: boolean; method: string } {
  const i = points.findIndex((p) => p.incrementalMedianMs >= p.batchMedianMs);
  if (i === 0) {
    const p = points[0] as LatencyPoint;
    return {
      crossover: p.crawlRatePercentPerHour,
      extrapolated: false,
      method: `measured: incremental is not faster even at the lowest rate (${p.crawlRatePercentPerHour} %/h)`,
    };
  }
  if (i > 0) {
    const a = points[i - 1] as LatencyPoint;
    const b = points[i] as LatencyPoint;
    const la = Math.log(a.batchMedianMs / Math.max(1, a.incrementalMedianMs));
    const lb = Math.log(b.batchMedianMs / Math.max(1, b.incrementalMedianMs));
    const f = la === lb ? 1 : la / (la - lb);
    const r = Math.exp(
      Math.log(a.crawlRatePercentPerHour) + f * (Math.log(b.crawlRatePercentPerHour) - Math.log(a.crawlRatePercentPerHour)),
    );
    return {
      crossover: round(r),
      extrapolated: false,
      method: `measured: interpolated (log-log) between ${a.crawlRatePercentPerHour} %/h (ratio ${a.ratio}) and ${b.crawlRatePercentPerHour} %/h (ratio ${b.ratio})`,
    };
  }
  if (!(model.capacity > 0) || points.length === 0)
    return { crossover: null, extrapolated: false, method: 'none in range, and no capacity measured to extrapolate from' };
  const last = points[points.length - 1] as LatencyPoint;
  const r =
    model.saturationPercentPerHour * (1 + (2 * Math.max(0, last.batchMedianMs - last.incrementalMedianMs)) / (model.hourSeconds * 1000));
  return {
    crossover: round(r),
    extrapolated: true,
    method: `extrapolated (none in range): crawls outrun the measured capacity of ${round(model.capacity)} re-crawls/s from ${round(model.saturationPercentPerHour)} %/h; the backlog's median then reaches the batch median at r_sat × (1 + 2 × (batch − incremental) / hour)`,
  };
}
