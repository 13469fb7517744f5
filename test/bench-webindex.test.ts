/** `bench webindex` end to end on a small corpus: every phase, the saturation phase's ratios, the load curve and its plot. */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkSvg } from '../src/bench/svg-plot.js';
import { DEFAULT_LOADERS, runWebIndex } from '../src/apps/webindex/run.js';
import { runWebIndexBench } from '../src/bench/webindex-bench.js';
import { parseLoadRates, webIndexSizeSvg, webIndexSvg } from '../src/cli/commands/bench-webindex.js';

// The runs go side by side in this process: each has its own store, and what each asserts of its
// CPU and event loop holds whatever else shares them (the bounds are the machine's and the thread's
// own); the paced phases, the serve process's start and the file: run's disk waits overlap the rest.
it.concurrent(
  'indexes every document of every phase, without anomalies, says how busy the JS thread was, and draws the load curve',
  async () => {
    const r = await runWebIndexBench({ docs: 300, store: 'memory:', lightDocs: 20, lightRate: 100, loadRates: [40, 400], loadSeconds: 1 });
    expect(r.documents).toBe(300);
    expect(r.anomalies).toEqual([]);
    expect(r.serverCpuMsPerDocument).toBeNull(); // no server process
    expect(r.documentsPerSecond).toBeGreaterThan(0);
    expect(r.lightLoad?.documents).toBe(20);
    expect(r.medianLatencyMs).toBe(r.lightLoad?.medianLatencyMs);
    // Saturation keeps the JS thread busy; a memory: store does no I/O for it to wait on.
    expect(r.saturation.eventLoopUtilization).toBeGreaterThan(0.3);
    expect(r.saturation.eventLoopUtilization).toBeLessThanOrEqual(1);
    // CPU is what the machine gave: a loaded machine (other test files, other processes) gives less.
    expect(r.saturation.cpuCores).toBeGreaterThan(0.1);
    expect(r.saturation.cpuCores).toBeLessThanOrEqual(availableParallelism() + 0.5);
    // The JS thread's own share (Linux): some of a core, no more than the process's, and no more
    // than the time its event loop was busy (its CPU time is counted in 10 ms ticks).
    if (process.platform === 'linux') {
      const js = r.saturation.jsThreadCores as number;
      expect(js).toBeGreaterThan(0.05);
      expect(js).toBeLessThanOrEqual(r.saturation.cpuCores + 0.02);
      expect(js).toBeLessThanOrEqual(r.saturation.eventLoopUtilization + 0.1);
    }

    // One step per offered load, in order, each with its own documents (at least 50).
    expect(r.loadCurve.map((s) => [s.offeredPerSecond, s.documents])).toEqual([
      [40, 50],
      [400, 400],
    ]);
    for (const s of r.loadCurve) {
      // Arrivals follow the schedule: n documents take at least (n − 1) / rate seconds to arrive.
      expect(s.achievedPerSecond).toBeGreaterThan(0);
      expect(s.achievedPerSecond).toBeLessThanOrEqual(Math.ceil((s.offeredPerSecond * s.documents) / (s.documents - 1)));
      expect(s.p99LatencyMs).toBeGreaterThanOrEqual(s.medianLatencyMs);
    }

    const svg = webIndexSvg(r);
    expect(checkSvg(svg)).toEqual([]);
    for (const label of ['median', 'p99', `saturation ${r.saturation.documentsPerSecond} docs/s`]) expect(svg).toContain(label);

    // The size curve: tenths of the saturation phase, end to end, up to every document searchable.
    const parts = r.saturation.bySize;
    expect(parts).toHaveLength(10);
    expect(parts[0]?.indexedFrom).toBe(0);
    expect(parts[9]?.indexedTo).toBe(300);
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      expect(p?.indexedTo).toBe(30 * (i + 1));
      if (i > 0) expect(p?.indexedFrom).toBe(parts[i - 1]?.indexedTo);
      expect(p?.documentsPerSecond).toBeGreaterThan(0);
      expect(p?.cpuMsPerDocument).toBeGreaterThan(0);
      // memory: has no engine to count reads of.
      expect(p?.engineReadsPerDocument).toBeNull();
    }
    // What ran after the last document became searchable: part of the phase, never all of it.
    const drain = r.saturation.drainMs as number;
    expect(drain).toBeGreaterThanOrEqual(0);
    expect(drain).toBeLessThan(r.saturation.elapsedMs);
    expect(r.engineReadsPerDocument).toBeNull();
    expect(r.engineReadsByGroupPerDocument).toBeNull();
    expect(r.engineCompaction).toBeNull();
    const sizeSvg = webIndexSizeSvg(r);
    expect(checkSvg(sizeSvg)).toEqual([]);
    for (const label of ['documents/s', 'CPU ms per document', 'documents searchable']) expect(sizeSvg).toContain(label);
    expect(sizeSvg).not.toContain('engine reads');
    expect(r.stages).toBeNull(); // not asked for
    expect(r.node).toBe(process.version);
    expect(r.loaders).toBe(DEFAULT_LOADERS);
  },
  120_000,
);

