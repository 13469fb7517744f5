/**
 * `bench webindex`: the web indexer on the synthetic corpus shaped like the paper's benchmark,
 * end to end (concurrent loaders, every observer, quiescence) on fresh stores, in two phases and
 * an optional load curve:
 *
 * - **saturation**: `docs` documents loaded as fast as the pipeline takes them (loaders paced
 *   only by a large window of documents loaded but not yet searchable); `documentsPerSecond` is
 *   documents ÷ time from the first load to quiescence (every observer done, links and ranks
 *   included). Its latency is reported too, but under saturation it measures the backlog.
 * - **light load**: a fresh store, `lightDocs` documents arriving on a fixed schedule of
 *   `lightRate` per second; `medianLatencyMs` / `p99LatencyMs` are the crawl-to-index latency
 *   there (loader commit → the export that made the fetch searchable).
 * - **load curve** (optional): the same at each of `loadRates`, from light load to past
 *   saturation — achieved throughput and latency at increasing offered load (`loadCurve`).
 *
 * Peak RSS of the process is sampled throughout (`peakRssMiB`, with `process.resourceUsage()`'s
 * maxRSS as a floor). Where the saturation phase's time went is in three ratios: how busy the JS
 * thread was (`eventLoopUtilization`), how much of a core it got (`jsThreadCores`, Linux) and how
 * many cores' worth of CPU the whole process used (`cpuCores`: LevelDB's compaction, V8's
 * collector and libuv threads included). A JS thread busy near 1 that got well below 1 of a core
 * means the other threads took its core; `engineCompaction` says how much of that was LevelDB
 * rewriting its levels.
 *
 * With `stages`, the pipeline is also run cut short on fresh stores of the same corpus — only the
 * processor, then the processor and clustering — to say what each stage adds to a document's cost
 * (`stages`: documents/s, CPU and the JS thread's milliseconds a document, commits and engine
 * writes); the full pipeline's row is the saturation phase's own.
 */
import { performance } from 'node:perf_hooks';
import { WEB_INDEX_STAGES, type WebIndexStage } from '../apps/webindex/pipeline.js';
import { DEFAULT_LOADERS, type RunSummary, defaultThreads, engineCounters, runWebIndex } from '../apps/webindex/run.js';
import type { EngineReadsByGroup } from '../store/engine-store.js';
import { type ServeProcess, startServeProcess } from './serve-process.js';
import { type SizeSample, type SizeStep, lastSearchableMs, sizeCurve } from './size-curve.js';
import { mainThreadCpuMs } from './thread-cpu.js';

export { WEB_INDEX_BENCH_STORES, type WebIndexBenchStore, DEFAULT_SATURATION_WINDOW } from './bench-defaults.js';
import { type WebIndexBenchStore, DEFAULT_SATURATION_WINDOW } from './bench-defaults.js';
import { anonRss } from './anon-rss.js';
import { benchStoreUrl, withBenchDir } from './bench-dir.js';

export interface WebIndexBenchOptions {
  readonly docs: number;
  readonly seed?: number;
  /**
   * `file:` (default, a fresh temporary directory), `memory:`, or `serve`: a `percolator serve`
   * child process on a fresh temporary directory for each phase, with the pipeline in this process
   * as its client over `bigtable://` (the several-process deployment, DESIGN §8).
   */
  readonly store?: WebIndexBenchStore;
  /** Concurrent observer runs. Default run.ts's: 16, or 64 with `serve` (DEFAULT_REMOTE_THREADS). */
  readonly threads?: number;
  readonly loaders?: number;
  /**
   * Saturation phase: documents loaded but not yet searchable before loaders wait. Default 4 096:
   * the throughput still rose with the window at 1 024 (the previous default) and no longer at
   * 4 096: with a deeper backlog rows wait longer in the worker's queue, and a row notified again
   * while it waits is covered by the same run (BENCHMARKS.md, 2026-11-26 third session).
   */
  readonly window?: number;
  /** Light-load phase: documents (default 200; 0 skips the phase) and arrival rate per second (default 20). */
  readonly lightDocs?: number;
  readonly lightRate?: number;
  /**
   * Load curve: offered arrival rates (documents per second), each a fresh store loaded on that
   * schedule for `loadSeconds` (at least 50 documents), with the saturation window as the backlog
   * bound. Default none.
   */
  readonly loadRates?: readonly number[];
  /** Seconds of arrivals per load-curve step (default 8). */
  readonly loadSeconds?: number;
  /** Background GC: targeted passes every this many ms (default: Percolator's; 0 = off). */
  readonly gcIntervalMs?: number;
  /** Background full GC passes at most this often (default 0 = off). */
  readonly fullGcIntervalMs?: number;
  /** Also run the pipeline cut short after each earlier stage (`stages` in the result). */
  readonly stages?: boolean;
  /** Progress lines on stderr. */
  readonly log?: (line: string) => void;
}

