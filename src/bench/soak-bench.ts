/**
 * `bench soak` — the web index kept fresh for a long time: a repository of `docs` synthetic
 * documents is loaded, then re-crawled continuously at `rate` fetches a second for `seconds`
 * (new content mostly, some unchanged re-crawls, deletions and re-additions), as a deployment
 * that keeps an index fresh runs for months. What a user of such a deployment needs to know and a
 * saturation benchmark does not show: whether memory and the store stay bounded while the
 * repository does, and whether the index is still exactly what a batch recomputation gives.
 *
 * Measured every `sampleSeconds`: RSS, the JS heap after a collection, the store's size on disk.
 * At the end, once quiescent: the index compared with the batch (batch.ts) over the documents
 * live at the end, and per table the rows the store holds and how many of them hold nothing but
 * delete records — what version GC left (`rowsAtEnd`), and again after one full pass
 * (`rowsAfterFullPass`, with its duration).
 *
 * With `store: 'serve'` the store is a `percolator serve` process on a fresh directory and the
 * pipeline its client, as `percolator worker` deployments run: the server's memory is sampled too,
 * and what background GC did (`db.gcTotals`) and had left to do (`db.gcBacklogCells`) say whether
 * its passes keep up over a network.
 *
 * The crawl mix per fetch: 5 % deletion of the page, 80 % new content (a new version), the rest an
 * unchanged re-crawl (a new version if the page was deleted). Fetches go in batches every 100 ms
 * through the loader (8 concurrent transactions); when the pipeline falls behind, the achieved
 * `crawlsPerSecond` says so.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type CorpusDoc, INDEX_FIELDS, batchIndexSummary, differingKeys, readIndexSummary } from '../apps/webindex/batch.js';
import type { KeyMode } from '../apps/webindex/parse.js';
import { SyntheticCorpus } from '../apps/webindex/corpus/synthetic.js';
import { type CrawledDoc, loadDocuments } from '../apps/webindex/loader.js';
import { runWebIndex } from '../apps/webindex/run.js';
import type { Store } from '../store/store.js';
import { WRITE, decodeWrite } from '../txn/layout.js';
import { LONG_RUNNING_GC_WINDOWS, type Percolator } from '../txn/percolator.js';
import { mulberry32 } from '../util/seeded-random.js';
import { anonRss } from './anon-rss.js';
import { BenchOptionError } from './bench-option-error.js';
import { benchStoreUrl, withBenchDir } from './bench-dir.js';
import { type ServeProcess, startServeProcess } from './serve-process.js';

export interface SoakBenchOptions {
  /** Repository size (synthetic documents). */
  readonly docs: number;
  /** Re-crawls offered per second. */
  readonly rate: number;
  /** Seconds of re-crawling. */
  readonly seconds: number;
  /** Seconds between samples. Default 30. */
  readonly sampleSeconds?: number;
  readonly seed?: number;
  /**
   * `file:` (a fresh temporary directory, the default), `memory:`, or `serve`: a `percolator serve`
   * process on a fresh directory, the pipeline its client over `bigtable://` (serve-process.ts).
   */
  readonly store?: 'file:' | 'memory:' | 'serve';
  /** More flags for the `percolator serve` process (`store: 'serve'` only), e.g. `--row-cache-mib 16`. */
  readonly serveArgs?: readonly string[];
  /** Background full GC passes at most this often (Percolator's `fullGcIntervalMs`; default 0 = off). */
  readonly fullGcIntervalMs?: number;
  /** Targeted GC passes remember what `percolator worker`'s do (LONG_RUNNING_GC_WINDOWS), not the library's default. */
  readonly workerGcWindows?: boolean;
  readonly log?: (line: string) => void;
}

export interface SoakSample {
  /** Seconds since the re-crawls began. */
  readonly seconds: number;
  readonly crawls: number;
  readonly rssMiB: number;
  /** Of it, anonymous memory (anon-rss.ts: the rest is file-backed pages); null off Linux. */
  readonly anonRssMiB: number | null;
  /** The JS heap in use after a full collection. */
  readonly heapMiB: number;
  /** The store's directory (`file:`, `serve`; null for `memory:`). */
  readonly storeMiB: number | null;
  /** With `serve`: the server process's resident memory (else null). */
  readonly serverRssMiB: number | null;
  /** Columns the targeted GC passes have yet to collect (`db.gcBacklogCells`). */
  readonly gcBacklogCells: number;
}

