/**
 * One end-to-end run of the web index (what `percolator demo` and `percolator bench webindex`
 * drive): open the store, register the observers, load a corpus with concurrent loaders while the
 * worker processes it, wait for quiescence, and read the summary back from the store.
 *
 * Loading is paced by a window of documents loaded but not yet searchable, so the crawl-to-index
 * latency measures the pipeline under load rather than the length of a backlog. A re-crawl that
 * changes nothing never becomes "newly" searchable; the processor reports those, and they leave
 * the window once processed.
 */
import type { Worker } from '../../notify/worker.js';
import type { EngineReadsByGroup } from '../../store/engine-store.js';
import { type LevelCompaction, levelStatsBetween } from '../../store/embedded/level-stats.js';
import { removeStoreDir } from '../../store/embedded/remove-store-dir.js';
import { openStore } from '../../store/open-store.js';
import type { Store } from '../../store/store.js';
import { Percolator, type PercolatorOptions } from '../../txn/percolator.js';
import { refuseForeignStore } from './clean-start.js';
import { listLocalDocs, localDocuments, nodeModulesCandidates } from './corpus/local.js';
import { SyntheticCorpus } from './corpus/synthetic.js';
import { type CrawledDoc, loadDocuments } from './loader.js';
import { WebIndexMetrics } from './metrics.js';
import type { KeyMode } from './parse.js';
import { pinKeyMode } from './pin-key-mode.js';
import { WEB_INDEX_WORKER, type WebIndexStage, createWebIndexTables, registerWebIndex } from './pipeline.js';
import { PAGES } from './schema.js';
import { type IndexStats, readStats } from './stats.js';
import { DEFAULT_LOADERS, defaultThreadsFor } from './defaults.js';

export type CorpusName = 'local' | 'synthetic';

export { DEFAULT_LOADERS, DEFAULT_REMOTE_THREADS, DEFAULT_THREADS } from './defaults.js';

/** The default number of concurrent observer runs for a store (URL or open store). */
export function defaultThreads(store: string | Store): number {
  return defaultThreadsFor(typeof store === 'string' ? store : store.url);
}

export interface RunOptions {
  readonly corpus: CorpusName;
  /** local: at most this many files (default: all); synthetic: this many documents (default 2 000). */
  readonly docs?: number;
  /**
   * A store URL or an open store. `file:DIR` is wiped first unless `keep`, and only when it holds
   * a web index or nothing (clean-start.ts: NOT_A_WEB_INDEX otherwise) unless `force`.
   */
  readonly store: string | Store;
  readonly keep?: boolean;
  /** Wipe a `file:` store even when it holds tables that are not the web index's. */
  readonly force?: boolean;
  readonly seed?: number;
  /** Concurrent observer runs. Default `defaultThreads(store)`: 16, or 64 over `bigtable://`. */
  readonly threads?: number;
  /**
   * Concurrent loader transactions. Default 16: each waits for its durable commit, so with four
   * the loaders held the saturated pipeline below its window, its event loop 7–10 % idle
   * (BENCHMARKS.md, 2026-11-30 second session).
   */
  readonly loaders?: number;
  /** Documents loaded but not yet searchable before loaders wait. Default 4 × threads. */
  readonly window?: number;
  /** Arrival rate (documents per second, fixed schedule): a light load instead of as fast as the window allows. */
  readonly rate?: number;
  /** The node_modules directory of the local corpus. Default `./node_modules`. */
  readonly nodeModules?: string;
  readonly onProgress?: (p: Progress) => void;
  readonly progressIntervalMs?: number;
  /** Background GC: targeted passes every this many ms (Percolator's `gcIntervalMs`; its default when omitted; 0 = off). */
  readonly gcIntervalMs?: number;
  /** Background full GC passes at most this often (Percolator's `fullGcIntervalMs`; default 0 = off). */
  readonly fullGcIntervalMs?: number;
  /** What targeted GC passes remember (Percolator's `recentGcWindows`; its default when omitted). */
  readonly recentGcWindows?: PercolatorOptions['recentGcWindows'];
  /**
   * The last stage of the pipeline to run (pipeline.ts WEB_INDEX_STAGES; default `export`, all of
   * it). Short of the export nothing becomes searchable: the window then counts documents loaded
   * but not yet processed.
   */
  readonly until?: WebIndexStage;
  /** Called once the worker runs, before loading (e.g. to start a status page). */
  readonly onStarted?: (handle: { db: Percolator; worker: Worker; metrics: WebIndexMetrics }) => void | Promise<void>;
}