/** What the pipeline cut after one stage cost (`WebIndexBenchResult.stages`). */
export interface StageCost {
  /** The last stage that ran (pipeline.ts WEB_INDEX_STAGES). */
  readonly until: WebIndexStage;
  readonly documents: number;
  /** Documents ÷ time from the first load to quiescence. */
  readonly documentsPerSecond: number;
  /** The process's CPU time (every thread) a document. */
  readonly cpuMsPerDocument: number;
  /** The JS thread's own CPU time a document (thread-cpu.ts; Linux, else null). */
  readonly jsMsPerDocument: number | null;
  readonly commitsPerDocument: number;
  /** Engine writes a document (`file:` only; else null). */
  readonly engineOpsPerDocument: number | null;
}

export interface WebIndexBenchResult {
  readonly documents: number;
  readonly duplicatesFound: number;
  readonly linksInverted: number;
  /** Saturation throughput. */
  readonly documentsPerSecond: number;
  /** Light-load crawl-to-index latency. */
  readonly medianLatencyMs: number;
  readonly p99LatencyMs: number;
  readonly saturation: {
    readonly documentsPerSecond: number;
    readonly medianLatencyMs: number;
    readonly p99LatencyMs: number;
    readonly elapsedMs: number;
    readonly window: number;
    /** Fraction of the phase the JS thread was busy (perf_hooks event-loop utilization). */
    readonly eventLoopUtilization: number;
    /** The process's CPU time (every thread) over the phase's wall time: cores' worth used. */
    readonly cpuCores: number;
    /**
     * The JS thread's own CPU time over the phase's wall time (thread-cpu.ts; Linux, else null).
     * Below `eventLoopUtilization`: the thread was busy but off a core — waiting for one the other
     * threads had, or blocked in a system call.
     */
    readonly jsThreadCores: number | null;
    /**
     * The phase cut into tenths by documents searchable (size-curve.ts): documents/s, CPU and
     * engine reads per document as the repository grew. Each tenth ends when its last document
     * became searchable (what runs after that is only in the phase's overall rate); the last
     * `window` documents finish with no new arrivals, so the last tenths of a small run show
     * that drain.
     */
    readonly bySize: readonly SizeStep[];
    /**
     * Of `elapsedMs`, the wall time after the last document became searchable (to within the
     * 100 ms sampling period): exports and relays still queued — the weak notifications the
     * scanners leave while the pipeline is behind, each cluster's collapsed into one run at the
     * end. Work a continuing crawl would do as it went; in the overall rate, not in `bySize`.
     */
    readonly drainMs: number | null;
  };
  readonly lightLoad: {
    readonly documents: number;
    readonly ratePerSecond: number;
    readonly medianLatencyMs: number;
    readonly p99LatencyMs: number;
    readonly elapsedMs: number;
  } | null;
  /** One step per `loadRates` entry, in that order: what the pipeline did at that offered load. */
  readonly loadCurve: readonly LoadStep[];
  readonly peakRssMiB: number;
  /** Peak anonymous RSS (Linux), i.e. without the file-backed pages of mapped LevelDB tables. */
  readonly peakAnonRssMiB: number | null;
  readonly clusters: number;
  readonly postings: number;
  /** Postings kept for terms their cluster no longer has (repost.ts). */
  readonly stalePostings: number;
  readonly observerCommits: number;
  readonly conflicts: number;
  readonly commitsPerDocument: number;
  readonly cpuMsPerDocument: number;
  /** With `--store serve`: the server process's CPU in the saturation phase, per document (else null). */
  readonly serverCpuMsPerDocument: number | null;
  /** What the saturation phase wrote to the storage engine, per document (`file:` only; else null). */
  readonly engineOpsPerDocument: number | null;
  readonly engineKiBPerDocument: number | null;
  /** Point reads the storage engine answered in the saturation phase, per document (the row caches' misses; `file:` only). */
  readonly engineReadsPerDocument: number | null;
  /**
   * Those reads by `table/locality group`, per document: found, and absent (rows the key filter
   * could not rule out, e.g. groups deleted since they were written). Busiest first; `file:` only.
   */
  readonly engineReadsByGroupPerDocument: EngineReadsByGroup | null;
  /**
   * LevelDB's background work in the saturation phase (level-stats.ts; `file:` only): MiB its
   * memtable flushes wrote, MiB its compactions read and wrote (and written into each level), and
   * the seconds its background thread spent on both. What the memtable's size is tuned against.
   */
  readonly engineCompaction: {
    readonly flushedMiB: number;
    readonly compactionReadMiB: number;
    readonly compactionWrittenMiB: number;
    readonly seconds: number;
    readonly writtenMiBByLevel: Readonly<Record<string, number>>;
  } | null;
  readonly elapsedMs: number;
  readonly store: string;
  readonly threads: number;
  /** Concurrent loader transactions (run.ts DEFAULT_LOADERS unless told): they bound the load when too few. */
  readonly loaders: number;
  /** The Node.js that ran it (`process.version`): the same build runs at different speeds on different Node.js versions. */
  readonly node: string;
  /** Background GC of the saturation phase: its interval (0 = off) and its last pass. */
  readonly gc: { readonly intervalMs: number; readonly fullIntervalMs: number; readonly last: RunSummary['lastGc'] };
  /** Broken protocol invariants met in the saturation phase (expected: none). */
  readonly anomalies: readonly string[];
  /**
   * With `stages`: the pipeline cut after the processor, after clustering, and whole (the
   * saturation phase), in that order; each adds its stage's cost to the one before. Else null.
   */
  readonly stages: readonly StageCost[] | null;
}

