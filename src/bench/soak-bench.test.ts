import { expect, it } from 'vitest';
import { runSoakBench } from './soak-bench.js';

it('re-crawls a repository, samples it, and ends with the batch index and no rows of delete records only after a full pass', async () => {
  const r = await runSoakBench({ docs: 200, rate: 60, seconds: 3, sampleSeconds: 1, store: 'memory:', seed: 5 });
  expect(r.crawls).toBeGreaterThan(60);
  expect(r.samples.length).toBeGreaterThanOrEqual(3);
  expect(r.samples.every((s) => s.storeMiB === null && s.heapMiB > 0 && s.rssMiB >= s.heapMiB)).toBe(true);
  if (process.platform === 'linux') expect(r.samples.every((s) => s.anonRssMiB !== null && s.anonRssMiB <= s.rssMiB)).toBe(true);
  const { recrawls, comparison, fullPass } = r.peakRssMiB;
  expect(recrawls).toBeGreaterThanOrEqual(Math.max(...r.samples.map((s) => s.rssMiB)) - 1); // peaks only rise
  expect(comparison).toBeGreaterThanOrEqual(recrawls);
  expect(fullPass).toBeGreaterThanOrEqual(comparison);
  expect(r.liveDocuments).toBeLessThan(200); // some pages were deleted
  expect(r.differencesFromBatch).toBe(0);
  expect(r.anomalies).toEqual([]);
  // Deleted anchors, postings and keys leave rows behind until GC passes their deletes; a full
  // pass leaves none (it used to keep every delete record: GC before 2026-12-03).
  expect(Object.values(r.rowsAtEnd).reduce((n, t) => n + t.rows, 0)).toBeGreaterThan(0);
  for (const [table, t] of Object.entries(r.rowsAfterFullPass)) expect(t.deletedOnly, table).toBe(0);
  expect(r.rowsAfterFullPass.index?.rows).toBeLessThanOrEqual(r.rowsAtEnd.index?.rows ?? 0);
  expect(r.workerGcWindows).toBe(false);
  // The targeted passes ran in the background and collected; their backlog was sampled.
  expect(r.backgroundGc.recent.passes).toBeGreaterThan(0);
  expect(r.backgroundGc.recent.versionsRemoved).toBeGreaterThan(0);
  expect(r.backgroundGc.full.passes).toBe(0); // full passes are off by default
  expect(r.samples.every((s) => Number.isSafeInteger(s.gcBacklogCells) && s.gcBacklogCells >= 0)).toBe(true);
}, 60_000);

it("with the worker's GC windows, the same index as the batch", async () => {
  const r = await runSoakBench({ docs: 200, rate: 60, seconds: 2, sampleSeconds: 1, store: 'memory:', seed: 6, workerGcWindows: true });
  expect(r.workerGcWindows).toBe(true);
  expect(r.crawls).toBeGreaterThan(30);
  expect(r.differencesFromBatch).toBe(0);
  expect(r.anomalies).toEqual([]);
}, 60_000);

it('refuses a repository too small, with the option named', async () => {
  await expect(runSoakBench({ docs: 3, rate: 1, seconds: 1 })).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    details: { option: '--docs', value: 3 },
  });
});
