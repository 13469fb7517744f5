import { expect, it } from 'vitest';
import { WebIndexMetrics } from './metrics.js';

it('counts a fetch indexed once however often a retried run reports it, among the events it remembers', () => {
  const m = new WebIndexMetrics(10, 3);
  m.onLoaded(5);
  for (const url of ['a', 'b', 'a', 'c', 'b']) m.onIndexed(url, 1, 5);
  expect(m.indexed).toBe(3);
  m.onIndexed('a', 2, 5); // a later fetch of the same page is another event, the fourth: ('a', 1) is forgotten
  expect(m.indexed).toBe(4);
  m.onIndexed('a', 1, 5);
  m.onIndexed('c', 1, 5); // still remembered
  expect(m.indexed).toBe(5);
  expect(m.outstanding).toBe(0);
});

it('counts an unchanged fetch once, and a processed fetch every time', () => {
  const m = new WebIndexMetrics();
  m.onLoaded(3);
  m.onProcessed('a', 7, true);
  m.onProcessed('a', 7, true);
  m.onProcessed('b', 7);
  m.onProcessed();
  expect(m.processed).toBe(4);
  expect(m.unchanged).toBe(1);
  expect(m.outstanding).toBe(2);
});

it('reports the percentiles of the last `capacity` latencies', () => {
  const m = new WebIndexMetrics(4);
  expect(m.latencyPercentiles()).toBeNull();
  for (let i = 1; i <= 6; i++) m.onIndexed(`u${i}`, 1, i * 10); // 10 and 20 fall out of the ring
  expect(m.latencyPercentiles()).toEqual({ medianMs: 40, p99Ms: 60 });
});
