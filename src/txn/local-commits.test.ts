import { expect, it, vi } from 'vitest';
import { LocalCommits } from './local-commits.js';
import { Percolator } from './percolator.js';

it('waitFor resolves when the commit ends, false at once when none is in flight', async () => {
  const lc = new LocalCommits();
  expect(await lc.waitFor(5, 10_000)).toBe(false);
  const end = lc.begin(5);
  let woke = false;
  const waiting = lc.waitFor(5, 10_000).then((r) => {
    woke = true;
    return r;
  });
  await Promise.resolve();
  expect(woke).toBe(false);
  end();
  expect(await waiting).toBe(true);
  expect(await lc.waitFor(5, 10_000)).toBe(false);
});

it('a reader blocked on a lock of a commit in this process is woken when it commits, and sees it', async () => {
  // The commit stops between its primary prewrite and its commit: the reader meets the lock of a
  // live owner well within TTL, so before this it could only poll with sleeps.
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let paused!: () => void;
  const atGate = new Promise<void>((r) => (paused = r));
  const db = await Percolator.open({
    store: 'memory:',
    lockWaitMs: 10_000,
    commitProtocol: 'two-phase', // about readers meeting a stored lock of a local commit
    onProtocolPoint: async (p) => {
      if (p === 'before-primary-commit') {
        paused();
        await gate;
      }
    },
  });
  try {
    await db.createTable('t');
    const writing = db.transaction(async (tx) => tx.set('t', 'r', 'c:v', 'new'));
    await atGate;
    const snap = await db.snapshot();
    // Backoff sleeps are short timers (0.5–96 ms); a reader waiting on a local commit sets none.
    let reached!: (how: string) => void;
    const blocked = new Promise<string>((r) => (reached = r));
    const realSetTimeout = globalThis.setTimeout;
    let shortSleeps = 0;
    const timers = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
      if (typeof ms === 'number' && ms < 100) {
        shortSleeps++;
        reached('slept');
      }
      return realSetTimeout(fn, ms);
    }) as typeof setTimeout);
    const waits = vi.spyOn(LocalCommits.prototype, 'waitFor');
    waits.mockImplementation(async function (this: LocalCommits, startTs: number, maxMs: number) {
      reached('waited');
      waits.mockRestore();
      return this.waitFor(startTs, maxMs);
    });
    const read = snap.getString('t', 'r', 'c:v');
    expect(await blocked).toBe('waited');
    release();
    await writing;
    timers.mockRestore();
    expect(shortSleeps).toBe(0);
    // The writer took its commit timestamp before pausing, so the snapshot (started later) must
    // wait for the lock's outcome and then see the value.
    expect(await read).toBe('new');
    snap.release();
  } finally {
    await db.close();
  }
});