export interface LoadStep {
  /** Documents offered per second (the arrival schedule). */
  readonly offeredPerSecond: number;
  readonly documents: number;
  /** Documents ÷ time from the first arrival to quiescence: below the offered rate once saturated. */
  readonly achievedPerSecond: number;
  /** Crawl-to-index latency at this load. */
  readonly medianLatencyMs: number;
  readonly p99LatencyMs: number;
}

/** Reads by group ÷ documents (two decimals), busiest group first. */
function perDocument(byGroup: EngineReadsByGroup, docs: number): EngineReadsByGroup {
  const per = (n: number) => Math.round((n / Math.max(1, docs)) * 100) / 100;
  const sorted = Object.entries(byGroup).sort(([, a], [, b]) => b.found + b.absent - (a.found + a.absent));
  return Object.fromEntries(sorted.map(([g, n]) => [g, { found: per(n.found), absent: per(n.absent) }]));
}

/**
 * Samples the process's RSS until stopped; returns the peaks (bytes): all of it, and the
 * anonymous part (RSS also counts the file-backed pages of LevelDB's memory-mapped tables, which
 * the kernel can drop at any time).
 */
function rssSampler(intervalMs = 200): { stop(): { rss: number; anon: number | null } } {
  let peak = process.memoryUsage().rss;
  let peakAnon = anonRss();
  const sample = () => {
    peak = Math.max(peak, process.memoryUsage().rss);
    const a = anonRss();
    if (a !== null) peakAnon = Math.max(peakAnon ?? 0, a);
  };
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { rss: Math.max(peak, process.resourceUsage().maxRSS * 1024), anon: peakAnon };
    },
  };
}

