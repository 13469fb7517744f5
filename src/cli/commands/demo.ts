/**
 * `percolator demo [--corpus local|synthetic] [--docs N] [--data DIR] [--json] [--serve] [--force]` —
 * what `npm start` runs: the incremental web indexer of the Percolator paper on a real corpus (the
 * documentation inside this project's node_modules) or a synthetic one shaped like the paper's
 * benchmark. Loads the corpus with concurrent loader transactions while observers parse, cluster
 * duplicates, invert links and export to a searchable index; shows progress, then a summary and
 * a few searches. `--serve` keeps a live status page (and a search page) up until Ctrl-C.
 *
 * Invariants: nothing in --data is touched before every check passed — the corpus is found, the
 * status page's port is bound (LISTEN_FAILED otherwise), and the store there holds a web index or
 * nothing (NOT_A_WEB_INDEX otherwise, unless --force; apps/webindex/clean-start.ts). The status
 * page's default port is none of `percolator serve`'s defaults (8086–8088), so both can run.
 */
import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import type { CorpusName, Progress, RunHandle, RunSummary } from '../../apps/webindex/run.js';
import { type SearchResult, search } from '../../apps/webindex/search.js';
import { DEFAULT_STORE_URL } from '../../store/open-store.js';
import type { StatusServer } from '../../status/server.js';
import { type CorpusOptions, addCorpusOptions } from '../corpus-options.js';
import { cliCommand, shellWord } from '../invocation.js';
import { parsePortNumber, parsePositiveInteger } from '../parent-command.js';
import { UsageError } from '../usage-error.js';

/** The status page's default port: clear of `percolator serve`'s gRPC, HTTP and oracle defaults (8086, 8087, 8088). */
export const DEMO_STATUS_PORT = 8090;
const STATUS_HOST = '127.0.0.1';

interface DemoOptions extends CorpusOptions {
  data: string;
  json?: boolean;
  serve?: boolean;
  port: number;
  keep?: boolean;
  force?: boolean;
  threads: number;
}

const QUERIES: Record<CorpusName, string[]> = {
  local: ['mit license', 'stream', 'command line', 'protocol buffers', 'leveldb'],
  synthetic: [],
};

