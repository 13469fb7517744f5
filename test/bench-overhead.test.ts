/** `bench overhead` (Figure 8) measures both sides on one backend and plots them. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { openStore } from '../src/store/open-store.js';
import { measureAlternating, overheadSvg, runOverheadBench } from '../src/bench/overhead-bench.js';
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
  // The transactional reads took their keys as strings; eight windows a side were measured.
  expect(r.txnKeys).toBe('string');
  expect(r.readWindows.raw).toHaveLength(8);
  expect(r.readWindows.txn).toHaveLength(8);
  for (const w of [...r.readWindows.raw, ...r.readWindows.txn]) expect(w).toBeGreaterThan(0);
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

it('measures the two read phases in windows ordered a b, b a, a b, b a, each rate over all of its windows', async () => {
  const phases: string[] = [];
  const counts = { a: 0, b: 0 };
  const op = (name: 'a' | 'b') => async () => {
    if (phases[phases.length - 1] !== name) phases.push(name);
    counts[name]++;
    await new Promise<void>((r) => setImmediate(r));
  };
  const { a, b, aWindows, bWindows } = await measureAlternating(0.2, 2, op('a'), op('b'), 4);
  expect(phases).toEqual(['a', 'b', 'a', 'b', 'a']); // a | b b | a a | b b | a: the windows between pairs run back to back
  // Each window's own rate is reported; the side's rate lies within their range.
  expect(aWindows).toHaveLength(4);
  expect(bWindows).toHaveLength(4);
  expect(a).toBeGreaterThanOrEqual(Math.min(...aWindows) - 1);
  expect(a).toBeLessThanOrEqual(Math.max(...aWindows) + 1);
  expect(b).toBeGreaterThanOrEqual(Math.min(...bWindows) - 1);
  expect(b).toBeLessThanOrEqual(Math.max(...bWindows) + 1);
  expect(a).toBeGreaterThan(0);
  expect(b).toBeGreaterThan(0);
  // Each rate counts every operation of its side over about the 0.2 s its windows lasted.
  expect(a).toBeGreaterThan(counts.a / 0.4);
  expect(a).toBeLessThanOrEqual(counts.a / 0.19);
  expect(b).toBeGreaterThan(counts.b / 0.4);
  expect(b).toBeLessThanOrEqual(counts.b / 0.19);
});

it("hands the transactional reads the raw side's bytes when asked (--txn-keys bytes)", async () => {
  const r = await runOverheadBench({ seconds: 0.2, clients: 2, store: 'memory:', txnKeys: 'bytes' });
  expect(r.txnKeys).toBe('bytes');
  expect(r.txnReadsPerSecond).toBeGreaterThan(0);
  expect(r.readRatio).toBeCloseTo(r.txnReadsPerSecond / r.rawReadsPerSecond, 2);
}, 30_000);