export interface Progress {
  readonly total: number;
  readonly loaded: number;
  readonly processed: number;
  readonly indexed: number;
  readonly pending: number;
  readonly elapsedMs: number;
}

export interface RunSummary extends IndexStats {
  readonly corpus: CorpusName;
  readonly keyMode: KeyMode;
  readonly store: string;
  readonly loaded: number;
  readonly documentsPerSecond: number;
  readonly loadAndProcessMs: number;
  readonly observerCommits: number;
  readonly conflicts: number;
  readonly observerRuns: Record<string, { runs: number; commits: number; conflicts: number; meanMs: number }>;
  /** Broken protocol invariants met during the run (db.anomalies' messages; always empty unless a bug). */
  readonly anomalies: readonly string[];
  /** Background GC in effect (ms; 0 = off): targeted passes, full passes. */
  readonly gcIntervalMs: number;
  readonly fullGcIntervalMs: number;
  /** Ops and key+value bytes the run wrote to the storage engine (`file:` only; else null). */
  readonly engineWrites: { readonly ops: number; readonly bytes: number } | null;
  /** Point reads the storage engine answered during the run (`file:` only; else null): the row caches' misses. */
  readonly engineReads: number | null;
  /** Those reads by `table/locality group`, found or absent (`file:` only; else null). */
  readonly engineReadsByGroup: EngineReadsByGroup | null;
  /** What LevelDB's flushes and compactions wrote and took during the run (`file:` only; else null). */
  readonly engineCompaction: LevelCompaction | null;
  /** The last background GC pass (null: GC off or no pass yet). */
  readonly lastGc: {
    readonly kind: 'full' | 'recent';
    readonly versionsRemoved: number;
    readonly locksResolved: number;
    readonly error: string | null;
  } | null;
}

export interface RunHandle {
  readonly db: Percolator;
  readonly worker: Worker;
  readonly metrics: WebIndexMetrics;
  readonly summary: RunSummary;
  close(): Promise<void>;
}

export const DEFAULT_SYNTHETIC_DOCS = 2_000;

/** What a store's engine has written (ops, key and value bytes) and read (point reads), since it opened. */
export interface EngineCounters {
  readonly ops: number;
  readonly bytes: number;
  readonly reads: number;
  /** The reads by table and locality group (EngineStore.engineReadsByGroup). */
  readonly readsByGroup: EngineReadsByGroup;
  /** LevelDB's flush and compaction counters (LevelEngine.compaction()). */
  readonly compaction: LevelCompaction | null;
}

/**
 * The counters of a `file:` store's engine (LevelEngine.stats()). The Store interface does not
 * expose its engine, so this looks for it and answers null where there is none.
 */
export function engineCounters(store: Store): EngineCounters | null {
  const engine = (
    store as unknown as {
      engine?: { stats?: () => { ops?: unknown; bytes?: unknown; reads?: unknown }; compaction?: () => LevelCompaction };
    }
  ).engine;
  const st = typeof engine?.stats === 'function' ? engine.stats() : null;
  const byGroup = (store as unknown as { engineReadsByGroup?: () => EngineReadsByGroup }).engineReadsByGroup;
  return st !== null && typeof st.ops === 'number' && typeof st.bytes === 'number' && typeof st.reads === 'number'
    ? {
        ops: st.ops,
        bytes: st.bytes,
        reads: st.reads,
        readsByGroup: typeof byGroup === 'function' ? byGroup.call(store) : {},
        compaction: typeof engine?.compaction === 'function' ? engine.compaction() : null,
      }
    : null;
}