/** The progress display: a bar on a terminal, a line every few seconds otherwise, nothing with --json. */
function progressReporter(json: boolean): { update(p: Progress): void; stop(): void } {
  if (json) return { update: () => undefined, stop: () => undefined };
  const fmt = (p: Progress) =>
    `${p.indexed}/${p.total} indexed · ${p.loaded} loaded · ${p.processed} processed · ${p.pending} notifications pending · ${Math.round(p.indexed / Math.max(0.001, p.elapsedMs / 1000))} docs/s`;
  if (!process.stderr.isTTY) {
    let last = 0;
    return {
      update(p) {
        if (p.elapsedMs - last < 5_000) return;
        last = p.elapsedMs;
        process.stderr.write(`percolator demo: ${fmt(p)}\n`);
      },
      stop: () => undefined,
    };
  }
  const bar = new SingleBar({
    stream: process.stderr,
    format:
      ' indexing |{bar}| {percentage}% · {value}/{total} indexed · {loaded} loaded · {processed} processed · {pending} pending · {rate} docs/s',
    barsize: 28,
    hideCursor: true,
    clearOnComplete: false,
  });
  let started = false;
  return {
    update(p) {
      const payload = {
        loaded: p.loaded,
        processed: p.processed,
        pending: p.pending,
        rate: Math.round(p.indexed / Math.max(0.001, p.elapsedMs / 1000)),
      };
      if (!started) {
        bar.start(p.total, p.indexed, payload);
        started = true;
      } else bar.update(p.indexed, payload);
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}

function printSummary(s: RunSummary, searches: SearchResult[], totalMs: number, serving: StatusServer | null): void {
  const out: string[] = [];
  const n = (x: number) => x.toLocaleString('en-US');
  const corpus = s.corpus === 'local' ? 'local corpus (documentation under node_modules)' : 'synthetic corpus (three clustering keys)';
  out.push('', `Percolator web index — ${corpus}, ${s.store}`);
  const row = (k: string, v: string) => out.push(`  ${k.padEnd(26)} ${v}`);
  row('documents', n(s.documents));
  row('clusters', `${n(s.clusters)}  (${n(s.duplicateClusters)} with duplicates)`);
  row('duplicates found', n(s.duplicatesFound));
  row('links inverted', `${n(s.linksInverted)}  (${n(s.linksBetweenDocuments)} between documents of the corpus)`);
  row('postings', `${n(s.postings)}  (and ${n(s.stalePostings)} stale, kept for terms their cluster no longer has)`);
  row('documents/s', `${n(s.documentsPerSecond)}  (${n(s.loaded)} loaded and indexed in ${(s.loadAndProcessMs / 1000).toFixed(1)} s)`);
  row('crawl-to-index latency', `median ${n(s.medianLatencyMs)} ms, p99 ${n(s.p99LatencyMs)} ms`);
  row('observer transactions', `${n(s.observerCommits)} commits, ${n(s.conflicts)} conflicts retried`);
  out.push('', 'Example searches:');
  for (const r of searches) {
    out.push(`  "${r.query}" — ${n(r.total)} result${r.total === 1 ? '' : 's'} (${r.tookMs.toFixed(1)} ms)`);
    r.hits.slice(0, 3).forEach((h, i) => {
      const extra = [
        h.size > 1 ? `${h.size - 1} duplicate${h.size === 2 ? '' : 's'}` : null,
        h.latencyMs !== null ? `indexed ${n(h.latencyMs)} ms after crawl` : null,
      ].filter((x) => x !== null);
      out.push(`    ${i + 1}. ${h.title}`, `       ${h.url}${extra.length > 0 ? `  (${extra.join('; ')})` : ''}`);
    });
  }
  const done = `Done in ${(totalMs / 1000).toFixed(1)} s.`;
  // While this process serves, it holds the store: a `percolator search` would get STORE_LOCKED.
  if (serving !== null) out.push('', `${done} Search it at ${serving.url}search  ·  status page: ${serving.url}  (Ctrl-C to stop)`);
  else out.push('', `${done} Search it again: ${cliCommand()} search "<query>" --data ${shellWord(s.store.replace(/^file:/, ''))}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

async function exampleSearches(handle: RunHandle, corpus: CorpusName, seed: number): Promise<SearchResult[]> {
  const snap = await handle.db.snapshot();
  try {
    let queries = QUERIES[corpus];
    if (corpus === 'synthetic') {
      const { SyntheticCorpus } = await import('../../apps/webindex/corpus/synthetic.js');
      const c = new SyntheticCorpus({ docs: 10, seed });
      queries = [`topic${c.clusterOfDoc(0)}`, c.title(0).split(' ')[0]?.toLowerCase() ?? 'topic0'];
    }
    const results: SearchResult[] = [];
    for (const q of queries) {
      const r = await search(snap, q, 3);
      if (r.total > 0) results.push(r);
      if (results.length >= 3) break;
    }
    return results;
  } finally {
    snap.release();
  }
}

export function register(program: Command): void {
  addCorpusOptions(
    program
      .command('demo')
      .description('the incremental web indexer of the Percolator paper: load a corpus, cluster duplicates, invert links, search'),
    'local',
  )
    .option(
      '--data <dir>',
      'data directory (its store is removed first unless --keep; refused: a directory holding other files, a store holding other tables unless --force)',
      DEFAULT_STORE_URL.slice('file:'.length),
    )
    .option('--json', 'print one JSON object')
    .option('--serve', 'serve a live status page while indexing, and keep serving until Ctrl-C')
    .option('--port <port>', 'status page port (with --serve; 0 = pick one)', parsePortNumber('port', 0), DEMO_STATUS_PORT)
    .option('--keep', 'keep existing data (re-crawl into it) instead of starting clean')
    .option('--force', "start clean even over a store holding tables that are not a web index's (they are removed)")
    .option('--threads <n>', 'concurrent observer runs', parsePositiveInteger('threads'), 16)
    .action(async (opts: DemoOptions) => {
      const t0 = performance.now();
      // --force only widens what a clean start may remove, and --keep removes nothing: together one was silently unused.
      if (opts.keep === true && opts.force === true) throw new UsageError('--keep keeps the store and --force removes it: give one');
      const corpus = opts.corpus;
      const [{ runWebIndex }, { webIndexStatusPage }, { startStatusServer }] = await Promise.all([
        import('../../apps/webindex/run.js'),
        import('../../apps/webindex/status.js'),
        import('../../status/server.js'),
      ]);
      // The port first: a port in use fails the demo before it touches the store.
      const page = opts.serve === true ? webIndexStatusPage() : null;
      const serving: StatusServer | null =
        page === null ? null : await startStatusServer({ port: opts.port, host: STATUS_HOST, sources: page.sources });
      if (serving !== null && opts.json !== true) process.stderr.write(`percolator demo: status page at ${serving.url}\n`);
      let handle: RunHandle | null = null;
      try {
        const progress = progressReporter(opts.json === true);
        handle = await runWebIndex({
          corpus,
          docs: opts.docs,
          seed: opts.seed,
          store: `file:${opts.data}`,
          keep: opts.keep === true,
          force: opts.force === true,
          threads: opts.threads,
          onProgress: (p) => progress.update(p),
          onStarted: ({ db, worker, metrics }) => page?.attach(db, worker, metrics),
        }).finally(() => progress.stop());
        const searches = await exampleSearches(handle, corpus, opts.seed);
        page?.setExamples(searches.map((r) => r.query));
        const s = handle.summary;
        // Listening for Ctrl-C (to stop serving) before the summary says to press it; not earlier,
        // so that Ctrl-C during the run stops the process at once.
        const stop =
          serving === null
            ? null
            : new Promise<void>((done) => {
                process.once('SIGINT', done);
                process.once('SIGTERM', done);
              });
        if (opts.json === true) {
          const { documents, duplicatesFound, linksInverted, documentsPerSecond, medianLatencyMs, p99LatencyMs, ...rest } = s;
          process.stdout.write(
            `${JSON.stringify({
              documents,
              duplicatesFound,
              linksInverted,
              documentsPerSecond,
              medianLatencyMs,
              p99LatencyMs,
              ...rest,
              totalMs: Math.round(performance.now() - t0),
              statusUrl: serving?.url ?? null,
              searches: searches.map((r) => ({
                query: r.query,
                total: r.total,
                hits: r.hits.map((h) => ({ url: h.url, title: h.title, latencyMs: h.latencyMs, size: h.size })),
              })),
            })}\n`,
          );
        } else printSummary(s, searches, performance.now() - t0, serving);
        await stop;
      } finally {
        await serving?.close();
        await handle?.close();
      }
    });
}
