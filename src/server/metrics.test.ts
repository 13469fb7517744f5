/**
 * The server's metrics registry: its own metrics, and the process's default metrics made once and
 * shared by every server in the process (metrics.ts says why).
 */
import { expect, it } from 'vitest';
import { ServerMetrics } from './metrics.js';

it("shows the process's default metrics beside its own, collected once however many servers start", async () => {
  const a = new ServerMetrics();
  const b = new ServerMetrics();
  a.addRowsWritten(3);
  const text = await a.registry.metrics();
  expect(text).toMatch(/^percolator_rows_written_total 3$/m);
  expect(text).toMatch(/^percolator_process_cpu_user_seconds_total /m);
  // One collector (a GC observer, an event-loop monitor) for both: each start made its own, never stopped.
  const gc = 'percolator_nodejs_gc_duration_seconds';
  expect(a.registry.getSingleMetric(gc)).toBeDefined();
  expect(b.registry.getSingleMetric(gc)).toBe(a.registry.getSingleMetric(gc));
  // A server's own metrics stay its own.
  expect(await b.registry.getSingleMetric('percolator_rows_written_total')?.get()).toMatchObject({ values: [{ value: 0 }] });
  expect(await new ServerMetrics({}, false).registry.metrics()).not.toMatch(/percolator_process_/);
});