/** `after − before`, per group (groups first read in between count from zero). */
function readsBetween(before: EngineReadsByGroup, after: EngineReadsByGroup): EngineReadsByGroup {
  const out: EngineReadsByGroup = {};
  for (const [g, a] of Object.entries(after)) {
    const b = before[g];
    out[g] = { found: a.found - (b?.found ?? 0), absent: a.absent - (b?.absent ?? 0) };
  }
  return out;
}

/**
 * Row-cache budget of the store this module opens. Small on purpose: the store's row cache keeps
 * far more memory alive than it accounts for (test/webindex-row-cache.test.ts), so its default
 * 128 MB grew the process by ~100 KB per document; 8 MB costs no measurable throughput here.
 */
export const ROW_CACHE_BYTES = 8 * 1024 * 1024;
/**
 * Budget of the row cache's second tier (encoded rows, store/encoded-row-cache.ts): a 144 MiB ring
 * and its index, holding the rows of the ~4 000 documents in flight — every row the store writes,
 * and those the small decoded tier evicts between one observer and the next — at a fraction of
 * the decoded tier's heap per row.
 * At 100 000 documents a 64 MiB tier and the store's key filter took the rate from 69 to 81
 * documents/s (BENCHMARKS.md, 2026-11-26 fifth session). 192 MiB since the mmap ballast
 * (store/embedded/mmap-ballast.ts) took LevelDB's mapped tables out of the RSS: engine reads 48 → 39
 * a document and 101 → 111 documents/s at 100 000, peak RSS 681 → 814 MiB (2026-11-27).
 */
export const ENCODED_ROW_CACHE_BYTES = 192 * 1024 * 1024;

/**
 * LevelDB budgets of the `file:` store this module opens. The block cache is small: the web index's
 * working set is in the store's row cache, and classic-level's 256 MiB default was native memory
 * the process kept for good.
 */
export const LEVEL_CACHE_BYTES = 32 * 1024 * 1024;
/**
 * The memtable (two while one flushes) is large on purpose. The store rewrites a row's whole entry
 * on every mutation, and a document's rows are rewritten a dozen times within seconds; LevelDB's
 * flush keeps every version, and only a compaction drops the shadowed ones. Level 0 is compacted
 * four memtables at a time, so the memtable's size is the window in which a row's versions collapse
 * before they reach level 1 — each byte that passes it is rewritten ~10 times per level below (row
 * keys are URLs: every compaction overlaps the whole next level). 100 000 documents: 16 MiB wrote
 * 7.2 GiB into level 2 and kept LevelDB's compaction thread at up to 0.72–0.77 of a core, taking it
 * from the JS thread; 64 MiB wrote 2.4 GiB, the thread at most 0.4 (327 → 365 documents/s and
 * 5.16 → 4.17 ms of CPU a document, the means of five runs each, for ~40 MiB more peak RSS;
 * BENCHMARKS.md, 2026-11-28 third session). 128 MiB wrote 1.5 GiB but was no faster (350
 * documents/s), for a peak RSS of 983 MiB.
 */
export const LEVEL_WRITE_BUFFER_BYTES = 64 * 1024 * 1024;

async function openWebIndexStore(url: string): Promise<Store> {
  return openStore(url, {
    cacheBytes: ROW_CACHE_BYTES,
    encodedCacheBytes: ENCODED_ROW_CACHE_BYTES,
    level: { cacheSize: LEVEL_CACHE_BYTES, writeBufferSize: LEVEL_WRITE_BUFFER_BYTES },
  });
}