/** Rows of one table as stored, and how many hold nothing but delete records (no value, no lock). */
export interface TableRows {
  readonly rows: number;
  readonly deletedOnly: number;
}

export interface SoakBenchResult {
  readonly documents: number;
  readonly crawls: number;
  readonly crawlsPerSecond: number;
  readonly seconds: number;
  readonly loadSeconds: number;
  readonly samples: readonly SoakSample[];
  /**
   * Documents live at the end, and the index's differences from the batch over them (0: identical;
   * a cluster whose postings differ counts once, batch.ts › IndexSummary).
   */
  readonly liveDocuments: number;
  readonly differencesFromBatch: number;
  readonly rowsAtEnd: Readonly<Record<string, TableRows>>;
  readonly rowsAfterFullPass: Readonly<Record<string, TableRows>>;
  readonly fullPass: { readonly seconds: number; readonly versionsRemoved: number };
  /** What the background GC passes did during the run (`db.gcTotals`), before the final pass. */
  readonly backgroundGc: Percolator['gcTotals'];
  readonly anomalies: readonly string[];
  /** `file:`, `memory:` or `serve`. */
  readonly store: string;
  readonly fullGcIntervalMs: number;
  readonly workerGcWindows: boolean;
  /**
   * The process's peak RSS (`maxRSS`, MiB) at the end of each phase: the load and the re-crawls,
   * the closing comparison with the batch, the final full pass. A peak is the highest so far, so
   * a phase that raises it is the one that needed the memory.
   */
  readonly peakRssMiB: { readonly recrawls: number; readonly comparison: number; readonly fullPass: number };
}

/** The process's peak resident memory so far, MiB. */
const peakRssMiB = (): number => Math.round(process.resourceUsage().maxRSS / 1024);

const MiB = 1024 * 1024;

/** A full collection before reading the heap: `gc` exposed once, from a fresh context. */
function collectedHeapMiB(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  return Math.round(process.memoryUsage().heapUsed / MiB);
}

async function dirMiB(dir: string): Promise<number> {
  let bytes = 0;
  for (const name of await readdir(dir)) {
    const s = await stat(join(dir, name)).catch(() => null); // a table compacted away meanwhile
    if (s?.isFile() === true) bytes += s.size;
  }
  return Math.round(bytes / MiB);
}

/** Per Percolator table: rows, and rows whose every column's newest commit is a delete (and no lock). */
export async function countRows(store: Store, tables: readonly string[]): Promise<Record<string, TableRows>> {
  const out: Record<string, TableRows> = {};
  for (const table of tables) {
    let rows = 0;
    let deletedOnly = 0;
    for await (const r of store.readRows(table, {})) {
      rows++;
      const newest = new Map<string, { ts: number; put: boolean }>();
      let other = false;
      for (const c of r.cells) {
        if (c.family !== WRITE) {
          if (c.family === 'lock') other = true;
          continue;
        }
        const w = decodeWrite(c.value);
        if (w.kind === 'rollback') continue;
        const q = Buffer.from(c.qualifier).toString('latin1');
        const seen = newest.get(q);
        if (seen === undefined || c.timestamp > seen.ts) newest.set(q, { ts: c.timestamp, put: w.kind === 'put' });
      }
      if (!other && ![...newest.values()].some((v) => v.put)) deletedOnly++;
    }
    out[table] = { rows, deletedOnly };
  }
  return out;
}

export async function runSoakBench(options: SoakBenchOptions): Promise<SoakBenchResult> {
  const log = options.log ?? (() => undefined);
  const n = Math.floor(options.docs);
  if (!(n >= 10)) throw new BenchOptionError('--docs', options.docs, `--docs must be at least 10, got ${options.docs}`);
  if (!(options.rate > 0)) throw new BenchOptionError('--rate', options.rate, `--rate must be above 0, got ${options.rate}`);
  if (!(options.seconds > 0)) throw new BenchOptionError('--seconds', options.seconds, `--seconds must be above 0, got ${options.seconds}`);
  const sampleMs = (options.sampleSeconds ?? 30) * 1000;
  const seed = options.seed ?? 42;
  const random = mulberry32(seed ^ 0x2545f491);
  const corpus = new SyntheticCorpus({ docs: n, seed });
  return withBenchDir(options.store === 'memory:', 'soak', async (dir) => {
    const server = options.store === 'serve' ? await startServeProcess(dir as string, options.serveArgs) : null;
    try {
      return await soakIn(dir, server, options, { n, sampleMs, seed, random, corpus, log });
    } finally {
      await server?.stop();
    }
  });
}

