/**
 * `bench latency` (Figure 7) at a tiny size, on the real pipeline and a `file:` store: a point per
 * crawl rate, every re-crawled fetch indexed by the export observer, batch rounds measured (and
 * growing with the repository), and a well-formed plot with both series. Plus the pure parts:
 * the back-to-back batch schedule and the crossover rule. Nothing here asserts timings beyond
 * what holds by construction.
 */
import { describe, expect, it } from 'vitest';
import { SyntheticCorpus } from '../src/apps/webindex/corpus/synthetic.js';
import { loadDocuments } from '../src/apps/webindex/loader.js';
import { createWebIndexTables } from '../src/apps/webindex/pipeline.js';
import { type LatencyPoint, batchLatencies, batchRound, findCrossover, runLatencyBench } from '../src/bench/latency-bench.js';
import { checkSvg } from '../src/bench/svg-plot.js';
import { latencySvg } from '../src/cli/commands/bench-latency.js';
import { Percolator } from '../src/txn/percolator.js';

describe('bench latency', () => {
  it('measures both pipelines at every crawl rate on the real system', { timeout: 120_000 }, async () => {
    const rates = [1, 10, 100];
    const r = await runLatencyBench({
      docs: 100,
      seed: 7,
      hourSeconds: 0.5,
      rates,
      minSamples: 5,
      probeDocs: 30,
      threads: 8,
      batchRounds: 3,
    });

    expect(r.repositoryDocuments).toBe(100);
    expect(r.timeCompression).toBe(7200);
    expect(r.store).toBe('file:');
    expect(r.machine.node).toBe(process.version);
    expect(r.points.map((p) => p.crawlRatePercentPerHour)).toEqual(rates);
    // 1 %/h of 100 documents is one re-crawl per hour: five hours for five samples.
    expect(r.points.map((p) => p.crawls)).toEqual([5, 10, 100]);
    expect(r.points[0]?.hours).toBe(5);
    for (const p of r.points) {
      // Every re-crawled fetch was made searchable, and its latency recorded by the export observer.
      expect(p.indexed).toBe(p.crawls);
      expect(p.incrementalMedianMs).toBeGreaterThanOrEqual(0);
      expect(p.incrementalP90Ms).toBeGreaterThanOrEqual(p.incrementalMedianMs);
      expect(p.incrementalMaxMs).toBeGreaterThanOrEqual(p.incrementalP90Ms);
      // A batch document waits at least one whole round and at most two.
      expect(p.batchMedianMs).toBeGreaterThanOrEqual(Math.min(...r.batch.roundsMs) - 0.1);
      expect(p.batchMedianMs).toBeLessThanOrEqual(2 * Math.max(...r.batch.roundsMs) + 0.1);
      expect(p.ratio).toBeCloseTo(p.batchMedianMs / Math.max(1, p.incrementalMedianMs), 1);
    }

    // Batch rounds were run, not assumed.
    expect(r.batch.roundsMs).toHaveLength(3);
    for (const t of r.batch.roundsMs) expect(t).toBeGreaterThan(0);
    expect(r.batch.roundMs).toBeGreaterThan(0);
    expect(r.incremental.capacityDocsPerSecond).toBeGreaterThan(0);
    // The capacity is the burst's re-crawls over its time to quiescence, which comes after its
    // last crawl was made searchable.
    const probe = r.incremental.probe;
    expect(probe.crawls).toBe(30);
    expect(probe.indexedMs).toBeGreaterThan(0);
    expect(probe.indexedMs).toBeLessThanOrEqual(probe.quiescentMs + 1);
    expect(probe.quiescenceIdleMs).toBeGreaterThanOrEqual(0);
    expect(r.incremental.capacityDocsPerSecond).toBeCloseTo(probe.crawls / (probe.quiescentMs / 1000), 0);
    expect(r.crossoverMethod).not.toBe('');
    if (r.crossoverPercentPerHour !== null && !r.crossoverExtrapolated) {
      expect(r.points.some((p) => p.incrementalMedianMs >= p.batchMedianMs)).toBe(true);
    }
    expect(r.target.measuredRatio).toBe(r.points[0]?.ratio);

    const svg = latencySvg(r);
    expect(checkSvg(svg)).toEqual([]);
    expect(svg).toContain('data-series="batch (back-to-back full recomputation)"');
    expect(svg).toContain('data-series="incremental (Percolator observers)"');
    expect((svg.match(/<polyline /g) ?? []).length).toBe(2);
  });
});

