/**
 * The status page of a `percolator worker` process (`--http-port`): its observers' runs (each
 * observer's, as percolatorSampler gives them), commits, conflicts, failures, skips, parked rows
 * and restarted loops, the notifications pending in the store, its background GC and (on an
 * embedded store) its row caches, with /metrics for Prometheus —
 * one page per worker of a deployment, beside the store server's own (`percolator serve` ›
 * /dashboard/).
 *
 * `workerStatusPage` gives the sources before the worker exists, so that the command takes its
 * port first (a port in use fails before the store is opened); until `attach`, samples are empty.
 * Counting the pending notifications scans the store (over `bigtable://`, on the server), so a
 * worker counts them at most every PENDING_EVERY_MS, not at every sample.
 */
import type { Worker } from '../notify/worker.js';
import type { Percolator } from '../txn/percolator.js';
import { PERCOLATOR_CHARTS, PERCOLATOR_HEADLINE, percolatorCharts, percolatorSampler } from './percolator-sources.js';
import type { ChartSpec, StatusSample, StatusSources } from './types.js';

export const PENDING_EVERY_MS = 5_000;

/** A worker's status sources, and how they are connected to it once it runs. */
export interface WorkerStatusPage {
  readonly sources: StatusSources;
  attach(db: Percolator, worker: Worker): void;
}

const SKIPS: ChartSpec = {
  title: 'Runs that committed nothing',
  unit: '/s',
  series: [
    { key: 'counters.observerSkipped', label: 'skipped (already acknowledged)' },
    { key: 'counters.observerParked', label: 'parked (failed too often)' },
    { key: 'counters.loopRestarts', label: 'loops restarted' },
  ],
};

export function workerStatusPage(title: string): WorkerStatusPage {
  let live: (() => Promise<StatusSample>) | null = null;
  // The store's row caches and the background GC are charted once it is open: whether they apply is known then.
  let charts: readonly ChartSpec[] = [...PERCOLATOR_CHARTS, SKIPS];
  return {
    sources: {
      title,
      sample: () => live?.() ?? {},
      headline: PERCOLATOR_HEADLINE,
      get charts() {
        return charts;
      },
    },
    attach(db, worker) {
      charts = [...percolatorCharts(db), SKIPS];
      const base = percolatorSampler(db, { workers: () => [worker], pendingEveryMs: PENDING_EVERY_MS });
      live = async () => {
        const s = await base();
        const m = worker.metrics;
        return {
          ...s,
          counters: {
            ...s.counters,
            observerSkipped: m.skipped,
            observerParked: m.parked,
            loopRestarts: m.restarts,
          },
        };
      };
    },
  };
}
