/**
 * The store-reach watch declares a store gone only after its probes failed for the whole outage:
 * a short outage is ridden out, and a probe that is merely slow (a loaded machine) never counts.
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { StoreOutOfReachError, watchStoreReach } from './store-reach.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

const refused = (): Promise<never> => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'IO_ERROR' }));

it('probes that fail for the whole outage make the store gone, with the last failure as evidence', async () => {
  const reach = watchStoreReach(refused, { store: 'bigtable://h:1', outageMs: 1000, everyMs: 100, what: 'check x' });
  await vi.advanceTimersByTimeAsync(900);
  expect(reach.lost()).toBeNull();
  await vi.advanceTimersByTimeAsync(200);
  const e = reach.lost();
  expect(e).toBeInstanceOf(StoreOutOfReachError);
  expect(e).toMatchObject({
    code: 'STORE_OUT_OF_REACH',
    details: { store: 'bigtable://h:1', outageMs: 1000, lastError: { code: 'IO_ERROR' } },
  });
  expect(e?.message).toMatch(/^check x: the store bigtable:\/\/h:1 has been out of reach for 1\.\d s \(IO_ERROR: connect ECONNREFUSED\)/);
  reach.stop();
});

it('an outage shorter than outageMs is ridden out: one answer starts the count again', async () => {
  let down = true;
  const reach = watchStoreReach(() => (down ? refused() : Promise.resolve()), { store: 's', outageMs: 1000, everyMs: 100, what: 'c' });
  await vi.advanceTimersByTimeAsync(800);
  down = false;
  await vi.advanceTimersByTimeAsync(200);
  down = true;
  await vi.advanceTimersByTimeAsync(800);
  expect(reach.lost()).toBeNull();
  reach.stop();
});

it('a probe slower than outageMs that answers is no outage, nor the failure right after it', async () => {
  let calls = 0;
  const slow = (): Promise<void> => (++calls === 1 ? new Promise((r) => setTimeout(r, 3000)) : refused());
  const reach = watchStoreReach(slow, { store: 's', outageMs: 1000, everyMs: 100, what: 'c' });
  await vi.advanceTimersByTimeAsync(2900);
  expect(reach.lost()).toBeNull(); // asked 2.9 s ago, no answer yet: slow, not gone
  await vi.advanceTimersByTimeAsync(300);
  expect(calls).toBeGreaterThan(1);
  expect(reach.lost()).toBeNull(); // failing since it answered, 0.2 s ago
  reach.stop();
});
