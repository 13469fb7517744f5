/**
 * Regression test for a race in weak notifications, found while building the web index.
 *
 * The race (fixed): `Transaction.commit` wrote weak notify cells before the commit point, at a
 * timestamp N taken before the commit timestamp C. A worker that sees the notify cell in between
 * starts the observer at S with N < S < C: the observer cannot see the transaction's data (its
 * commit is after S), yet the worker then clears every notify cell up to N — the notification is
 * consumed and the change is never observed.
 *
 * Now weak notify cells carry the commit timestamp C itself, so a run that sees one starts above C
 * and meets the writer's lock or its committed data. (The race needs a notify cell written before
 * the commit point, i.e. a two-phase commit: a one-phase commit writes its weak notifications in
 * its own atomic write — the second test.)
 */
import { expect, it } from 'vitest';
import { openStore } from '../store/open-store.js';
import { Percolator } from '../txn/percolator.js';

function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

it('a weak notification is never consumed by a run that cannot see the notifying transaction', async () => {
  const store = await openStore('memory:');
  const db = await Percolator.open({ store, leaseMs: 1_000 });
  await db.createTable('docs');
  const gate = signal();
  const paused = signal();
  let pauseNext = false;
  // A second client on the same store and oracle whose commit we can hold just before the commit point.
  const writer = await Percolator.open({
    store,
    oracle: db.oracle,
    leaseMs: 1_000,
    commitProtocol: 'two-phase',
    onProtocolPoint: async (p) => {
      if (p === 'before-primary-commit' && pauseNext) {
        pauseNext = false;
        paused.resolve();
        await gate.promise;
      }
    },
  });
  const seen: (string | null)[] = [];
  const ran = signal();
  const worker = db.worker();
  worker.observe('doc:ping', 'reader', async (tx, row) => {
    // This run's start timestamp is after the notify cell's and before the writer's commit.
    ran.resolve();
    seen.push(await tx.getString('docs', row, 'doc:data'));
  });
  await worker.start();
  try {
    pauseNext = true;
    const committing = writer.transaction(async (tx) => {
      tx.set('docs', 'r', 'doc:data', 'v1');
      tx.notify('docs', 'r', 'doc:ping');
    });
    await paused.promise;
    // The notify cell is visible now; the data is not committed yet. An observer run starts.
    await ran.promise;
    // Let the writer commit (its commit timestamp is after the run's start timestamp).
    gate.resolve();
    await committing;
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    // Expected: some run of the observer saw the committed data.
    expect(seen).toContain('v1');
  } finally {
    gate.resolve();
    await worker.stop();
    await writer.close();
    await db.close();
    await store.close();
  }
});

it('a one-phase commit writes its weak notifications in its own write: none before it, none if it is vetoed', async () => {
  const store = await openStore('memory:');
  const paused = signal();
  const gate = signal();
  let pauseNext = false;
  const db = await Percolator.open({
    store,
    leaseMs: 1_000,
    onProtocolPoint: async (p) => {
      if (p === 'before-primary-commit' && pauseNext) {
        pauseNext = false;
        paused.resolve();
        await gate.promise;
      }
    },
  });
  const notifyCells = async (row: string) =>
    (await store.readRow('docs', Buffer.from(row), { familyNameRegexFilter: '^notify$' }))?.cells.length ?? 0;
  try {
    await db.createTable('docs');
    pauseNext = true;
    const committing = db.transaction(async (tx) => {
      tx.set('docs', 'r', 'doc:data', 'v1');
      tx.notify('docs', 'other', 'doc:ping');
    });
    await paused.promise;
    // At the last protocol point before the commit's write, the notification is not in the store.
    expect(await notifyCells('other')).toBe(0);
    gate.resolve();
    await committing;
    expect(await notifyCells('other')).toBe(1);

    // A commit that loses a write-write conflict leaves no notification behind.
    const loser = await db.begin();
    await db.transaction(async (tx) => tx.set('docs', 'r', 'doc:data', 'v2'));
    loser.set('docs', 'r', 'doc:data', 'v3');
    loser.notify('docs', 'third', 'doc:ping');
    await expect(loser.commit()).rejects.toMatchObject({ code: 'WRITE_CONFLICT' });
    loser.release();
    expect(await notifyCells('third')).toBe(0);
  } finally {
    gate.resolve();
    await db.close();
    await store.close();
  }
});
