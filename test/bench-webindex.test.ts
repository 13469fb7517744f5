/** `bench webindex` end to end on a small corpus: both phases, and the saturation phase's ratios. */
import { availableParallelism } from 'node:os';
import { expect, it } from 'vitest';
import { runWebIndexBench } from '../src/bench/webindex-bench.js';

it('indexes every document of both phases, without anomalies, and says how busy the JS thread was', async () => {
  const r = await runWebIndexBench({ docs: 300, store: 'memory:', lightDocs: 20, lightRate: 100 });
  expect(r.documents).toBe(300);
  expect(r.anomalies).toEqual([]);
  expect(r.documentsPerSecond).toBeGreaterThan(0);
  expect(r.lightLoad?.documents).toBe(20);
  expect(r.medianLatencyMs).toBe(r.lightLoad?.medianLatencyMs);
  // Saturation keeps the JS thread busy; a memory: store does no I/O for it to wait on.
  expect(r.saturation.eventLoopUtilization).toBeGreaterThan(0.3);
  expect(r.saturation.eventLoopUtilization).toBeLessThanOrEqual(1);
  expect(r.saturation.cpuCores).toBeGreaterThan(0.3);
  expect(r.saturation.cpuCores).toBeLessThanOrEqual(availableParallelism() + 0.5);
}, 120_000);
