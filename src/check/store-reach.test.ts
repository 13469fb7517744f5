/**
 * The store-reach watch declares a store gone only after its probes failed for the whole outage:
 * a short outage is ridden out, and a probe that is merely slow (a loaded machine) never counts.
 * `unlessGone` ends a checker's wait on such a store with STORE_OUT_OF_REACH, and gives a failure
 * of that wait as it is only when the store still answers.
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { StoreOutOfReachError, unlessGone, watchServedStore, watchStoreReach } from './store-reach.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'] });
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

it('unlessGone ends a wait that would outlast the store with STORE_OUT_OF_REACH', async () => {
  const reach = watchStoreReach(refused, { store: 's', outageMs: 1000, everyMs: 100, what: 'c' });
  const forever = new Promise<never>(() => undefined);
  const outcome = unlessGone(reach, forever).then(
    () => 'resolved',
    (e: unknown) => e,
  );
  await vi.advanceTimersByTimeAsync(1300);
  expect(await outcome).toBeInstanceOf(StoreOutOfReachError);
  reach.stop();
});

it('unlessGone holds a failure while the store does not answer, and makes it the outage', async () => {
  const reach = watchStoreReach(refused, { store: 's', outageMs: 1000, everyMs: 100, what: 'c' });
  const timedOut = Object.assign(new Error('oracle unreachable'), { code: 'ORACLE_UNAVAILABLE' });
  let settled: unknown = 'pending';
  void unlessGone(reach, Promise.reject(timedOut)).catch((e: unknown) => {
    settled = e;
  });
  await vi.advanceTimersByTimeAsync(500);
  expect(settled).toBe('pending');
  await vi.advanceTimersByTimeAsync(700);
  expect(settled).toBeInstanceOf(StoreOutOfReachError);
  reach.stop();
});

it("unlessGone gives the work's own outcome while the store answers", async () => {
  const reach = watchStoreReach(() => Promise.resolve(), { store: 's', outageMs: 1000, everyMs: 100, what: 'c' });
  await expect(unlessGone(reach, Promise.resolve(7))).resolves.toBe(7);
  const bug = new Error('a finding, not an outage');
  const failed = unlessGone(reach, Promise.reject(bug));
  const caught = failed.catch((e: unknown) => e);
  // Given once a probe started after the failure answered (the next one, within everyMs).
  await vi.advanceTimersByTimeAsync(200);
  expect(await caught).toBe(bug);
  reach.stop();
});

it('only a store another process serves is watched', async () => {
  expect(watchServedStore('memory:', refused, { what: 'c' })).toBeNull();
  expect(watchServedStore('file:/tmp/x', refused, { what: 'c' })).toBeNull();
  const reach = watchServedStore('bigtable://h:1', refused, { outageMs: 1000, what: 'c' });
  expect(reach).not.toBeNull();
  reach?.stop();
  await expect(unlessGone(null, Promise.resolve('as is'))).resolves.toBe('as is');
});