/** Parts of the saturation phase's size curve. */
const SIZE_PARTS = 10;

/** How often the saturation phase samples its progress for the size curve (a part's end is dated at most this late). */
const SIZE_SAMPLE_MS = 100;

/** One run of the pipeline on a fresh store (removed afterwards). */
async function phase(
  options: WebIndexBenchOptions,
  docs: number,
  extra: { window?: number; rate?: number; until?: WebIndexStage },
  samples?: SizeSample[],
): Promise<RunSummary & { readonly serverCpuMs: number | null }> {
  return withBenchDir(options.store === 'memory:', 'webindex', (dir) => phaseIn(dir, options, docs, extra, samples));
}

/** `phase` in `dir` (null: `memory:`; with `--store serve`, a server's directory). */
async function phaseIn(
  dir: string | null,
  options: WebIndexBenchOptions,
  docs: number,
  extra: { window?: number; rate?: number; until?: WebIndexStage },
  samples?: SizeSample[],
): Promise<RunSummary & { readonly serverCpuMs: number | null }> {
  let sampler: NodeJS.Timeout | undefined;
  let sample: (() => void) | undefined;
  let server: ServeProcess | null = null;
  try {
    if (options.store === 'serve') server = await startServeProcess(dir as string);
    const serverCpu0 = server?.cpuMs() ?? null;
    const handle = await runWebIndex({
      corpus: 'synthetic',
      docs,
      seed: options.seed,
      store: server !== null ? `bigtable://127.0.0.1:${server.port}` : benchStoreUrl(dir),
      keep: true,
      threads: benchThreads(options),
      loaders: options.loaders,
      gcIntervalMs: options.gcIntervalMs,
      fullGcIntervalMs: options.fullGcIntervalMs,
      ...extra,
      progressIntervalMs: 5_000,
      onProgress:
        options.log === undefined
          ? undefined
          : (p) => options.log?.(`${p.indexed}/${p.total} indexed, ${p.loaded} loaded, ${Math.round(p.elapsedMs / 1000)} s`),
      onStarted:
        samples === undefined
          ? undefined
          : ({ db, worker, metrics }) => {
              const t0 = performance.now();
              const cpu0 = process.cpuUsage();
              const reads0 = engineCounters(db.store)?.reads ?? null;
              const observers = () => {
                const m = worker.metrics;
                const runs: Record<string, number> = {};
                for (const [name, o] of Object.entries(m.observerMs)) runs[name] = o.runs;
                return { runs, commits: m.commits };
              };
              const observers0 = observers();
              sample = () => {
                const cpu = process.cpuUsage(cpu0);
                const reads = engineCounters(db.store)?.reads ?? null;
                const o = observers();
                samples.push({
                  indexed: metrics.indexed,
                  ms: performance.now() - t0,
                  cpuMs: (cpu.user + cpu.system) / 1000,
                  engineReads: reads === null || reads0 === null ? null : reads - reads0,
                  observers: {
                    runs: Object.fromEntries(Object.entries(o.runs).map(([name, n]) => [name, n - (observers0.runs[name] ?? 0)])),
                    commits: o.commits - observers0.commits,
                  },
                });
              };
              sample();
              // A sampling period for a measurement, not a wait for a condition.
              sampler = setInterval(() => sample?.(), SIZE_SAMPLE_MS);
            },
    });
    clearInterval(sampler);
    // Documents that became searchable after the last tick: dated now, at most one period late.
    sample?.();
    const s = handle.summary;
    const serverCpu = server?.cpuMs() ?? null;
    await handle.close();
    return { ...s, serverCpuMs: serverCpu === null || serverCpu0 === null ? null : serverCpu - serverCpu0 };
  } finally {
    clearInterval(sampler);
    await server?.stop();
  }
}

