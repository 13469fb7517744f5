/**
 * Version GC drops a delete record once the watermark passes it (gc.ts, gc-recent.ts) — but not
 * while a strong notification of the column is pending. An observer decides whether a change is
 * new by comparing the column's visible commit with its ack: with the delete record gone it would
 * find no commit at all, take the deletion for one already processed, and never run for it.
 */
import { afterEach, expect, it } from 'vitest';
import { openStore } from '../store/open-store.js';
import { Percolator } from '../txn/percolator.js';
import { remoteLike } from '../txn/remote-like.fixture.js';

let db: Percolator;
afterEach(async () => {
  await db.close();
});

// An embedded store answers GC's reads of notify cells from its cached row; a remote one
// (bigtable://, here the fixture that hides the embedded extension) through a filtered read.
for (const [pass, store] of [
  ['full', 'embedded'],
  ['targeted', 'embedded'],
  ['full', 'remote'],
  ['targeted', 'remote'],
] as const) {
  it(`an observed column's delete stays until its observer has run, then goes (${pass} pass, ${store} store)`, async () => {
    const inner = await openStore('memory:');
    // Commits tracked for targeted passes, no background tick.
    db = await Percolator.open({ store: store === 'embedded' ? inner : remoteLike(inner).store, leaseMs: 500, gcIntervalMs: 3_600_000 });
    await db.createTable('t');
    const seen: (string | null)[] = [];
    const worker = db.worker({ threads: 1 });
    worker.observe('c:in', 'mirror', async (tx, row) => {
      const v = await tx.getString('t', row, 'c:in');
      seen.push(v);
      tx.set('t', row, 'c:out', v ?? 'deleted');
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('t', 'r', 'c:in', 'first'));
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(seen).toEqual(['first']);

    await worker.stop(); // the deletion waits, notified, for the next start
    await db.transaction(async (tx) => tx.delete('t', 'r', 'c:in'));
    const collect = () => (pass === 'full' ? db.collectGarbage() : db.collectRecentGarbage());
    const inRecords = async () =>
      (await db.store.readRow('t', Buffer.from('r'), { familyNameRegexFilter: 'write' }))?.cells.filter(
        (c) => Buffer.from(c.qualifier).toString() === 'c:in',
      ).length ?? 0;
    await collect();
    expect(await inRecords()).toBe(1); // the put went; the delete, notified, stays

    await worker.start();
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(seen).toEqual(['first', null]);
    expect(await db.getString('t', 'r', 'c:out')).toBe('deleted');
    await worker.stop();

    // Processed: the next pass of either kind drops it (a targeted pass left it to the full pass).
    await db.collectGarbage();
    expect(await inRecords()).toBe(0);
    expect(await db.getString('t', 'r', 'c:in')).toBeNull();
  });
}
