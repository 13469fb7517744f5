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

  describe('extend', () => {
    it('adds keys to what a transaction holds, released with the rest', async () => {
      const gate = new KeyGate();
      const a = await db.begin();
      expect(await gate.enter(a, ['k1'])).toBe(true);
      expect(gate.extend(a, ['k1', 'k2', 'k2'])).toBe(true);
      expect(gate.size).toBe(2);
      const b = await db.begin();
      let entered = false;
      const entering = gate.enter(b, ['k2']).then((ok) => (entered = ok));
      await new Promise((r) => setImmediate(r));
      expect(entered).toBe(false);
      a.set('t', 'r', 'c:v', 'a');
      await a.commit();
      expect(gate.size).toBe(0);
      await entering;
      // b waited for a key a took by extend: a transaction that waited retries on a fresh snapshot.
      expect(entered).toBe(false);
      expect(() => gate.extend(a, ['k3'])).toThrow(/not inside the gate/);
      for (const t of [a, b]) t.release();
    });

    it('never waits: a key held by another transaction gives the promise of its release, and adds nothing', async () => {
      const gate = new KeyGate();
      const a = await db.begin();
      const b = await db.begin();
      expect(await gate.enter(a, ['ka'])).toBe(true);
      expect(await gate.enter(b, ['kb'])).toBe(true);
      // Each extends onto the other's key: neither may wait while holding its own (a deadlock).
      const fromA = gate.extend(a, ['kb', 'kc']);
      const fromB = gate.extend(b, ['ka']);
      expect(fromA).toBeInstanceOf(Promise);
      expect(fromB).toBeInstanceOf(Promise);
      expect(gate.size).toBe(2); // kc was not added
      let released = false;
      void (fromA as Promise<void>).then(() => (released = true));
      a.abort();
      await new Promise((r) => setImmediate(r));
      expect(released).toBe(false); // a's promise waits for b, which still holds kb
      b.abort();
      await fromA;
      await fromB;
      expect(gate.size).toBe(0);
      for (const t of [a, b]) t.release();
    });

    it('asks for a fresh snapshot when a key was committed through the gate after the transaction started', async () => {
      const gate = new KeyGate();
      const old = await db.begin();
      expect(await gate.enter(old, ['k1'])).toBe(true);
      const other = await db.begin();
      expect(await gate.enter(other, ['k2'])).toBe(true);
      other.set('t', 'r', 'c:v', 'other');
      await other.commit();
      expect(gate.extend(old, ['k2'])).toBe(false);
      expect(gate.size).toBe(1);
      old.abort();
      for (const t of [old, other]) t.release();
    });
  });
});