/** Observer runs: as asked, else run.ts's default for the kind of store the bench opens. */
function benchThreads(options: WebIndexBenchOptions): number {
  return options.threads ?? defaultThreads(options.store === 'serve' ? 'bigtable://' : (options.store ?? 'file:'));
}

export async function runWebIndexBench(options: WebIndexBenchOptions): Promise<WebIndexBenchResult> {
  const threads = benchThreads(options);
  const window = options.window ?? DEFAULT_SATURATION_WINDOW;
  const rss = rssSampler();
  const cpu0 = process.cpuUsage();
  const jsCpu0 = mainThreadCpuMs();
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  options.log?.(`saturation: ${options.docs} documents, window ${window}`);
  const samples: SizeSample[] = [];
  const s = await phase(options, options.docs, { window }, samples);
  const cpu = process.cpuUsage(cpu0);
  const jsMs = js(jsCpu0, mainThreadCpuMs());
  const elu = performance.eventLoopUtilization(elu0);
  const wallMs = performance.now() - t0;
  const lightDocs = options.lightDocs ?? 200;
  const lightRate = options.lightRate ?? 20;
  let light: WebIndexBenchResult['lightLoad'] = null;
  if (lightDocs > 0) {
    options.log?.(`light load: ${lightDocs} documents at ${lightRate}/s`);
    const l = await phase(options, lightDocs, { rate: lightRate });
    light = {
      documents: l.documents,
      ratePerSecond: lightRate,
      medianLatencyMs: l.medianLatencyMs,
      p99LatencyMs: l.p99LatencyMs,
      elapsedMs: l.loadAndProcessMs,
    };
  }
  const loadCurve: LoadStep[] = [];
  for (const rate of options.loadRates ?? []) {
    const docs = Math.max(50, Math.round(rate * (options.loadSeconds ?? 8)));
    options.log?.(`load curve: ${docs} documents at ${rate}/s`);
    const l = await phase(options, docs, { rate, window });
    loadCurve.push({
      offeredPerSecond: rate,
      documents: l.documents,
      achievedPerSecond: l.documentsPerSecond,
      medianLatencyMs: l.medianLatencyMs,
      p99LatencyMs: l.p99LatencyMs,
    });
  }
  let stages: StageCost[] | null = null;
  if (options.stages === true) {
    stages = [];
    for (const until of WEB_INDEX_STAGES) {
      if (until === 'export') {
        stages.push(stageCost(until, s, { cpuMs: (cpu.user + cpu.system) / 1000, jsMs }));
        continue;
      }
      options.log?.(`stages: ${options.docs} documents until ${until}`);
      const c0 = process.cpuUsage();
      const j0 = mainThreadCpuMs();
      const r = await phase(options, options.docs, { window, until });
      const c = process.cpuUsage(c0);
      stages.push(stageCost(until, r, { cpuMs: (c.user + c.system) / 1000, jsMs: js(j0, mainThreadCpuMs()) }));
    }
  }
  const peak = rss.stop();
  return {
    documents: s.documents,
    duplicatesFound: s.duplicatesFound,
    linksInverted: s.linksInverted,
    documentsPerSecond: s.documentsPerSecond,
    medianLatencyMs: light?.medianLatencyMs ?? s.medianLatencyMs,
    p99LatencyMs: light?.p99LatencyMs ?? s.p99LatencyMs,
    saturation: {
      documentsPerSecond: s.documentsPerSecond,
      medianLatencyMs: s.medianLatencyMs,
      p99LatencyMs: s.p99LatencyMs,
      elapsedMs: s.loadAndProcessMs,
      window,
      eventLoopUtilization: Math.round(elu.utilization * 1000) / 1000,
      cpuCores: Math.round(((cpu.user + cpu.system) / 1000 / Math.max(1, wallMs)) * 100) / 100,
      jsThreadCores: jsMs === null ? null : Math.round((jsMs / Math.max(1, wallMs)) * 100) / 100,
      bySize: sizeCurve(samples, SIZE_PARTS),
      drainMs: drainAfter(samples, s.loadAndProcessMs),
    },
    lightLoad: light,
    loadCurve,
    peakRssMiB: Math.round(peak.rss / 1024 / 1024),
    peakAnonRssMiB: peak.anon === null ? null : Math.round(peak.anon / 1024 / 1024),
    clusters: s.clusters,
    postings: s.postings,
    stalePostings: s.stalePostings,
    observerCommits: s.observerCommits,
    conflicts: s.conflicts,
    commitsPerDocument: Math.round((s.observerCommits / Math.max(1, s.loaded)) * 100) / 100,
    cpuMsPerDocument: Math.round(((cpu.user + cpu.system) / 1000 / Math.max(1, s.loaded)) * 100) / 100,
    serverCpuMsPerDocument: s.serverCpuMs === null ? null : Math.round((s.serverCpuMs / Math.max(1, s.loaded)) * 100) / 100,
    engineOpsPerDocument: s.engineWrites === null ? null : Math.round((s.engineWrites.ops / Math.max(1, s.loaded)) * 10) / 10,
    engineKiBPerDocument: s.engineWrites === null ? null : Math.round((s.engineWrites.bytes / 1024 / Math.max(1, s.loaded)) * 10) / 10,
    engineReadsPerDocument: s.engineReads === null ? null : Math.round((s.engineReads / Math.max(1, s.loaded)) * 10) / 10,
    engineReadsByGroupPerDocument: s.engineReadsByGroup === null ? null : perDocument(s.engineReadsByGroup, s.loaded),
    engineCompaction:
      s.engineCompaction === null
        ? null
        : {
            flushedMiB: s.engineCompaction.flushedMiB,
            compactionReadMiB: s.engineCompaction.compactionReadMiB,
            compactionWrittenMiB: s.engineCompaction.compactionWrittenMiB,
            seconds: s.engineCompaction.seconds,
            writtenMiBByLevel: Object.fromEntries(s.engineCompaction.levels.map((l) => [String(l.level), l.writtenMiB])),
          },
    elapsedMs: s.loadAndProcessMs,
    store: options.store ?? 'file:',
    threads,
    loaders: options.loaders ?? DEFAULT_LOADERS,
    node: process.version,
    gc: { intervalMs: s.gcIntervalMs, fullIntervalMs: s.fullGcIntervalMs, last: s.lastGc },
    anomalies: s.anomalies,
    stages,
  };
}

/** The JS thread's CPU ms between two readings (null off Linux). */
function js(before: number | null, after: number | null): number | null {
  return before === null || after === null ? null : after - before;
}

function stageCost(until: WebIndexStage, s: RunSummary, spent: { cpuMs: number; jsMs: number | null }): StageCost {
  const per = (n: number, digits: number) => Math.round((n / Math.max(1, s.loaded)) * 10 ** digits) / 10 ** digits;
  return {
    until,
    documents: s.loaded,
    documentsPerSecond: s.documentsPerSecond,
    cpuMsPerDocument: per(spent.cpuMs, 2),
    jsMsPerDocument: spent.jsMs === null ? null : per(spent.jsMs, 2),
    commitsPerDocument: per(s.observerCommits, 2),
    engineOpsPerDocument: s.engineWrites === null ? null : per(s.engineWrites.ops, 1),
  };
}

/** The saturation phase's drain: `elapsedMs` after the last document became searchable (null: not sampled). */
function drainAfter(samples: readonly SizeSample[], elapsedMs: number): number | null {
  const at = lastSearchableMs(samples);
  return at === null ? null : Math.max(0, Math.round(elapsedMs - at));
}
