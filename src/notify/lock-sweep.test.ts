/**
 * A change committed whose secondary commit never happened notifies nobody until its lock is
 * rolled forward: the lock sweep does that, and quiescence waits for it.
 *
 * Found by test/webindex-crash.test.ts through a network that resets connections: a cluster's
 * new state was committed (its primary on a document row), the commit of its `clusters` row was
 * cut off, no reader came by — the export never ran, and the pipeline was declared quiescent.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { frozenWriter } from '../txn/frozen-writer.fixture.js';
import { Percolator } from '../txn/percolator.js';
import { countNotifyingLocks, sweepLocks } from './lock-sweep.js';

let store: Store;
let db: Percolator;
beforeEach(async () => {
  store = await openStore('memory:');
  db = await Percolator.open({ store, leaseMs: 500 });
  await db.createTable('t');
});
afterEach(async () => {
  await db.close();
});

const str = (v: Uint8Array | null) => (v === null ? null : Buffer.from(v).toString());

/** A client that stops for good right after its commit point: primary `p` committed, `s c:in` still locked. */
async function commitCutAfterPrimary(): Promise<void> {
  const { writer, reached } = await frozenWriter({ store, oracle: db.oracle, point: 'after-primary-commit', leaseMs: 500 });
  void writer.transaction(async (tx) => {
    tx.set('t', 'p', 'c:other', 'primary');
    tx.set('t', 's', 'c:in', 'x');
  });
  await reached;
  await writer.close();
}

async function notifyCells(row: string): Promise<number> {
  const r = await store.readRow('t', Buffer.from(row), { familyNameRegexFilter: 'notify' });
  return r?.cells.length ?? 0;
}

it('rolls a committed change forward, so its notification exists', async () => {
  const worker = db.worker();
  worker.observe('c:in', 'unused', async () => undefined); // c:in is observed: its locks notify
  await worker.start();
  await worker.stop();
  await commitCutAfterPrimary();
  expect(await notifyCells('s')).toBe(0);
  expect(await countNotifyingLocks(store, 't')).toBe(1);
  const ctx = { liveness: { isAlive: async () => false }, nowMs: Date.now };
  expect(await sweepLocks(store, 't', ctx, 60_000)).toEqual({ committed: 0, rolledBack: 0, left: 1 }); // too young
  expect(await sweepLocks(store, 't', ctx, 0)).toEqual({ committed: 1, rolledBack: 0, left: 0 });
  expect(await notifyCells('s')).toBe(1);
  expect(await countNotifyingLocks(store, 't')).toBe(0);
});

it('a worker runs the observer of such a change, and quiescence waits for it', async () => {
  const worker = db.worker({ threads: 2 });
  worker.observe('c:in', 'copy', async (tx, row) => {
    tx.set('t', row, 'c:out', (await tx.getString('t', row, 'c:in')) ?? '');
  });
  await worker.start();
  try {
    await commitCutAfterPrimary();
    expect(await db.pendingNotifications()).toBe(1); // the lock
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(str(await db.get('t', 's', 'c:out'))).toBe('x');
    expect(worker.metrics.sweptLocks).toBe(1);
  } finally {
    await worker.stop();
  }
});