async function soakIn(
  dir: string | null,
  server: ServeProcess | null,
  options: SoakBenchOptions,
  { n, sampleMs, seed, random, corpus, log }: SoakSetup,
): Promise<SoakBenchResult> {
  const url = server !== null ? `bigtable://127.0.0.1:${server.port}` : benchStoreUrl(dir);
  log(`loading ${n} documents (${url}${server !== null ? `, served from ${dir}` : ''})`);
  const handle = await runWebIndex({
    corpus: 'synthetic',
    docs: n,
    seed,
    store: url,
    keep: true,
    ...(options.fullGcIntervalMs === undefined ? {} : { fullGcIntervalMs: options.fullGcIntervalMs }),
    ...(options.workerGcWindows === true ? { recentGcWindows: LONG_RUNNING_GC_WINDOWS } : {}),
  });
  try {
    const { db } = handle;
    const keyMode = handle.summary.keyMode;
    // Which documents are live, at which version: document i is corpus.doc(i, versions[i]), a pure
    // function, so the harness holds 5 bytes a document rather than its content (~50 MiB at 20 000,
    // which the samples would count as the pipeline's).
    const live = new Uint8Array(n).fill(1);
    const versions = new Int32Array(n);
    const liveDocs = function* (): Generator<CorpusDoc> {
      for (let i = 0; i < n; i++) if (live[i] === 1) yield corpus.doc(i, versions[i]) as CorpusDoc;
    };
    const samples: SoakSample[] = [];
    let crawls = 0;
    const started = performance.now();
    const sample = async (): Promise<void> => {
      const anon = anonRss();
      const s: SoakSample = {
        seconds: Math.round((performance.now() - started) / 1000),
        crawls,
        rssMiB: Math.round(process.memoryUsage().rss / MiB),
        anonRssMiB: anon === null ? null : Math.round(anon / MiB),
        heapMiB: collectedHeapMiB(),
        storeMiB: dir === null ? null : await dirMiB(dir),
        serverRssMiB: server === null ? null : await processRssMiB(server.pid),
        gcBacklogCells: db.gcBacklogCells,
      };
      samples.push(s);
      log(
        `${s.seconds} s: ${s.crawls} crawls, RSS ${s.rssMiB} MiB${s.anonRssMiB === null ? '' : ` (${s.anonRssMiB} anonymous)`}, heap ${s.heapMiB} MiB${s.storeMiB === null ? '' : `, store ${s.storeMiB} MiB`}${s.serverRssMiB === null ? '' : `, server RSS ${s.serverRssMiB} MiB`}, GC backlog ${s.gcBacklogCells} cells`,
      );
    };
    await sample();
    const batchSize = Math.max(1, Math.round(options.rate / 10));
    const endMs = options.seconds * 1000;
    let nextSample = sampleMs;
    for (let tick = 1; performance.now() - started < endMs; tick++) {
      const fetches = new Map<number, CrawledDoc>(); // one fetch of a document a batch: `live` is what was written last
      for (let k = 0; k < batchSize; k++) {
        const i = Math.floor(random() * n);
        const r = random();
        if (r < 0.05) {
          fetches.set(i, { url: corpus.url(i), content: null });
          continue;
        }
        if (r < 0.85 || live[i] === 0) versions[i] = (versions[i] as number) + 1;
        fetches.set(i, corpus.doc(i, versions[i]));
      }
      await loadDocuments(db, [...fetches.values()], { concurrency: 8 });
      for (const [i, d] of fetches) live[i] = d.content === null ? 0 : 1;
      crawls += fetches.size;
      const wait = tick * 100 - (performance.now() - started);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      if (performance.now() - started >= nextSample) {
        nextSample += sampleMs;
        await sample();
      }
    }
    const seconds = (performance.now() - started) / 1000;
    log('re-crawls done; waiting for quiescence');
    await db.waitForQuiescence({ timeoutMs: 30 * 60_000 });
    await sample();
    const recrawlsPeak = peakRssMiB();

    const differences = await differencesFromBatch(db, liveDocs(), keyMode);
    const comparisonPeak = peakRssMiB();
    log(`index vs batch: ${differences} differences (peak RSS ${comparisonPeak} MiB); counting rows`);
    // The comparison's garbage (~300 MiB of the heap at 20 000 documents) is the harness's, not the
    // pipeline's: collected here, so that the full pass's peak is its own, not the heap V8 let grow
    // over garbage it had not yet collected.
    collectedHeapMiB();
    const tables = (await db.store.listTables()).filter((t) => !t.startsWith('_percolator'));
    const rowsAtEnd = await countRows(db.store, tables);
    // The pass collects below the oracle's GC watermark, which over serve trails the clock by the
    // oracle's holdback (3 s, oracle.ts): a pass at once would keep the last seconds' versions.
    const quiet = await db.begin();
    quiet.release();
    await untilWatermark(db, quiet.startTs);
    const backgroundGc = structuredClone(db.gcTotals);
    const t0 = performance.now();
    const pass = await db.collectGarbage();
    const fullPass = { seconds: Math.round((performance.now() - t0) / 100) / 10, versionsRemoved: pass.versionsRemoved };
    const fullPassPeak = peakRssMiB();
    log(`full pass: ${fullPass.versionsRemoved} versions in ${fullPass.seconds} s (peak RSS ${fullPassPeak} MiB)`);
    const rowsAfterFullPass = await countRows(db.store, tables);
    return {
      documents: n,
      crawls,
      crawlsPerSecond: Math.round(crawls / seconds),
      seconds: Math.round(seconds),
      loadSeconds: Math.round(handle.summary.loadAndProcessMs / 100) / 10,
      samples,
      liveDocuments: live.reduce((k, l) => k + l, 0),
      differencesFromBatch: differences,
      rowsAtEnd,
      rowsAfterFullPass,
      fullPass,
      backgroundGc,
      anomalies: db.anomalies.map((e) => e.message),
      store: server !== null ? 'serve' : dir === null ? 'memory:' : 'file:',
      fullGcIntervalMs: db.fullGcIntervalMs,
      workerGcWindows: options.workerGcWindows === true,
      peakRssMiB: { recrawls: recrawlsPeak, comparison: comparisonPeak, fullPass: fullPassPeak },
    };
  } finally {
    await handle.close();
  }
}

