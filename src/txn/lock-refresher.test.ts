import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { cleanup } from './actions/cleanup.js';
import { prewrite } from './actions/prewrite.js';
import { encodeColumn } from './layout.js';
import { LockRefresher } from './lock-refresher.js';
import { type Fixture, makeFixture } from './txn.fixture.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture();
});
afterEach(async () => {
  await f.store.close();
});

it('refreshes the wall time of a long commit, only while tracked, and never resurrects a rolled-back lock', async () => {
  const p = f.row('p', ['c:a', 'v']);
  const template = f.template(p);
  await prewrite(f.store, p, 100, template);
  const refresher = new LockRefresher(f.store, 150, () => f.clock.ms); // period 50 ms
  const tracked = refresher.track(p, p.cells[0] as never, template, 100);
  const wall = async (): Promise<number | undefined> => (await f.lockedCell('p', 'c:a'))?.lock.wallTimeMs;
  expect(await wall()).toBe(template.wallTimeMs);
  f.clock.ms += 60;
  await vi.waitFor(async () => expect(await wall()).toBe(template.wallTimeMs + 60), { timeout: 5_000, interval: 5 });

  // Rolled back under it: the next refresh is conditioned on our lock and writes nothing.
  expect(await cleanup(f.store, 't', Buffer.from('p'), encodeColumn('c:a'), 100)).toBe('rolledBack');
  const before = (await f.store.readRow('t', Buffer.from('p')))?.cells.length;
  f.clock.ms += 60;
  const other = f.row('q', ['c:a', 'v']);
  await prewrite(f.store, other, 200, f.template(other));
  const probe = refresher.track(other, other.cells[0] as never, f.template(other), 200);
  f.clock.ms += 60;
  // Once the probe's lock shows a refresh, the tick that also visited p has run.
  await vi.waitFor(async () => expect((await f.lockedCell('q', 'c:a'))?.lock.wallTimeMs).toBe(f.clock.ms), { timeout: 5_000, interval: 5 });
  expect(await f.lockedCell('p', 'c:a')).toBeNull();
  expect((await f.store.readRow('t', Buffer.from('p')))?.cells.length).toBe(before);

  // Stopped: no more refreshes of q, while a tick provably runs (it refreshes r).
  tracked.stop();
  probe.stop();
  const last = (await f.lockedCell('q', 'c:a'))?.lock.wallTimeMs;
  const r = f.row('r', ['c:a', 'v']);
  await prewrite(f.store, r, 300, f.template(r));
  const witness = refresher.track(r, r.cells[0] as never, f.template(r), 300);
  f.clock.ms += 60;
  await vi.waitFor(async () => expect((await f.lockedCell('r', 'c:a'))?.lock.wallTimeMs).toBe(f.clock.ms), { timeout: 5_000, interval: 5 });
  expect((await f.lockedCell('q', 'c:a'))?.lock.wallTimeMs).toBe(last);
  witness.stop();
});
