/** `bench overhead` (Figure 8) measures both sides on one backend and plots them. */
import { expect, it } from 'vitest';
import { overheadSvg, runOverheadBench } from '../src/bench/overhead-bench.js';
import { checkSvg } from '../src/bench/svg-plot.js';

it('measures raw and transactional reads and writes, reports their ratios, and draws Figure 8', async () => {
  const r = await runOverheadBench({ seconds: 0.3, clients: 4, store: 'memory:' });
  for (const v of [r.rawReadsPerSecond, r.txnReadsPerSecond, r.rawWritesPerSecond, r.txnWritesPerSecond]) expect(v).toBeGreaterThan(0);
  expect(r.readRatio).toBeCloseTo(r.txnReadsPerSecond / r.rawReadsPerSecond, 2);
  expect(r.writeRatio).toBeCloseTo(r.txnWritesPerSecond / r.rawWritesPerSecond, 2);
  // memory: is an unshared embedded store: transactions commit in one phase (one atomic row write,
  // which noise can put at par with a raw write). A two-phase transaction costs at least the two
  // row writes it makes (prewrite, commit).
  expect(r.protocol).toBe('one-phase');
  expect(r.writeRatioTwoPhase).toBeCloseTo(r.txnWritesPerSecondTwoPhase / r.rawWritesPerSecond, 2);
  expect(r.writeRatioTwoPhase).toBeLessThan(1);
  const svg = overheadSvg(r);
  expect(checkSvg(svg)).toEqual([]);
  expect(svg).toContain('raw store');
  expect(svg).toContain('Percolator');
}, 30_000);