/**
 * The index's differences from the batch over `live` (0: identical), compared as summaries
 * (batch.ts › IndexSummary; entry by entry, a million postings at 20 000 documents raised the peak
 * 420 MiB above the re-crawls' in a 60-second run, 682 in an hour's). The store goes first: read
 * after the batch's parse, whose garbage was still on the heap, it raised the peak by ~290 MiB
 * instead of ~140 (20 000 documents, one run each way).
 */
async function differencesFromBatch(db: Percolator, live: Iterable<CorpusDoc>, keyMode: KeyMode): Promise<number> {
  const snap = await db.snapshot();
  const got = await readIndexSummary(snap).finally(() => snap.release());
  const want = batchIndexSummary(live, keyMode);
  let n = 0;
  for (const field of INDEX_FIELDS) n += differingKeys(got[field], want[field]).length;
  return n;
}

/** Waits (up to a minute) until the oracle's GC watermark has reached `ts`. */
async function untilWatermark(db: Percolator, ts: number): Promise<void> {
  const deadline = performance.now() + 60_000;
  while ((await db.gcWatermark()) < ts && performance.now() < deadline) await new Promise((r) => setTimeout(r, 250));
}

interface SoakSetup {
  readonly n: number;
  readonly sampleMs: number;
  readonly seed: number;
  readonly random: () => number;
  readonly corpus: SyntheticCorpus;
  readonly log: (line: string) => void;
}

/** A process's resident memory from /proc (null where there is none, or it has exited). */
async function processRssMiB(pid: number): Promise<number | null> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => null);
  const kb = status === null ? null : /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  return kb === undefined || kb === null ? null : Math.round(Number(kb) / 1024);
}
