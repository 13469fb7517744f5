import { expect, it } from 'vitest';
import { InProcessLockService, RECLAIM_AFTER_MS } from './lock-service.js';

it('takes a lock over from a gone owner once it is RECLAIM_AFTER_MS old, never from a live one, a fresh one or itself', async () => {
  let now = 0;
  const gone = new Set<string>();
  const asked: string[] = [];
  const locks = new InProcessLockService(
    () => now,
    async (owner) => {
      asked.push(owner);
      return gone.has(owner);
    },
  );
  expect(await locks.tryLockOrReclaim('k', 'dead', 30_000)).toBe(true);
  expect(await locks.tryLockOrReclaim('j', 'live', 30_000)).toBe(true);
  gone.add('dead');
  now = RECLAIM_AFTER_MS - 1; // a run in progress: nobody is asked
  expect(await locks.tryLockOrReclaim('k', 'other', 30_000)).toBe(false);
  expect(asked).toEqual([]);
  now = RECLAIM_AFTER_MS;
  expect(await locks.tryLockOrReclaim('j', 'other', 30_000)).toBe(false); // alive
  expect(await locks.tryLockOrReclaim('k', 'dead', 30_000)).toBe(false); // held, by anyone, itself included
  expect(await locks.tryLockOrReclaim('k', 'other', 30_000)).toBe(true); // gone: taken over
  expect(await locks.tryLockOrReclaim('k', 'third', 30_000)).toBe(false); // the new holder's lock is fresh
  expect(asked).toEqual(['live', 'dead']);
  // A failing check keeps the lock; without a check, only the TTL ends it.
  const failing = new InProcessLockService(
    () => now,
    () => Promise.reject(new Error('store out of reach')),
  );
  expect(failing.tryLockSync('k', 'a', 30_000)).toBe(true);
  now += RECLAIM_AFTER_MS;
  expect(await failing.tryLockOrReclaim('k', 'b', 30_000)).toBe(false);
  const plain = new InProcessLockService(() => now);
  expect(plain.tryLockSync('k', 'a', 30_000)).toBe(true);
  now += 10 * RECLAIM_AFTER_MS;
  expect(await plain.tryLockOrReclaim('k', 'b', 30_000)).toBe(false);
  now += 30_000;
  expect(await plain.tryLockOrReclaim('k', 'b', 30_000)).toBe(true);
});

it('counts only the locks held now: an expired one nobody asked for again is not held', async () => {
  let now = 0;
  const locks = new InProcessLockService(() => now);
  expect(locks.tryLockSync('a', 'dead worker', 1_000)).toBe(true);
  expect(locks.tryLockSync('b', 'live worker', 30_000)).toBe(true);
  expect(locks.size).toBe(2);
  now = 1_000; // a's TTL is over: its holder never unlocked it (killed), and nobody wants the row
  expect(locks.size).toBe(1);
  expect(locks.tryLockSync('b', 'other', 30_000)).toBe(false);
});
