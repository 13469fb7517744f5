/**
 * The web index's live status page sources: Percolator's own numbers (transactions, conflicts,
 * notifications pending, per-observer latency, oracle rate) plus document throughput and
 * crawl-to-index latency, and search over the serving index.
 *
 * `webIndexStatusPage` gives the same sources before the index is open, so a page can take its
 * port first (`percolator demo --serve` fails on a port in use before it touches its store): until
 * `attach`, samples are empty and searches fail with a message saying the index is being set up.
 */
import type { Worker } from '../../notify/worker.js';
import { PERCOLATOR_CHARTS, percolatorCharts, percolatorSampler } from '../../status/percolator-sources.js';
import type { ChartSpec, HeadlineSpec, StatusSample, StatusSources } from '../../status/types.js';
import type { Percolator } from '../../txn/percolator.js';
import type { WebIndexMetrics } from './metrics.js';
import { search } from './search.js';

const HEADLINE: readonly HeadlineSpec[] = [
  { key: 'counters.documentsIndexed', label: 'Documents indexed', total: true },
  { key: 'counters.documentsIndexed', label: 'Indexed / s' },
  { key: 'gauges.notificationsPending', label: 'Notifications pending' },
  { key: 'counters.conflicts', label: 'Conflicts / s' },
  { key: 'gauges.latencyMedianMs', label: 'Crawl → index median', unit: 'ms' },
  { key: 'gauges.latencyP99Ms', label: 'Crawl → index p99', unit: 'ms' },
  { key: 'counters.timestamps', label: 'Oracle timestamps / s' },
];

/** The web index's own charts, before Percolator's. */
const OWN_CHARTS: readonly ChartSpec[] = [
  {
    title: 'Document throughput',
    unit: 'documents/s',
    series: [
      { key: 'counters.documentsLoaded', label: 'loaded' },
      { key: 'counters.documentsIndexed', label: 'indexed' },
    ],
  },
  {
    title: 'Crawl-to-index latency (recent documents)',
    unit: 'ms',
    series: [
      { key: 'gauges.latencyMedianMs', label: 'median' },
      { key: 'gauges.latencyP99Ms', label: 'p99' },
    ],
  },
];

export function webIndexStatusSources(
  db: Percolator,
  worker: Worker,
  metrics: WebIndexMetrics,
  title = 'Percolator web index',
  pendingEveryMs?: number,
): StatusSources {
  const base = percolatorSampler(db, { workers: () => [worker], ...(pendingEveryMs === undefined ? {} : { pendingEveryMs }) });
  return {
    title,
    async sample() {
      const s = await base();
      const p = metrics.latencyPercentiles();
      return {
        counters: { documentsLoaded: metrics.loaded, documentsIndexed: metrics.indexed, ...s.counters },
        gauges: { ...s.gauges, latencyMedianMs: p?.medianMs ?? null, latencyP99Ms: p?.p99Ms ?? null },
        observers: s.observers,
      };
    },
    headline: HEADLINE,
    charts: [...OWN_CHARTS, ...percolatorCharts(db)],
    async search(query, limit) {
      const snap = await db.snapshot();
      try {
        return await search(snap, query, limit);
      } finally {
        snap.release();
      }
    },
  };
}

/**
 * The sources of `webIndexStatusSources`, usable before the index is open; `attach` connects them
 * to it, and `setExamples` gives the search page queries to offer (ones known to find something).
 */
export function webIndexStatusPage(
  title = 'Percolator web index',
  /** How often the page counts the pending notifications (a scan of the store); default percolatorSampler's. */
  pendingEveryMs?: number,
): {
  readonly sources: StatusSources;
  attach(db: Percolator, worker: Worker, metrics: WebIndexMetrics): void;
  setExamples(queries: readonly string[]): void;
} {
  let live: StatusSources | null = null;
  let examples: readonly string[] = [];
  return {
    sources: {
      title,
      sample: (): StatusSample | Promise<StatusSample> => live?.sample() ?? {},
      headline: HEADLINE,
      // Until attached, Percolator's charts without the row caches' and GC's: whether they apply is known then.
      get charts() {
        return live?.charts ?? [...OWN_CHARTS, ...PERCOLATOR_CHARTS];
      },
      search: (query, limit) =>
        live?.search?.(query, limit) ?? Promise.reject(new Error('the web index is being set up: search again in a moment')),
      searchExamples: () => examples,
    },
    attach(db, worker, metrics) {
      live = webIndexStatusSources(db, worker, metrics, title, pendingEveryMs);
    },
    setExamples(queries) {
      examples = [...queries];
    },
  };
}
