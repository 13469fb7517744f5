/**
 * `percolator worker --observers FILE | --app webindex [--key-mode M] [--store URL] [--threads N]
 * [--full-gc-interval S] [--row-cache-mib N] [--block-cache-mib N]`: loads a user module that
 * registers observers — or runs the web index's own (`--app webindex`: the paper's application,
 * fed by `percolator load`) — until SIGTERM/SIGINT, then stops gracefully (running observer
 * transactions finish; queued work stays notified for the next worker).
 *
 * The module exports (default or named `register`) a function `(worker, db) => void | Promise<void>`
 * that calls `worker.observe(column, name, fn)`; it may also create tables through `db`. A `file:`
 * store must already exist (NOT_A_STORE otherwise): the worker processes what others write there.
 * A module that fails to load is one line, INVALID_OBSERVERS_MODULE, with where to look: the
 * `file:line:column` of a syntax error (in the module or one it imports), or of a throw at load.
 * `--app webindex` pins its `--key-mode` in the store, or exits with KEY_MODE_MISMATCH before
 * registering anything when an earlier worker pinned another (apps/webindex/pin-key-mode.ts).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Command, Option } from 'commander';
import { DEFAULT_REMOTE_THREADS, DEFAULT_THREADS, defaultThreadsFor } from '../../apps/webindex/defaults.js';
import { KEY_MODES, type KeyMode } from '../../apps/webindex/key-mode.js';
import type { WebIndexMetrics } from '../../apps/webindex/metrics.js';
import type { Worker } from '../../notify/worker.js';
import type { WorkerStatusPage } from '../../status/worker-status.js';
import { StoreError, isStoreError } from '../../store/errors.js';
import { DEFAULT_STORE_URL } from '../../store/open-store.js';
import { type CacheFlags, addCacheOptions, withCacheOptions } from '../cache-options.js';
import { Percolator } from '../percolator-on-demand.js';
import { parseNonNegativeInteger, parsePortNumber, parsePositiveInteger } from '../parent-command.js';
import { locateSyntaxError } from '../syntax-error-location.js';
import { UsageError } from '../usage-error.js';

/**
 * A worker runs for hours or months: besides the targeted passes over its own recent commits, it
 * runs full GC passes (every 10 minutes, sooner once the targeted set forgets), which collect what
 * those leave — versions superseded long after they were written, other processes' versions,
 * rollback records, abandoned locks. Without them a store under a steady crawl grows with its
 * history (`bench soak`, BENCHMARKS.md).
 */
export const FULL_GC_INTERVAL_S = 600;

export type RegisterObservers = (worker: Worker, db: Percolator) => void | Promise<void>;

/** A module's registration, or a built-in application's with the worker options it needs. */
type Registration = ((worker: Worker, db: Percolator) => Promise<void>) & {
  readonly workerOptions?: WorkerOptionsOf;
  /** An application's own status page (--http-port), asked for before the registration runs. */
  readonly statusPage?: (title: string) => Promise<WorkerStatusPage>;
};
type WorkerOptionsOf = Parameters<Percolator['worker']>[0];

/** Observer runs at once for a user's module unless told. */
const MODULE_THREADS = 4;

interface WorkerOptions extends CacheFlags {
  observers?: string;
  app?: 'webindex';
  keyMode: KeyMode;
  store: string;
  threads?: number;
  fullGcInterval: number;
  httpPort?: number;
}

/**
 * The web index's observers, as `percolator demo` runs them in one process: its tables created
 * if missing, and the worker options its link relay needs (WEB_INDEX_WORKER).
 */
