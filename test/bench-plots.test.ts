/** The plots `bench store --svg` and `bench oracle --svg` write: well-formed, every series drawn. */
import { expect, it } from 'vitest';
import { type OracleBenchResult, oracleSvg } from '../src/bench/oracle-bench.js';
import { type StoreBenchResult, storeSvg } from '../src/bench/store-bench.js';
import { checkSvg } from '../src/bench/svg-plot.js';

it('store: one bar per backend and rate; a rate not measured (null) is left out, not drawn as 0', () => {
  const base: StoreBenchResult = {
    store: 'memory:',
    rowWritesPerSecond: 60_000,
    concurrentRowWritesPerSecond: 30_000,
    batchedCellWritesPerSecond: 200_000,
    pointReadsPerSecond: 300_000,
    pointReadsUncachedPerSecond: null,
    scanCellsPerSecond: 600_000,
  };
  const svg = storeSvg([base, { ...base, store: 'file:/tmp/x', pointReadsUncachedPerSecond: 100_000 }]);
  expect(checkSvg(svg)).toEqual([]);
  expect(svg).toContain('file:');
  expect(svg.match(/<rect [^>]*><title>/g)?.length).toBe(11);
});

it('oracle: loopback and in-process next to the paper', () => {
  const r = {
    timestampsPerSecond: 3_000_000,
    inProcessTimestampsPerSecond: 9_000_000,
    clients: 2,
    callersPerClient: 2000,
    averageBatch: 900,
  } as OracleBenchResult;
  const svg = oracleSvg(r);
  expect(checkSvg(svg)).toEqual([]);
  expect(svg).toContain('paper');
  expect(svg.match(/<rect [^>]*><title>/g)?.length).toBe(4);
});
