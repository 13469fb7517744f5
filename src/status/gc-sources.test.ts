import { afterEach, expect, it } from 'vitest';
import { Percolator } from '../txn/percolator.js';
import { GC_CHARTS, gcSample } from './gc-sources.js';
import { percolatorCharts } from './percolator-sources.js';
import { prometheusText } from './server.js';

let db: Percolator | null = null;
afterEach(async () => {
  await db?.close();
  db = null;
});

it('a Percolator without background GC has no GC numbers and no GC charts', async () => {
  db = await Percolator.open({ store: 'memory:', gcIntervalMs: 0 });
  expect(gcSample(db)).toEqual({ counters: {}, gauges: {} });
  expect(percolatorCharts(db).filter((c) => GC_CHARTS.includes(c))).toEqual([]);
});

it('reports the background passes as db.gcTotals counts them, under one family per number, labelled by kind', async () => {
  db = await Percolator.open({ store: 'memory:', gcIntervalMs: 20 });
  const p = db;
  await p.createTable('t');
  // Versions to collect: a column overwritten, then the targeted passes' ticks.
  for (let i = 0; i < 5; i++) await p.transaction(async (tx) => tx.set('t', 'r', 'f:c', String(i)));
  await expect.poll(() => p.gcTotals.recent.versionsRemoved, { timeout: 10_000, interval: 20 }).toBeGreaterThan(0);
  const s = gcSample(p);
  const t = p.gcTotals;
  expect(s.counters).toEqual({
    'gcPasses{kind=recent}': t.recent.passes,
    'gcPasses{kind=full}': t.full.passes,
    'gcPassesFailed{kind=recent}': t.recent.failed,
    'gcPassesFailed{kind=full}': t.full.failed,
    'gcPassSeconds{kind=recent}': t.recent.ms / 1000,
    'gcPassSeconds{kind=full}': t.full.ms / 1000,
    'gcVersionsRemoved{kind=recent}': t.recent.versionsRemoved,
    'gcVersionsRemoved{kind=full}': t.full.versionsRemoved,
  });
  expect(s.gauges).toEqual({ gcBacklogCells: p.gcBacklogCells });
  const text = prometheusText(s);
  expect(text).toMatch(/^percolator_gc_versions_removed_total\{kind="recent"\} [1-9]\d*$/m);
  expect(text).toMatch(/^percolator_gc_backlog_cells \d+$/m);
  // One TYPE line a family, before its series.
  const types = text.split('\n').filter((l) => l.startsWith('# TYPE '));
  expect(types).toEqual([
    '# TYPE percolator_gc_passes_total counter',
    '# TYPE percolator_gc_passes_failed_total counter',
    '# TYPE percolator_gc_pass_seconds_total counter',
    '# TYPE percolator_gc_versions_removed_total counter',
    '# TYPE percolator_gc_backlog_cells gauge',
  ]);
  for (const c of GC_CHARTS) expect(percolatorCharts(p)).toContain(c);
});