async function webIndexApp(keyMode: KeyMode): Promise<Registration> {
  const [{ WEB_INDEX_WORKER, createWebIndexTables, registerWebIndex }, { pinKeyMode }] = await Promise.all([
    import('../../apps/webindex/pipeline.js'),
    import('../../apps/webindex/pin-key-mode.js'),
  ]);
  // Only for a status page: documents indexed and their crawl-to-index latency, as the demo shows.
  let metrics: WebIndexMetrics | undefined;
  const register = async (worker: Worker, db: Percolator): Promise<void> => {
    await createWebIndexTables(db);
    // Every worker of one index must cluster by the same keys: the first pins them.
    await pinKeyMode(db, keyMode, (pinned) => `give this worker --key-mode ${pinned}, or index into a store of its own`);
    registerWebIndex(worker, { keyMode, metrics });
  };
  const statusPage = async (title: string): Promise<WorkerStatusPage> => {
    const [{ WebIndexMetrics: Metrics }, { webIndexStatusPage }, { PENDING_EVERY_MS }] = await Promise.all([
      import('../../apps/webindex/metrics.js'),
      import('../../apps/webindex/status.js'),
      import('../../status/worker-status.js'),
    ]);
    const m = (metrics = new Metrics());
    const page = webIndexStatusPage(title, PENDING_EVERY_MS);
    return { sources: page.sources, attach: (db, worker) => page.attach(db, worker, m) };
  };
  return Object.assign(register, { workerOptions: { ...WEB_INDEX_WORKER }, statusPage });
}

/**
 * The worker's status page (an application's own, or the generic one), serving — empty until
 * attached — from before the store is opened.
 */
async function statusPage(title: string, port: number, own?: (title: string) => Promise<WorkerStatusPage>) {
  const [{ workerStatusPage }, { startStatusServer }] = await Promise.all([
    import('../../status/worker-status.js'),
    import('../../status/server.js'),
  ]);
  const page = own === undefined ? workerStatusPage(title) : await own(title);
  return { page, server: await startStatusServer({ port, host: '127.0.0.1', sources: page.sources }) };
}

function invalidModule(message: string): Error {
  return Object.assign(new Error(message), { code: 'INVALID_OBSERVERS_MODULE' });
}

/** The first place in the user's module an error names (`file:line:col`), if any: where to look. */
function whereIn(url: string, e: unknown): string {
  const line = (e instanceof Error ? (e.stack ?? '') : '').split('\n').find((l) => l.includes(url));
  const at = line?.match(/file:\/\/[^\s)]+/)?.[0];
  return at === undefined ? '' : ` (at ${at.replace('file://', '')})`;
}

export async function loadObservers(file: string): Promise<Registration> {
  const url = pathToFileURL(resolve(file)).href;
  let mod: { default?: unknown; register?: unknown };
  try {
    mod = (await import(url)) as typeof mod;
  } catch (e) {
    // A missing file, a syntax error, a throw at load: the user's to fix, not a bug of ours.
    // TypeScript: Node's message names the extension, not what to do about it.
    const ts = /\.[cm]?ts$/i.test(file) && (e as { code?: unknown } | null)?.code === 'ERR_UNKNOWN_FILE_EXTENSION';
    const todo = ts ? ': compile it to JavaScript (tsc) and give the .js file' : '';
    // A syntax error's location is not in its stack, where whereIn looks (syntax-error-location.ts).
    const syntax = await locateSyntaxError(url, e);
    const where = syntax === null ? whereIn(url, e) : ` (at ${syntax})`;
    throw invalidModule(`${file} failed to load: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}${where}${todo}`);
  }
  const fn = typeof mod.register === 'function' ? mod.register : mod.default;
  if (typeof fn !== 'function') {
    throw invalidModule(`${file} must export a function (default or named "register") that registers observers`);
  }
  return async (worker, db) => {
    try {
      await (fn as RegisterObservers)(worker, db);
    } catch (e) {
      // A typed error (an observer option out of range, a name used twice) says it all already.
      if (typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'string') throw e;
      throw invalidModule(`${file}: registering its observers failed: ${e instanceof Error ? e.message : String(e)}${whereIn(url, e)}`);
    }
  };
}

