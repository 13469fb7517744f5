/**
 * Status numbers of a Percolator's background version GC (`db.gcTotals`, `db.gcBacklogCells`):
 * whether the passes keep up with a workload, which one pass's figures do not say. A worker that
 * runs for months collects old versions with targeted passes (the rows it committed to) and
 * full ones (every row); falling behind shows as the backlog growing to its bound and full passes
 * coming back to back (docs/transactions.md › *Long-running processes*).
 *
 * Keys follow StatusSample's labelled form, so /metrics gives `percolator_gc_passes_total{kind}`,
 * `percolator_gc_passes_failed_total{kind}`, `percolator_gc_pass_seconds_total{kind}`,
 * `percolator_gc_versions_removed_total{kind}` (kind `recent` or `full`) and the gauge
 * `percolator_gc_backlog_cells`. A Percolator with background GC off has none of them.
 */
import type { Percolator } from '../txn/percolator.js';
import type { ChartSpec, StatusSample } from './types.js';

const KINDS = ['recent', 'full'] as const;

/** The counters and gauges of `db`'s background GC, to merge into a sample; empty while it is off. */
export function gcSample(db: Percolator): Required<Pick<StatusSample, 'counters' | 'gauges'>> {
  if (!gcCharted(db)) return { counters: {}, gauges: {} };
  const counters: Record<string, number> = {};
  // One family after another: the exposition format wants a family's series together.
  for (const k of KINDS) counters[`gcPasses{kind=${k}}`] = db.gcTotals[k].passes;
  for (const k of KINDS) counters[`gcPassesFailed{kind=${k}}`] = db.gcTotals[k].failed;
  for (const k of KINDS) counters[`gcPassSeconds{kind=${k}}`] = db.gcTotals[k].ms / 1000;
  for (const k of KINDS) counters[`gcVersionsRemoved{kind=${k}}`] = db.gcTotals[k].versionsRemoved;
  return { counters, gauges: { gcBacklogCells: db.gcBacklogCells } };
}

/** Whether `db` runs background GC passes, whose charts a page then shows. */
export function gcCharted(db: Percolator): boolean {
  return db.gcIntervalMs > 0;
}

export const GC_CHARTS: readonly ChartSpec[] = [
  {
    title: 'Versions collected by background GC',
    unit: '/s',
    series: [
      { key: 'counters.gcVersionsRemoved{kind=recent}', label: 'targeted passes' },
      { key: 'counters.gcVersionsRemoved{kind=full}', label: 'full passes' },
    ],
  },
  {
    title: 'Background GC backlog: columns awaiting a targeted pass',
    series: [{ key: 'gauges.gcBacklogCells', label: 'backlog' }],
  },
];
