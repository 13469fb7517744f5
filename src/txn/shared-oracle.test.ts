import { afterEach, expect, it } from 'vitest';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { Percolator } from './percolator.js';

let store: Store | null = null;
afterEach(async () => {
  await store?.close();
  store = null;
});

it('two Percolators over one store draw from one oracle: no lost update, every snapshot sees what committed before it', async () => {
  store = await openStore('memory:');
  const a = await Percolator.open({ store, gcIntervalMs: 0 });
  const b = await Percolator.open({ store, gcIntervalMs: 0 });
  expect(b.oracle).toBe(a.oracle);
  await a.createTable('t');
  await a.transaction(async (tx) => tx.set('t', 'n', 'c:v', '0'));
  const increment = (db: Percolator) =>
    db.transaction(async (tx) => tx.set('t', 'n', 'c:v', String(Number(await tx.getString('t', 'n', 'c:v')) + 1)));
  // Alternating, then concurrent: every acknowledged increment counts.
  for (let i = 0; i < 10; i++) await increment(i % 2 === 0 ? a : b);
  await Promise.all(Array.from({ length: 20 }, (_, i) => increment(i % 2 === 0 ? a : b)));
  expect(await a.getString('t', 'n', 'c:v')).toBe('30');
  // A commit through one is in every later snapshot of the other.
  await a.transaction(async (tx) => tx.set('t', 'x', 'c:v', 'after'));
  const snap = await b.snapshot();
  expect(await snap.getString('t', 'x', 'c:v')).toBe('after');
  snap.release();
  // The first to close leaves the oracle to the other; the last closes it, and a new one starts above.
  const last = (await b.snapshot()).startTs;
  await a.close();
  await b.transaction(async (tx) => tx.set('t', 'y', 'c:v', 'still'));
  await b.close();
  const c = await Percolator.open({ store, gcIntervalMs: 0 });
  const next = await c.snapshot();
  expect(next.startTs).toBeGreaterThan(last);
  expect(await next.getString('t', 'y', 'c:v')).toBe('still');
  next.release();
  await c.close();
});
