/**
 * Status sources for a Percolator process: transaction and observer activity of its workers,
 * oracle rate, and notifications pending — the numbers `percolator serve` and the demo show.
 * Callers may merge in their own counters (the web index adds documents loaded and indexed).
 * A process holding an embedded store also shows its row caches (store-cache-sources.ts), and one
 * running background GC its passes (gc-sources.ts): the numbers in each sample, the charts in
 * `percolatorCharts(db)`.
 *
 * Counting notifications pending scans the notify locality group, so it is refreshed at most
 * every `pendingEveryMs` and never twice at once.
 */
import type { Worker } from '../notify/worker.js';
import { atomicRowsOf } from '../store/store.js';
import type { Percolator } from '../txn/percolator.js';
import { GC_CHARTS, gcCharted, gcSample } from './gc-sources.js';
import { ROW_LOOKUPS_CHART, storeCacheSample } from './store-cache-sources.js';
import type { ChartSpec, HeadlineSpec, StatusSample } from './types.js';

export interface PercolatorSourceOptions {
  /** Workers whose metrics are summed. */
  readonly workers?: () => readonly Worker[];
  /** Minimum interval between notification counts (ms). Default 1 000. */
  readonly pendingEveryMs?: number;
}

/** Returns a sampler of `db` (and its workers) for startStatusServer. */
export function percolatorSampler(db: Percolator, options: PercolatorSourceOptions = {}): () => Promise<StatusSample> {
  let pending: number | null = null;
  let pendingAt = 0;
  let counting: Promise<void> | null = null;
  const every = options.pendingEveryMs ?? 1_000;
  const rows = atomicRowsOf(db.store);
  return async () => {
    if (counting === null && Date.now() - pendingAt >= every) {
      counting = db
        .pendingNotifications()
        .then((n) => {
          pending = n;
        })
        .catch(() => undefined)
        .finally(() => {
          pendingAt = Date.now();
          counting = null;
        });
    }
    if (pending === null && counting !== null) await counting;
    const counters: Record<string, number> = { commits: 0, conflicts: 0, observerFailures: 0 };
    const observers: Record<string, { runs: number; totalMs: number }> = {};
    for (const w of options.workers?.() ?? []) {
      counters.commits = (counters.commits ?? 0) + w.metrics.commits;
      counters.conflicts = (counters.conflicts ?? 0) + w.metrics.conflicts;
      counters.observerFailures = (counters.observerFailures ?? 0) + w.metrics.failures;
      for (const [name, o] of Object.entries(w.metrics.observerMs)) {
        const acc = (observers[name] ??= { runs: 0, totalMs: 0 });
        acc.runs += o.runs;
        acc.totalMs += o.totalMs;
      }
    }
    const stats = (db.oracle as { stats?: () => { handedOut?: number } }).stats?.();
    if (typeof stats?.handedOut === 'number') counters.timestamps = stats.handedOut;
    const cache = rows === null ? null : storeCacheSample(rows.cacheStats());
    const gc = gcSample(db);
    return {
      counters: { ...counters, ...cache?.counters, ...gc.counters },
      gauges: { notificationsPending: pending, ...cache?.gauges, ...gc.gauges },
      observers,
    };
  };
}

export const PERCOLATOR_CHARTS: readonly ChartSpec[] = [
  {
    title: 'Observer transactions',
    unit: '/s',
    series: [
      { key: 'counters.commits', label: 'commits' },
      { key: 'counters.conflicts', label: 'conflicts' },
      { key: 'counters.observerFailures', label: 'failures' },
    ],
  },
  { title: 'Notifications pending', series: [{ key: 'gauges.notificationsPending', label: 'pending' }] },
  { title: 'Observer latency (mean per second)', unit: 'ms', series: [{ key: 'observers.*' }] },
  { title: 'Timestamp oracle', unit: 'timestamps/s', series: [{ key: 'counters.timestamps', label: 'timestamps' }] },
];

/**
 * PERCOLATOR_CHARTS, then the row lookups' chart if `db`'s store is embedded (has row caches), and
 * the background GC's if it runs passes.
 */
export function percolatorCharts(db: Percolator): readonly ChartSpec[] {
  return [...PERCOLATOR_CHARTS, ...(atomicRowsOf(db.store) === null ? [] : [ROW_LOOKUPS_CHART]), ...(gcCharted(db) ? GC_CHARTS : [])];
}

export const PERCOLATOR_HEADLINE: readonly HeadlineSpec[] = [
  { key: 'counters.commits', label: 'Observer commits / s' },
  { key: 'counters.conflicts', label: 'Conflicts / s' },
  { key: 'gauges.notificationsPending', label: 'Notifications pending' },
  { key: 'counters.timestamps', label: 'Oracle timestamps / s' },
];