describe('batchRound', () => {
  it('reads the repository from the store and takes longer over a larger repository', { timeout: 60_000 }, async () => {
    const fastest = async (docs: number): Promise<number> => {
      const db = await Percolator.open({ store: 'memory:' });
      try {
        await createWebIndexTables(db);
        const corpus = new SyntheticCorpus({ docs, seed: 3 });
        await loadDocuments(db, corpus.documents(), { concurrency: 16 });
        let best = Infinity;
        for (let i = 0; i < 4; i++) {
          const r = await batchRound(db, 'content+url+title');
          expect(r.documents).toBe(docs);
          best = Math.min(best, r.readMs + r.computeMs);
        }
        return best;
      } finally {
        await db.close();
      }
    };
    const small = await fastest(40);
    const large = await fastest(400);
    expect(small).toBeGreaterThan(0);
    expect(large).toBeGreaterThan(2 * small);
  });
});

describe('batchLatencies', () => {
  it('waits for the round in progress to end, then for the next round', () => {
    // Rounds of 100 ms starting at phase 0 (random() = 0 puts the first start at the first crawl).
    expect(batchLatencies([0, 25, 99, 100, 250], [100], () => 0)).toEqual([200, 175, 101, 200, 150]);
    // Rounds alternate between measured durations.
    expect(batchLatencies([0, 120], [100, 50], () => 0)).toEqual([150, 130]);
  });

  it('has a median of about 1.5 rounds for crawls at uniform moments', () => {
    const crawls = Array.from({ length: 10_000 }, (_, i) => i * 0.37);
    const lat = batchLatencies(crawls, [40], () => 0.5).sort((a, b) => a - b);
    expect(lat[0]).toBeGreaterThanOrEqual(40);
    expect(lat[lat.length - 1]).toBeLessThanOrEqual(80);
    expect(lat[5000]).toBeGreaterThan(58);
    expect(lat[5000]).toBeLessThan(62);
  });
});

describe('findCrossover', () => {
  const point = (rate: number, inc: number, batch: number): LatencyPoint => ({
    crawlRatePercentPerHour: rate,
    incrementalMedianMs: inc,
    batchMedianMs: batch,
    ratio: batch / inc,
    incrementalP90Ms: inc,
    incrementalMaxMs: inc,
    crawls: 10,
    indexed: 10,
    hours: 1,
    arrivalDocsPerSecond: 1,
    drainMs: 0,
    saturated: false,
  });
  const model = { capacity: 50, hourSeconds: 10, saturationPercentPerHour: 250 };

  it('interpolates between the measured points around the crossing, in log-log', () => {
    const c = findCrossover([point(1, 10, 100), point(10, 20, 100), point(100, 500, 100)], model);
    expect(c.extrapolated).toBe(false);
    // ratio 5 at 10 %/h, 0.2 at 100 %/h: log-linear in between crosses 1 halfway, at √1000 ≈ 31.6.
    expect(c.crossover).toBeCloseTo(31.6, 0);
  });

  it('extrapolates from the capacity when incremental wins everywhere, and says so', () => {
    const c = findCrossover([point(1, 10, 100), point(100, 20, 100)], model);
    expect(c.extrapolated).toBe(true);
    expect(c.crossover).toBeCloseTo(250 * (1 + (2 * 80) / 10_000), 1);
    expect(c.method).toMatch(/extrapolated/);
  });

  it('reports the lowest rate when incremental never wins', () => {
    expect(findCrossover([point(1, 100, 10), point(100, 200, 10)], model)).toMatchObject({ crossover: 1, extrapolated: false });
  });
});
