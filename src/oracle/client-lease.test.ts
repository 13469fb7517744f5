/**
 * A registration's `held()` on the network client: what the client knows from its own reports
 * (acknowledged after the registration, within the lease), from the oracle's holdback, and what a
 * fresh report settles — against a server whose lease clock the test moves.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { leaseClocks, REPORT_INTERVAL_MS, STALL_MS, stallPastLease } from './lease-clock.fixture.js';
import type { ActiveRegistration } from './types.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function heldOf(reg: ActiveRegistration): boolean | Promise<boolean> {
  expect(reg.held).toBeTypeOf('function');
  return (reg.held as () => boolean | Promise<boolean>)();
}

describe('OracleClient registrations: held()', () => {
  it('held at once within the holdback; after it, a report settles it, and then its acknowledgement holds it for the lease', async () => {
    // A lease longer than the holdback, so that a report's lease outlasts it.
    const lease = 2 * REPORT_INTERVAL_MS;
    const s = await leaseClocks(cleanups, lease);
    await s.worker.getWatermark(); // acknowledged BEFORE the registration: it did not count it
    const reg = await s.worker.getStartTimestamp();
    expect(heldOf(reg)).toBe(true);
    s.clock.client += REPORT_INTERVAL_MS; // past the holdback the client counts on
    const asked = heldOf(reg);
    expect(asked).toBeInstanceOf(Promise);
    expect(await asked).toBe(true);
    expect(heldOf(reg)).toBe(true); // that report counted it: held until its lease runs out
    s.clock.client += lease;
    const again = heldOf(reg);
    expect(again).toBeInstanceOf(Promise);
    expect(await again).toBe(true);
    reg.release();
  });

  it('lost once a watermark above it was handed out while its lease had lapsed; known at once afterwards', async () => {
    const s = await leaseClocks(cleanups);
    const reg = await s.worker.getStartTimestamp();
    expect(await s.worker.getWatermark()).toBeLessThanOrEqual(reg.timestamp);
    // The worker stalls: no report for longer than the lease, while a GC process asks for the watermark.
    expect(await stallPastLease(s)).toBeGreaterThan(reg.timestamp);
    expect(await heldOf(reg)).toBe(false);
    expect(heldOf(reg)).toBe(false);
    // A registration made after that is held: the loss is this timestamp's, not the client's.
    const next = await s.worker.getStartTimestamp();
    expect(heldOf(next)).toBe(true);
    reg.release();
    next.release();
  });

  it('a lapsed lease with no watermark above it handed out meanwhile is still held (the report that settles it renews it)', async () => {
    const s = await leaseClocks(cleanups);
    const reg = await s.worker.getStartTimestamp();
    await s.worker.getWatermark();
    s.clock.client += STALL_MS;
    s.clock.server += STALL_MS; // the oracle dropped the lease, but nobody asked for a watermark
    const asked = heldOf(reg);
    expect(asked).toBeInstanceOf(Promise);
    expect(await asked).toBe(true);
    expect(await s.gc.getWatermarkOnly()).toBeLessThanOrEqual(reg.timestamp);
    reg.release();
  });

  it('registerActive (a timestamp not just issued) is held only once a report counted it', async () => {
    const s = await leaseClocks(cleanups);
    const ts = await s.worker.getTimestamp();
    const reg = s.worker.registerActive(ts);
    const asked = heldOf(reg);
    expect(asked).toBeInstanceOf(Promise);
    expect(await asked).toBe(true);
    expect(heldOf(reg)).toBe(true);
    reg.release();
  });

  it('an acknowledgement on a later connection (the oracle may have restarted) does not hold a registration from before it', async () => {
    const s = await leaseClocks(cleanups);
    const reg = await s.worker.getStartTimestamp();
    s.clock.client += REPORT_INTERVAL_MS; // past the holdback: only an acknowledgement could hold it
    await s.restart();
    const after = await s.worker.getStartTimestamp(); // reconnected
    expect(await s.worker.getWatermark()).toBeLessThanOrEqual(reg.timestamp); // the new oracle knows nothing higher
    expect(await heldOf(reg)).toBe(false);
    expect(heldOf(after)).toBe(true);
    reg.release();
    after.release();
  });

  it('registrations asking at once past the holdback (after a stall) share one report', async () => {
    const s = await leaseClocks(cleanups);
    const regs = await Promise.all(Array.from({ length: 5 }, () => s.worker.getStartTimestamp()));
    s.clock.client += REPORT_INTERVAL_MS;
    const before = s.requests();
    const asked = regs.map(heldOf);
    expect(await Promise.all(asked)).toEqual(regs.map(() => true));
    expect(s.requests() - before).toBe(1);
    // A report acknowledged before a registration does not count it: that one asks again.
    const late = s.worker.registerActive(await s.worker.getTimestamp());
    const afterLate = s.requests();
    expect(await heldOf(late)).toBe(true);
    expect(s.requests() - afterLate).toBe(1);
    for (const r of [...regs, late]) r.release();
  });

  it('an acknowledgement on a later connection to the same oracle (a network blip) holds a registration from before it', async () => {
    const s = await leaseClocks(cleanups);
    const reg = await s.worker.getStartTimestamp();
    s.clock.client += REPORT_INTERVAL_MS; // past the holdback: only an acknowledgement could hold it
    s.cut();
    const after = await s.worker.getStartTimestamp(); // reconnected, to the same oracle
    expect(await heldOf(reg)).toBe(true);
    expect(heldOf(after)).toBe(true);
    // Still lost once a watermark above it was handed out while its lease lapsed.
    expect(await stallPastLease(s)).toBeGreaterThan(reg.timestamp);
    s.cut();
    expect(await heldOf(reg)).toBe(false);
    expect(s.incarnationAsks()).toBe(3);
    reg.release();
    after.release();
  });

  it('a server from before INCARNATION: asked once, then every reconnection is taken for a restart', async () => {
    const s = await leaseClocks(cleanups, undefined, true);
    const reg = await s.worker.getStartTimestamp(); // works: the refusal cost one reconnection
    s.clock.client += REPORT_INTERVAL_MS;
    s.cut();
    const after = await s.worker.getStartTimestamp();
    expect(await heldOf(reg)).toBe(false);
    expect(heldOf(after)).toBe(true);
    expect(s.incarnationAsks()).toBe(1);
    reg.release();
    after.release();
  });

  it('the oracle out of reach: the promise rejects with its error', async () => {
    const s = await leaseClocks(cleanups);
    const reg = await s.worker.getStartTimestamp();
    s.clock.client += REPORT_INTERVAL_MS;
    await s.worker.close();
    await expect(heldOf(reg)).rejects.toMatchObject({ code: 'ORACLE_CLOSED' });
  });
});
