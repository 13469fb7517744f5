/**
 * `bench soak --store serve`: the re-crawled web index as a client of a `percolator serve` process
 * (the built CLI), sampled for the server's memory and store, and equal to the batch at the end.
 */
import { expect, it } from 'vitest';
import { runSoakBench } from '../src/bench/soak-bench.js';

it('re-crawls over serve: samples the server, ends equal to the batch, and a full pass leaves no rows of delete records only', async () => {
  const r = await runSoakBench({ docs: 150, rate: 40, seconds: 3, sampleSeconds: 1, store: 'serve', seed: 7, fullGcIntervalMs: 1_000 });
  expect(r.store).toBe('serve');
  expect(r.crawls).toBeGreaterThan(40);
  expect(r.samples.length).toBeGreaterThanOrEqual(3);
  // The server's directory and process: both measured at every sample.
  for (const s of r.samples) {
    expect(s.storeMiB).not.toBeNull();
    expect(s.serverRssMiB).toBeGreaterThan(20);
  }
  expect(r.backgroundGc.full.passes).toBeGreaterThan(0); // fullGcIntervalMs 1 000
  expect(r.differencesFromBatch).toBe(0);
  expect(r.anomalies).toEqual([]);
  for (const [table, t] of Object.entries(r.rowsAfterFullPass)) expect(t.deletedOnly, table).toBe(0);
}, 120_000);
