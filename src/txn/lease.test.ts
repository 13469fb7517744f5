/**
 * Transactions and snapshots on a network oracle whose lease lapses (the worker stalls past it
 * while another process's GC pass gets a watermark above its start): reads fail with LEASE_LOST
 * instead of returning what GC collected, commits write nothing, and `db.transaction` runs again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { leaseClocks, stallPastLease } from '../oracle/lease-clock.fixture.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { isTxnError } from './errors.js';
import { Percolator } from './percolator.js';
import { remoteLike } from './remote-like.fixture.js';
import type { ProtocolPoint } from './transaction.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface World {
  readonly db: Percolator;
  /** Another process's Percolator over the same store, on the other oracle client (its GC). */
  readonly gcDb: Percolator;
  /** The worker stalls past its lease while `gcDb` asks for the watermark; returns it. */
  stall(): Promise<number>;
  /** Called at each protocol point of `db`'s commits. */
  onPoint: ((point: ProtocolPoint) => Promise<void>) | null;
}

async function world(kind: 'one-phase' | 'two-phase'): Promise<World> {
  const clocks = await leaseClocks(cleanups);
  const embedded = await openStore('memory:');
  cleanups.push(() => embedded.close());
  const store: Store = kind === 'two-phase' ? remoteLike(embedded).store : embedded;
  const w: World = {
    db: null as unknown as Percolator,
    gcDb: null as unknown as Percolator,
    stall: () => stallPastLease(clocks),
    onPoint: null,
  };
  const db = await Percolator.open({
    store,
    oracle: clocks.worker,
    gcIntervalMs: 0,
    onProtocolPoint: (p) => w.onPoint?.(p),
  });
  cleanups.push(() => db.close());
  const gcDb = await Percolator.open({ store, oracle: clocks.gc, gcIntervalMs: 0 });
  cleanups.push(() => gcDb.close());
  await db.createTable('t');
  return Object.assign(w, { db, gcDb });
}

const leaseLost = { code: 'LEASE_LOST', retryable: true };

describe.each(['one-phase', 'two-phase'] as const)('a lapsed lease (%s)', (kind) => {
  it('a snapshot read after it fails with LEASE_LOST, where GC collected the version it would read', async () => {
    const w = await world(kind);
    await w.db.transaction(async (tx) => tx.set('t', 'x', 'f:c', 'v0'));
    const snap = await w.db.snapshot();
    expect(await snap.getString('t', 'x', 'f:c')).toBe('v0');
    await w.db.transaction(async (tx) => tx.set('t', 'x', 'f:c', 'v1'));
    expect(await w.stall()).toBeGreaterThan(snap.startTs);
    const gc = await w.gcDb.collectGarbage();
    expect(gc.versionsRemoved).toBeGreaterThan(0); // v0, shadowed by v1 below the watermark
    await expect(snap.get('t', 'x', 'f:c')).rejects.toMatchObject(leaseLost);
    await expect(
      snap.getMany('t', [
        { row: 'x', column: 'f:c' },
        { row: 'y', column: 'f:c' },
      ]),
    ).rejects.toMatchObject(leaseLost);
    await expect(snap.getVersion('t', 'x', 'f:c')).rejects.toMatchObject(leaseLost);
    const rows = async () => {
      for await (const _ of snap.scan('t')) void _;
    };
    await expect(rows()).rejects.toMatchObject(leaseLost);
    snap.release();
  });

  it('a transaction that read before it commits nothing (LEASE_LOST)', async () => {
    const w = await world(kind);
    await w.db.transaction(async (tx) => tx.set('t', 'x', 'f:c', '1'));
    const tx = await w.db.begin();
    expect(await tx.getString('t', 'x', 'f:c')).toBe('1');
    tx.set('t', 'y', 'f:c', 'from x');
    tx.set('t', 'z', 'f:c', 'from x');
    await w.stall();
    await expect(tx.commit()).rejects.toMatchObject(leaseLost);
    tx.release();
    const after = await w.db.snapshot();
    expect(await after.get('t', 'y', 'f:c')).toBeNull();
    expect(await after.get('t', 'z', 'f:c')).toBeNull();
    after.release();
  });

  it('db.transaction runs the function again, at a new start timestamp, and commits once', async () => {
    const w = await world(kind);
    const starts: number[] = [];
    await w.db.transaction(async (tx) => {
      starts.push(tx.startTs);
      const n = Number((await tx.getString('t', 'n', 'f:c')) ?? '0');
      if (starts.length === 1) await w.stall();
      tx.set('t', 'n', 'f:c', String(n + 1));
    });
    expect(starts).toHaveLength(2);
    expect(starts[1]).toBeGreaterThan(starts[0] as number);
    expect(await w.db.get('t', 'n', 'f:c').then((v) => (v === null ? null : Buffer.from(v).toString()))).toBe('1');
  });
});

describe('a lease lapsing during a two-phase commit', () => {
  it('after the prewrites, before the commit point: rolled back, nothing committed, no lock left', async () => {
    const w = await world('two-phase');
    w.onPoint = async (p) => {
      if (p === 'mid-secondary-prewrites') await w.stall();
    };
    const tx = await w.db.begin();
    tx.set('t', 'a', 'f:c', '1');
    tx.set('t', 'b', 'f:c', '1');
    tx.set('t', 'c', 'f:c', '1');
    const err = await tx.commit().catch((e: unknown) => e);
    tx.release();
    expect(isTxnError(err) && err.code).toBe('LEASE_LOST');
    w.onPoint = null;
    // No lock in the way (a reader would wait for one) and no value: rolled back by the transaction itself.
    const rows: string[] = [];
    const snap = await w.db.snapshot();
    for await (const r of snap.scan('t')) rows.push(Buffer.from(r.row).toString());
    snap.release();
    expect(rows).toEqual([]);
    expect((await w.gcDb.collectGarbage()).locksResolved ?? 0).toBe(0);
  });
});
