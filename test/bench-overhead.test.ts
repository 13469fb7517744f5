/** `bench overhead` (Figure 8) measures both sides on one backend and plots them. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { openStore } from '../src/store/open-store.js';
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

it('runs again against a store it did not create, leaving no tables behind', async () => {
  // A user's store (here a file: directory; the same holds for a server's): the first run's
  // tables once made the second fail with TABLE_EXISTS.
  const dir = mkdtempSync(join(tmpdir(), 'overhead-twice-'));
  try {
    for (let run = 0; run < 2; run++) {
      const r = await runOverheadBench({ seconds: 0.1, clients: 2, store: `file:${dir}` });
      expect(r.txnReadsPerSecond).toBeGreaterThan(0);
    }
    const store = await openStore(`file:${dir}`);
    const left = (await store.listTables()).filter((t) => /^(raw|txn)/.test(t));
    await store.close();
    expect(left).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
