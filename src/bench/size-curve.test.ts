import { describe, expect, it } from 'vitest';
import { type SizeSample, lastSearchableMs, sizeCurve } from './size-curve.js';

const sample = (indexed: number, ms: number, cpuMs: number, engineReads: number | null = null): SizeSample => ({
  indexed,
  ms,
  cpuMs,
  engineReads,
});

describe('sizeCurve', () => {
  it('cuts the run into equal parts by documents and interpolates each boundary between samples', () => {
    // 100 documents/s for the first 50 documents, then 25/s; CPU 2 ms then 8 ms a document; reads 1 then 3.
    const samples = [
      sample(0, 0, 0, 0),
      sample(30, 300, 60, 30),
      sample(50, 500, 100, 50),
      sample(80, 1700, 340, 140),
      sample(100, 2500, 500, 200),
    ];
    expect(sizeCurve(samples, 2)).toEqual([
      { indexedFrom: 0, indexedTo: 50, documentsPerSecond: 100, cpuMsPerDocument: 2, engineReadsPerDocument: 1 },
      { indexedFrom: 50, indexedTo: 100, documentsPerSecond: 25, cpuMsPerDocument: 8, engineReadsPerDocument: 3 },
    ]);
    // Boundaries between samples: 25 documents at 250 ms, 75 at 1 500 ms (linear).
    const quarters = sizeCurve(samples, 4);
    expect(quarters.map((s) => [s.indexedFrom, s.indexedTo, s.documentsPerSecond])).toEqual([
      [0, 25, 100],
      [25, 50, 100],
      [50, 75, 25],
      [75, 100, 25],
    ]);
  });

  it('ends when the last document became searchable: the drain after it is not a part', () => {
    const samples = [sample(0, 0, 0), sample(10, 100, 10), sample(10, 5000, 900)];
    expect(sizeCurve(samples, 1)).toEqual([
      { indexedFrom: 0, indexedTo: 10, documentsPerSecond: 100, cpuMsPerDocument: 1, engineReadsPerDocument: null },
    ]);
  });

  it('dates a boundary inside a stall by the sample just before the documents resumed', () => {
    // 10 documents by 100 ms, none until 500 ms, 10 more by 600 ms: 15 were searchable at 550 ms.
    const samples = [sample(0, 0, 0), sample(10, 100, 0), sample(10, 300, 0), sample(10, 500, 0), sample(20, 600, 0)];
    expect(sizeCurve(samples, 4).map((s) => [s.indexedTo, s.documentsPerSecond])).toEqual([
      [5, 100],
      [10, 100],
      [15, 11],
      [20, 100],
    ]);
  });

  it('has no more parts than documents, and none without documents or samples', () => {
    expect(sizeCurve([sample(0, 0, 0), sample(3, 30, 3)], 10).map((s) => s.indexedTo)).toEqual([1, 2, 3]);
    expect(sizeCurve([sample(0, 0, 0), sample(0, 100, 5)], 10)).toEqual([]);
    expect(sizeCurve([], 10)).toEqual([]);
  });

  it('gives observer runs and commits a document per part when the samples carry them', () => {
    const at = (indexed: number, ms: number, rank: number, exp: number, commits: number): SizeSample => ({
      ...sample(indexed, ms, 0),
      observers: { runs: exp === 0 ? { rank } : { rank, export: exp }, commits },
    });
    // rank: 1 run a document for the first 10, 3 for the next 10; export first seen between samples.
    const steps = sizeCurve([at(0, 0, 0, 0, 0), at(10, 100, 10, 0, 5), at(20, 200, 40, 20, 45)], 2);
    expect(steps.map((s) => [s.runsPerDocument, s.commitsPerDocument])).toEqual([
      [{ rank: 1 }, 0.5],
      [{ rank: 3, export: 2 }, 4],
    ]);
    // A boundary between samples interpolates the counts: at 5 documents, 10 rank runs and 5 exports.
    expect(sizeCurve([at(0, 0, 0, 0, 0), at(20, 200, 40, 20, 40)], 4)[0]?.runsPerDocument).toEqual({ rank: 2, export: 1 });
    expect(sizeCurve([sample(0, 0, 0), sample(10, 100, 1)], 1)[0]?.runsPerDocument).toBeUndefined();
  });

  it('starts at the first sample when it was taken after documents were searchable', () => {
    const steps = sizeCurve([sample(20, 200, 0), sample(40, 400, 20)], 2);
    expect(steps.map((s) => [s.indexedFrom, s.indexedTo, s.documentsPerSecond, s.cpuMsPerDocument])).toEqual([
      [20, 30, 100, 1],
      [30, 40, 100, 1],
    ]);
  });
});

describe('lastSearchableMs', () => {
  it('is the first sample with the final count: what follows it is the drain', () => {
    expect(lastSearchableMs([sample(0, 0, 0), sample(40, 400, 1), sample(100, 900, 2), sample(100, 1000, 3), sample(100, 1300, 4)])).toBe(
      900,
    );
    expect(lastSearchableMs([sample(0, 0, 0), sample(10, 100, 1)])).toBe(100);
    expect(lastSearchableMs([])).toBeNull();
  });
});
