/** `bench overhead` (Figure 8) measures both sides on one backend and plots them. */
import { expect, it } from 'vitest';
import { overheadSvg, runOverheadBench } from '../src/bench/overhead-bench.js';
import { checkSvg } from '../src/bench/svg-plot.js';

it('measures raw and transactional reads and writes, reports their ratios, and draws Figure 8', async () => {
  const r = await runOverheadBench({ seconds: 0.3, clients: 4, store: 'memory:' });
  for (const v of [r.rawReadsPerSecond, r.txnReadsPerSecond, r.rawWritesPerSecond, r.txnWritesPerSecond]) expect(v).toBeGreaterThan(0);
  expect(r.readRatio).toBeCloseTo(r.txnReadsPerSecond / r.rawReadsPerSecond, 2);
  expect(r.writeRatio).toBeCloseTo(r.txnWritesPerSecond / r.rawWritesPerSecond, 2);
  // A transaction costs at least the store writes it makes (two row writes per single-cell txn).
  expect(r.writeRatio).toBeLessThan(1);
  const svg = overheadSvg(r);
  expect(checkSvg(svg)).toEqual([]);
  expect(svg).toContain('raw store');
  expect(svg).toContain('Percolator');
}, 30_000);