/** The corpus as a stream, and its size; a synthetic one as its `crawl`-th crawl finds it (0: the first). */
export async function openCorpus(
  options: Pick<RunOptions, 'corpus' | 'docs' | 'seed' | 'nodeModules'>,
  crawl = 0,
): Promise<{ total: number; keyMode: KeyMode; docs: AsyncIterable<CrawledDoc> | Iterable<CrawledDoc> }> {
  if (options.corpus === 'synthetic') {
    const corpus = new SyntheticCorpus({ docs: options.docs ?? DEFAULT_SYNTHETIC_DOCS, seed: options.seed });
    return { total: corpus.size, keyMode: 'content+url+title', docs: corpus.documents(0, corpus.size, crawl) };
  }
  const roots = options.nodeModules !== undefined ? [options.nodeModules] : nodeModulesCandidates();
  for (const root of roots) {
    const files = await listLocalDocs(root, options.docs);
    if (files.length > 0) return { total: files.length, keyMode: 'content', docs: localDocuments(root, files) };
  }
  throw Object.assign(new Error(`no documentation files found under ${roots.join(' or ')} (try --corpus synthetic)`), {
    code: 'EMPTY_CORPUS',
  });
}

export async function runWebIndex(options: RunOptions): Promise<RunHandle> {
  // The corpus first: a run that cannot start leaves the store as it was.
  const corpus = await openCorpus(options);
  // Only a web index (clean-start.ts), only a store's own files, and only if no process has it
  // open (remove-store-dir.ts).
  if (typeof options.store === 'string' && options.store.startsWith('file:') && options.keep !== true) {
    const dir = options.store.slice('file:'.length);
    if (options.force !== true) await refuseForeignStore(dir);
    await removeStoreDir(dir);
  }
  const store = typeof options.store === 'string' ? await openWebIndexStore(options.store) : options.store;
  const ownsStore = typeof options.store === 'string';
  const threads = options.threads ?? defaultThreads(store);
  const gc = {
    ...(options.gcIntervalMs === undefined ? {} : { gcIntervalMs: options.gcIntervalMs }),
    ...(options.fullGcIntervalMs === undefined ? {} : { fullGcIntervalMs: options.fullGcIntervalMs }),
    ...(options.recentGcWindows === undefined ? {} : { recentGcWindows: options.recentGcWindows }),
  };
  const db = await Percolator.open({ store, ...gc }).catch(async (e: unknown) => {
    if (ownsStore) await store.close();
    throw e;
  });
  const metrics = new WebIndexMetrics();
  let worker: Worker | null = null;
  try {
    await createWebIndexTables(db);
    // A re-crawl (--keep) of a store another corpus's run indexed: its clusters were built by other keys.
    await pinKeyMode(
      db,
      corpus.keyMode,
      () => `this corpus needs ${corpus.keyMode}: index it into a store of its own (demo: start clean, without --keep)`,
    );
    worker = registerWebIndex(db.worker({ threads, maxFailures: 100, ...WEB_INDEX_WORKER }), {
      keyMode: corpus.keyMode,
      metrics,
      until: options.until,
    });
    await worker.start();
    await options.onStarted?.({ db, worker, metrics });

    const engineBefore = engineCounters(store);
    const t0 = performance.now();
    let pending = 0;
    let stopProgress = false;
    // Ends the progress loop's current period at once (the run is over: no need to sit it out).
    let wakeProgress = (): void => undefined;
    // Counting pending notifications reads every one of them: only for someone who asked.
    const progressLoop = (async () => {
      const interval = options.progressIntervalMs ?? 500;
      while (!stopProgress && options.onProgress !== undefined) {
        pending = await db.pendingNotifications().catch(() => pending);
        options.onProgress?.({
          total: corpus.total,
          loaded: metrics.loaded,
          processed: metrics.processed,
          indexed: metrics.indexed,
          pending,
          elapsedMs: performance.now() - t0,
        });
        if (stopProgress) break; // stopped while counting
        // A sampling period, not a wait for a condition.
        await new Promise<void>((r) => {
          const timer = setTimeout(r, interval);
          wakeProgress = () => {
            clearTimeout(timer);
            r();
          };
        });
      }
    })();
    const window = options.window ?? 4 * threads;
    const whole = (options.until ?? 'export') === 'export';
    const outstanding = () => (whole ? metrics.outstanding : metrics.loaded - metrics.processed);
    let lastSeen = '';
    let lastProgressAt = performance.now();
    // A fixed arrival schedule (`rate`): document i may enter at t0 + i / rate.
    let nextSlot = performance.now();
    const beforeEach = async () => {
      if (options.rate !== undefined && options.rate > 0) {
        const slot = nextSlot;
        nextSlot += 1000 / options.rate;
        const wait = slot - performance.now();
        // An arrival schedule (the light-load benchmark), not a wait for a condition.
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      while (outstanding() > window) {
        const seen = `${metrics.indexed}/${metrics.processed}`;
        if (seen !== lastSeen) {
          lastSeen = seen;
          lastProgressAt = performance.now();
        }
        // A valve against a stuck pipeline (e.g. a parked document never becomes searchable).
        if (performance.now() - lastProgressAt > 30_000) return;
        // Pacing the loaders behind the pipeline (a rate limit, not a test wait).
        await new Promise((r) => setTimeout(r, 2));
      }
    };
    const w = worker;
    const load = await loadDocuments(db, corpus.docs, {
      concurrency: options.loaders ?? DEFAULT_LOADERS,
      metrics,
      beforeEach,
      onCommitted: (d) => w.hint(PAGES, d.url),
    });
    await db.waitForQuiescence({ timeoutMs: 600_000 });
    const elapsedMs = performance.now() - t0;
    const engineAfter = engineCounters(store);
    stopProgress = true;
    wakeProgress();
    await progressLoop;
    options.onProgress?.({
      total: corpus.total,
      loaded: metrics.loaded,
      processed: metrics.processed,
      indexed: metrics.indexed,
      pending: 0,
      elapsedMs,
    });

    const snap = await db.snapshot();
    let stats: IndexStats;
    try {
      stats = await readStats(snap);
    } finally {
      snap.release();
    }
    const m = worker.metrics;
    const observerRuns: RunSummary['observerRuns'] = {};
    for (const [name, o] of Object.entries(m.observerMs)) {
      observerRuns[name] = {
        runs: o.runs,
        commits: o.commits,
        conflicts: o.conflicts,
        meanMs: Math.round((o.totalMs / Math.max(1, o.runs)) * 100) / 100,
      };
    }
    const summary: RunSummary = {
      corpus: options.corpus,
      keyMode: corpus.keyMode,
      store: store.url,
      loaded: load.loaded,
      ...stats,
      documentsPerSecond: Math.round(load.loaded / (elapsedMs / 1000)),
      loadAndProcessMs: Math.round(elapsedMs),
      observerCommits: m.commits,
      conflicts: m.conflicts,
      observerRuns,
      anomalies: db.anomalies.map((e) => e.message),
      gcIntervalMs: db.gcIntervalMs,
      fullGcIntervalMs: db.fullGcIntervalMs,
      engineWrites:
        engineBefore === null || engineAfter === null
          ? null
          : { ops: engineAfter.ops - engineBefore.ops, bytes: engineAfter.bytes - engineBefore.bytes },
      engineReads: engineBefore === null || engineAfter === null ? null : engineAfter.reads - engineBefore.reads,
      engineReadsByGroup:
        engineBefore === null || engineAfter === null ? null : readsBetween(engineBefore.readsByGroup, engineAfter.readsByGroup),
      engineCompaction:
        engineBefore?.compaction == null || engineAfter?.compaction == null
          ? null
          : levelStatsBetween(engineBefore.compaction, engineAfter.compaction),
      lastGc:
        db.lastGc === null
          ? null
          : {
              kind: db.lastGc.kind,
              versionsRemoved: db.lastGc.result?.versionsRemoved ?? 0,
              locksResolved: db.lastGc.result?.locksResolved ?? 0,
              error: db.lastGc.error === null ? null : String(db.lastGc.error),
            },
    };
    return {
      db,
      worker: w,
      metrics,
      summary,
      close: async () => {
        await w.stop();
        await db.close();
        if (ownsStore) await store.close();
      },
    };
  } catch (e) {
    await worker?.stop().catch(() => undefined);
    await db.close().catch(() => undefined);
    if (ownsStore) await store.close().catch(() => undefined);
    throw e;
  }
}