export function register(program: Command): void {
  const command = program
    .command('worker')
    .description("run the observers of a module (or the web index's: --app webindex) until SIGTERM")
    .option('--observers <file>', 'ES module exporting register(worker, db) (named "register", or default): calls worker.observe(...)')
    .addOption(
      new Option('--app <name>', "a built-in application's observers instead of a module").choices(['webindex']).conflicts('observers'),
    )
    .addOption(
      new Option('--key-mode <mode>', 'with --app webindex: the clustering keys (percolator load prints the one its corpus needs)')
        .choices(KEY_MODES)
        .default('content+url+title'),
    )
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option(
      '--threads <n>',
      `concurrent observer runs (default: ${MODULE_THREADS}; with --app webindex, the web index's: ${DEFAULT_REMOTE_THREADS} over bigtable://, ${DEFAULT_THREADS} on an embedded store)`,
      parsePositiveInteger('threads'),
    )
    .option(
      '--full-gc-interval <s>',
      'full version GC passes at most every S seconds (0: off; run them in one worker of a deployment)',
      parseNonNegativeInteger('full-gc-interval'),
      FULL_GC_INTERVAL_S,
    )
    .option(
      '--http-port <port>',
      'serve its status page and Prometheus metrics (/metrics) on 127.0.0.1 at this port (0: pick one; default: none)',
      parsePortNumber('http-port', 0),
    );
  addCacheOptions(command).action(async (opts: WorkerOptions) => {
    if (opts.observers === undefined && opts.app === undefined) throw new UsageError('give --observers FILE or --app webindex');
    if (opts.app === undefined && opts.keyMode !== 'content+url+title') throw new UsageError('--key-mode goes with --app webindex');
    const storeOptions = withCacheOptions(opts, opts.store, { level: { create: false } });
    const registerObservers = opts.observers !== undefined ? await loadObservers(opts.observers) : await webIndexApp(opts.keyMode);
    const running = opts.observers ?? `the web index (clustering keys ${opts.keyMode})`;
    // The port before the store: a port in use fails the worker before it opens anything.
    const status =
      opts.httpPort === undefined ? null : await statusPage(`percolator worker: ${running}`, opts.httpPort, registerObservers.statusPage);
    // The store must exist (NOT_A_STORE otherwise): a worker over a mistyped directory would
    // create an empty store there and poll it forever, finding no notification.
    // A process meant to run for months: targeted passes remember enough that full passes
    // find little (docs/transactions.md › Long-running processes).
    const { LONG_RUNNING_GC_WINDOWS } = await import('../../txn/percolator.js');
    const db = await Percolator.open({
      store: opts.store,
      storeOptions,
      fullGcIntervalMs: opts.fullGcInterval * 1000,
      recentGcWindows: LONG_RUNNING_GC_WINDOWS,
      // A broken invariant or a failed GC pass is told as it happens, not only counted.
      log: (line) => process.stderr.write(`${new Date().toISOString()} percolator worker: ${line}\n`),
    }).catch((e: unknown) => {
      // "No store" alone leaves a newcomer asking how one is made; the way that also lets
      // writers and `wait` reach it while the worker runs is a server.
      if (!isStoreError(e, 'NOT_A_STORE') || e.details.absent !== true) throw e;
      throw new StoreError(
        'NOT_A_STORE',
        `${e.message}; a worker processes what others write to a store: create and serve it with percolator serve --data DIR, and give the worker its clientUrl`,
        { ...e.details },
      );
    });
    const threads = opts.threads ?? (opts.app === undefined ? MODULE_THREADS : defaultThreadsFor(opts.store));
    const worker = db.worker({ threads, ...registerObservers.workerOptions });
    await registerObservers(worker, db);
    // Listening for the signals before saying it runs, as serve does: whoever reads that line may
    // signal at once, and Node's first signal listener takes milliseconds to install — a SIGTERM
    // in between killed the worker outright, without its graceful stop (2026-12-02).
    const stopped = new Promise<void>((done) => {
      process.once('SIGTERM', () => done());
      process.once('SIGINT', () => done());
    });
    await worker.start();
    status?.page.attach(db, worker);
    const gc = opts.fullGcInterval > 0 ? `full GC passes at most every ${opts.fullGcInterval} s` : 'full GC passes off';
    const page = status === null ? '' : `; status and metrics at ${status.server.url}`;
    process.stderr.write(
      `percolator worker: running observers of ${running} on ${opts.store} with ${threads} thread${threads === 1 ? '' : 's'}, ${gc}${page}\n`,
    );
    await stopped;
    await worker.stop();
    await status?.server.close();
    await db.close();
    const m = worker.metrics;
    process.stderr.write(
      `percolator worker: stopped after ${m.commits} observer commits (${m.skipped} skipped, ${m.failures} failures, ${m.parked} parked, ${m.restarts} loops restarted, ${m.conflicts} conflicts retried)\n`,
    );
  });
}
