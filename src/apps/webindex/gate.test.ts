import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Percolator } from '../../txn/percolator.js';
import { KeyGate } from './gate.js';

let db: Percolator;
beforeEach(async () => {
  db = await Percolator.open({ store: 'memory:', leaseMs: 1000 });
  await db.createTable('t');
});
afterEach(async () => {
  await db.close();
});

describe('KeyGate', () => {
  it('lets transactions on disjoint keys in together', async () => {
    const gate = new KeyGate();
    const a = await db.begin();
    const b = await db.begin();
    expect(await gate.enter(a, ['k1', 'k2'])).toBe(true);
    expect(await gate.enter(b, ['k3'])).toBe(true);
    expect(gate.size).toBe(3);
    a.abort();
    b.abort();
    expect(gate.size).toBe(0);
    a.release();
    b.release();
  });

  it('makes a transaction sharing a key wait until the holder commits, then asks for a fresh snapshot', async () => {
    const gate = new KeyGate();
    const first = await db.begin();
    const second = await db.begin();
    expect(await gate.enter(first, ['k'])).toBe(true);
    let secondDone = false;
    const entering = gate.enter(second, ['k', 'other']).then((ok) => {
      secondDone = true;
      return ok;
    });
    await new Promise((r) => setImmediate(r));
    expect(secondDone).toBe(false);
    first.set('t', 'r', 'c:v', '1');
    await first.commit();
    expect(await entering).toBe(false);
    // Its snapshot predates the commit that went through the gate: still stale.
    expect(await gate.enter(second, ['k'])).toBe(false);
    second.abort();
    // A transaction started after that commit goes in.
    const third = await db.begin();
    expect(await gate.enter(third, ['k'])).toBe(true);
    third.abort();
    for (const t of [first, second, third]) t.release();
  });

  it('is released by an abort and by a failed commit', async () => {
    const gate = new KeyGate();
    const a = await db.begin();
    expect(await gate.enter(a, ['k'])).toBe(true);
    a.abort();
    const b = await db.begin();
    const c = await db.begin();
    c.set('t', 'r', 'c:v', 'c');
    await c.commit();
    expect(await gate.enter(b, ['k'])).toBe(true);
    b.set('t', 'r', 'c:v', 'b');
    await expect(b.commit()).rejects.toMatchObject({ code: 'WRITE_CONFLICT' });
    expect(gate.size).toBe(0);
    for (const t of [a, b, c]) t.release();
  });
});
