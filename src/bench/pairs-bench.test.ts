import { describe, expect, it } from 'vitest';
import { type Side, PairsError, metricAt, orderOf, runPairs } from './pairs-bench.js';

describe('runPairs', () => {
  it('alternates which build goes first and summarizes each metric per side', async () => {
    const calls: [Side, number][] = [];
    // The candidate measures 10 % more than the baseline in every round; the machine slows down
    // from round to round, which both sides must see alike.
    const r = await runPairs({
      rounds: 4,
      metrics: ['docs', 'nested.cpu'],
      run: async (side, round) => {
        calls.push([side, round]);
        const speed = 100 - 10 * round;
        return { docs: side === 'candidate' ? speed * 1.1 : speed, nested: { cpu: side === 'candidate' ? 3 : 4 } };
      },
    });
    expect(calls).toEqual([
      ['candidate', 1],
      ['baseline', 1],
      ['baseline', 2],
      ['candidate', 2],
      ['candidate', 3],
      ['baseline', 3],
      ['baseline', 4],
      ['candidate', 4],
    ]);
    expect(r.runs.map((x) => x.order)).toEqual([1, 2, 1, 2, 1, 2, 1, 2]);
    const docs = r.metrics.docs;
    expect(docs?.baseline).toEqual({ runs: [90, 80, 70, 60], mean: 75, median: 75, min: 60, max: 90 });
    expect(docs?.candidate.runs).toEqual([99, 88, 77, 66].map((x) => expect.closeTo(x, 9)));
    expect(docs?.ratio).toBe(1.1);
    expect(docs?.pairRatios).toEqual([1.1, 1.1, 1.1, 1.1]);
    expect(docs?.candidateHigherIn).toBe(4);
    expect(r.metrics['nested.cpu']?.ratio).toBe(0.75);
    expect(r.metrics['nested.cpu']?.candidateHigherIn).toBe(0);
  });

  it('takes the median of an even number of runs as the mean of the middle two', async () => {
    const values = { candidate: [5, 1, 9, 3], baseline: [0, 0, 0, 0] };
    const r = await runPairs({ rounds: 4, metrics: ['x'], run: async (side, round) => ({ x: values[side][round - 1] }) });
    expect(r.metrics.x?.candidate).toMatchObject({ median: 4, min: 1, max: 9, mean: 4.5 });
    // A baseline of 0 has no ratio rather than Infinity.
    expect(r.metrics.x?.ratio).toBeNull();
    expect(r.metrics.x?.pairRatios).toEqual([null, null, null, null]);
  });

  it('fails the whole comparison on a missing or non-numeric metric, with the metric as evidence', async () => {
    const err = await runPairs({ rounds: 2, metrics: ['docs'], run: async () => ({ docs: 'fast' }) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PairsError);
    expect(err).toMatchObject({ code: 'METRIC_NOT_FOUND', details: { metric: 'docs', found: 'fast' } });
    expect(() => metricAt({ a: { b: Number.NaN } }, 'a.b')).toThrow(PairsError);
    expect(() => metricAt(null, 'a')).toThrow(/no number at a/);
    expect(metricAt({ a: { b: 2 } }, 'a.b')).toBe(2);
  });

  it('passes a failed run through and runs nothing after it', async () => {
    let runs = 0;
    const err = await runPairs({
      rounds: 3,
      metrics: ['x'],
      run: async (side, round) => {
        runs++;
        if (side === 'baseline' && round === 2) throw new PairsError('BENCH_RUN_FAILED', 'boom', { side, round });
        return { x: 1 };
      },
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'BENCH_RUN_FAILED', details: { side: 'baseline', round: 2 } });
    expect(runs).toBe(3); // round 1 both, round 2 the baseline (first) only
  });

  it('orders odd rounds candidate first, even rounds baseline first', () => {
    expect(orderOf(1)).toEqual(['candidate', 'baseline']);
    expect(orderOf(2)).toEqual(['baseline', 'candidate']);
    expect(orderOf(7)).toEqual(['candidate', 'baseline']);
  });
});
