/**
 * A change committed whose secondary commit never happened still notifies: the secondary's
 * prewrite set the notify cell at its start timestamp (prewrite.ts), so a worker finds the row,
 * its run meets the lock and rolls it forward, and quiescence waits for that.
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
async function commitCutAfterPrimary(): Promise<number> {
  const { writer, reached } = await frozenWriter({ store, oracle: db.oracle, point: 'after-primary-commit', leaseMs: 500 });
  let startTs = 0;
  void writer.transaction(async (tx) => {
    startTs = tx.startTs;
    tx.set('t', 'p', 'c:other', 'primary');
    tx.set('t', 's', 'c:in', 'x');
  });
  await reached;
  await writer.close();
  return startTs;
}

async function notifyTimestamps(row: string): Promise<number[]> {
  const r = await store.readRow('t', Buffer.from(row), { familyNameRegexFilter: 'notify' });
  return r?.cells.map((c) => c.timestamp) ?? [];
}

it('a secondary row of an observed column is notified at its prewrite; the primary row only at its commit', async () => {
  const worker = db.worker();
  worker.observe('c:in', 'unused', async () => undefined);
  worker.observe('c:other', 'unused too', async () => undefined);
  await worker.start();
  await worker.stop(); // both columns are observed; nothing runs
  const startTs = await commitCutAfterPrimary();
  expect(await notifyTimestamps('s')).toEqual([startTs]); // locked, committed, notified
  const [primaryNotify] = await notifyTimestamps('p');
  expect(primaryNotify).toBeGreaterThan(startTs); // its commit timestamp
  expect(await notifyTimestamps('p')).toHaveLength(1);
});

it('a worker runs the observer of a change whose secondary commit was cut off, and quiescence waits for it', async () => {
  const worker = db.worker({ threads: 2 });
  worker.observe('c:in', 'copy', async (tx, row) => {
    tx.set('t', row, 'c:out', (await tx.getString('t', row, 'c:in')) ?? '');
  });
  await worker.start();
  try {
    await commitCutAfterPrimary();
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(str(await db.get('t', 's', 'c:out'))).toBe('x');
    expect(worker.metrics.commits).toBe(1);
  } finally {
    await worker.stop();
  }
});