it.concurrent(
  'with stages, runs the pipeline cut after each stage on the same corpus: each adds its cost',
  async () => {
    // Two loaders (not the default): every stage still loads every document.
    const r = await runWebIndexBench({ docs: 200, store: 'memory:', lightDocs: 0, stages: true, loaders: 2 });
    expect(r.loaders).toBe(2);
    expect(r.anomalies).toEqual([]);
    const stages = r.stages ?? [];
    expect(stages.map((s) => [s.until, s.documents])).toEqual([
      ['process', 200],
      ['cluster', 200],
      ['export', 200],
    ]);
    const [processed, clustered, whole] = stages;
    // The whole pipeline's row is the saturation phase's own.
    expect(whole?.documentsPerSecond).toBe(r.documentsPerSecond);
    expect(whole?.cpuMsPerDocument).toBe(r.cpuMsPerDocument);
    expect(whole?.commitsPerDocument).toBe(r.commitsPerDocument);
    // The processor commits once a document; each later stage adds commits of its own.
    expect(processed?.commitsPerDocument).toBe(1);
    expect(clustered?.commitsPerDocument).toBeGreaterThan(1);
    expect(whole?.commitsPerDocument).toBeGreaterThan(clustered?.commitsPerDocument as number);
    for (const s of stages) {
      expect(s.documentsPerSecond).toBeGreaterThan(0);
      expect(s.cpuMsPerDocument).toBeGreaterThan(0);
      if (process.platform === 'linux') expect(s.jsMsPerDocument).toBeGreaterThan(0);
      expect(s.engineOpsPerDocument).toBeNull(); // memory:
    }
  },
  120_000,
);

it.concurrent(
  'with --store serve, runs the pipeline as the client of a percolator serve process, and counts both sides’ CPU',
  async () => {
    const r = await runWebIndexBench({ docs: 30, store: 'serve', lightDocs: 0, loadRates: [] });
    expect(r.store).toBe('serve');
    expect(r.documents).toBe(30);
    expect(r.anomalies).toEqual([]);
    expect(r.duplicatesFound).toBeGreaterThan(0);
    expect(r.cpuMsPerDocument).toBeGreaterThan(0);
    if (process.platform === 'linux') expect(r.serverCpuMsPerDocument).toBeGreaterThan(0);
    expect(r.engineOpsPerDocument).toBeNull(); // the engine is in the server's process
  },
  120_000,
);

it.concurrent(
  'on file:, a run counts its engine reads by table and locality group, and reads LevelDB’s compaction counters',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'percolator-webindex-reads-'));
    try {
      const first = await runWebIndex({ corpus: 'synthetic', docs: 150, seed: 7, store: `file:${dir}` });
      await first.close();
      // The same documents crawled again by a run that opens the store anew: its row caches start
      // empty, so the rows it reads come from the engine.
      const again = await runWebIndex({ corpus: 'synthetic', docs: 150, seed: 7, store: `file:${dir}`, keep: true });
      const s = again.summary;
      await again.close();
      expect(s.anomalies).toEqual([]);
      expect(s.engineReads).toBeGreaterThan(0);
      const byGroup = Object.entries(s.engineReadsByGroup ?? {});
      for (const [group, n] of byGroup) {
        expect(group).toMatch(/^[a-z_]+\/(default|notify)$/); // table/locality group
        expect(n.found).toBeGreaterThanOrEqual(0);
        expect(n.absent).toBeGreaterThanOrEqual(0);
      }
      // The re-crawl reads every page's row back.
      expect(s.engineReadsByGroup?.['pages/default']?.found).toBeGreaterThan(0);
      // The engine's own count leaves out what its overlay of deferred writes answered.
      expect(byGroup.reduce((a, [, n]) => a + n.found + n.absent, 0)).toBeGreaterThanOrEqual(s.engineReads as number);
      // LevelDB's background work is read too (a run this small may not fill a memtable: zeros).
      expect(s.engineCompaction).not.toBeNull();
      expect(s.engineCompaction?.flushedMiB).toBeGreaterThanOrEqual(0);
      expect(s.engineCompaction?.seconds).toBeGreaterThanOrEqual(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
  120_000,
);

describe('--load-rates', () => {
  it('takes positive numbers, comma-separated, or none', () => {
    expect(parseLoadRates('20, 50,100')).toEqual([20, 50, 100]);
    expect(parseLoadRates('none')).toEqual([]);
    // Plain decimal, as every number option (parent-command.ts): Number() read 0x10 as 16 and 1e2 as 100.
    for (const bad of ['', '0', '20,x', '-5', '10,,20', '0x10', '20,1e2', '+5', 'Infinity']) {
      expect(() => parseLoadRates(bad), bad).toThrow(/^--load-rates must be positive numbers, comma-separated, or none; got /);
    }
  });
});
