/**
 * A transaction whose row cannot be prewritten, committed or rolled back in one row mutation of
 * the store (its per-row limits, as Cloud Bigtable's) fails before anything is written: no lock
 * is left for readers to clean one per read. And a prewrite that fails in the store midway leaves
 * no lock either: the locks already written are rolled back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../store/errors.js';
import type { StoreLimits } from '../store/store.js';
import type { Row } from '../store/types.js';
import { isTxnError } from './errors.js';
import { LOCK } from './layout.js';
import { Percolator } from './percolator.js';
import { remoteLike } from './remote-like.fixture.js';
import { commitOrError } from './txn.fixture.js';

let db: Percolator | null = null;
afterEach(async () => {
  await db?.close();
  db = null;
});

async function open(protocol: 'auto' | 'two-phase', limits?: Partial<StoreLimits>): Promise<Percolator> {
  db = await Percolator.open({ store: 'memory:', commitProtocol: protocol, leaseMs: 500, ...(limits ? { storeOptions: { limits } } : {}) });
  await db.createTable('t');
  return db;
}

/** Every cell of table t, as stored (the transaction layer's system families included). */
async function rawTable(p: Percolator): Promise<Row[]> {
  const rows: Row[] = [];
  for await (const r of p.store.readRows('t')) rows.push(r);
  return rows;
}

async function lockedRows(p: Percolator): Promise<number> {
  let n = 0;
  for await (const _ of p.store.readRows('t', { filter: { familyNameRegexFilter: LOCK } })) n++;
  return n;
}

/** Writes `cells` columns c:0… of row `big`, and c:v of row `small`, the first one set being the primary. */
async function commitWide(p: Percolator, cells: number, bigFirst: boolean, value = (i: number) => `new${i}`): Promise<unknown> {
  const tx = await p.begin();
  if (!bigFirst) tx.set('t', 'small', 'c:v', 'new');
  for (let i = 0; i < cells; i++) tx.set('t', 'big', `c:${i}`, value(i));
  if (bigFirst) tx.set('t', 'small', 'c:v', 'new');
  return commitOrError(tx);
}

async function writeOld(p: Percolator): Promise<void> {
  await p.transaction(async (tx) => {
    tx.set('t', 'big', 'c:0', 'old');
    tx.set('t', 'small', 'c:v', 'old');
  });
}

const str = (v: Uint8Array | null) => (v === null ? null : Buffer.from(v).toString());

describe.each(['two-phase', 'auto'] as const)('per-row limits (commitProtocol %s)', (protocol) => {
  describe.each([
    ['primary', true],
    ['secondary', false],
  ] as const)('the wide row as the %s', (_, bigFirst) => {
    it('a 60 000-cell row (3 mutations a cell to roll back) is TOO_MANY_MUTATIONS before any lock, and readers see the old values', async () => {
      const p = await open(protocol);
      await writeOld(p);
      const before = await rawTable(p);
      const e = await commitWide(p, 60_000, bigFirst);
      expect(isTxnError(e, 'TOO_MANY_MUTATIONS')).toBe(true);
      expect(e).toMatchObject({
        retryable: false,
        details: {
          table: 't',
          row: new Uint8Array(Buffer.from('big')),
          cells: 60_000,
          limit: 100_000,
          prewrite: 60_000,
          commit: 120_000,
          rollBack: 180_000,
        },
      });
      // Nothing was written: no lock, no rollback record, nothing for a reader to clean.
      expect(await lockedRows(p)).toBe(0);
      expect(await rawTable(p)).toEqual(before);
      expect(str(await p.get('t', 'big', 'c:0'))).toBe('old');
      expect(str(await p.get('t', 'small', 'c:v'))).toBe('old');
      expect(await rawTable(p)).toEqual(before);
    });
  });

  it('a row exactly at the limit commits; one cell more is TOO_MANY_MUTATIONS', async () => {
    // Rolling a cell back takes 3 mutations: 100 cells need exactly the 300 allowed.
    const p = await open(protocol, { maxMutationsPerRow: 300 });
    await writeOld(p);
    const before = await rawTable(p);
    const e = await commitWide(p, 101, false);
    expect(e).toMatchObject({ code: 'TOO_MANY_MUTATIONS', details: { cells: 101, limit: 300, rollBack: 303 } });
    expect(await rawTable(p)).toEqual(before);
    const ts = await commitWide(p, 100, false);
    expect(typeof ts).toBe('number');
    expect(await lockedRows(p)).toBe(0);
    expect(str(await p.get('t', 'big', 'c:99'))).toBe('new99');
    expect(str(await p.get('t', 'small', 'c:v'))).toBe('new');
  });

  it('a value over the store limit is VALUE_TOO_LARGE before any lock; one at the limit commits', async () => {
    const p = await open(protocol, { maxValueBytes: 1024 });
    await writeOld(p);
    const before = await rawTable(p);
    const e = await commitWide(p, 3, false, (i) => (i === 2 ? 'x'.repeat(1025) : 'short'));
    expect(e).toMatchObject({
      code: 'VALUE_TOO_LARGE',
      retryable: false,
      details: { table: 't', row: new Uint8Array(Buffer.from('big')), column: 'c:2', size: 1025, limit: 1024 },
    });
    expect(await rawTable(p)).toEqual(before);
    expect(typeof (await commitWide(p, 3, false, (i) => (i === 2 ? 'x'.repeat(1024) : 'short')))).toBe('number');
    expect(str(await p.get('t', 'big', 'c:2'))).toBe('x'.repeat(1024));
  });
});

describe('a prewrite that fails in the store midway', () => {
  it.each([
    ['not applied', false],
    ['applied, its reply lost', true],
  ] as const)('(%s) rolls back the locks the transaction wrote', async (_, applied) => {
    const p = await open('two-phase');
    await p.transaction(async (tx) => {
      for (const r of ['p', 's1', 's2', 's3']) tx.set('t', r, 'c:v', 'old');
    });
    // A client whose prewrite of row s2 fails in the store (after being applied, or not).
    const inner = remoteLike(p.store).store;
    const store = new Proxy(inner, {
      get(target, name, receiver) {
        const v: unknown = Reflect.get(target, name, receiver);
        if (name !== 'checkAndMutateRow') return v;
        return async (...args: Parameters<typeof target.checkAndMutateRow>) => {
          if (Buffer.from(args[1]).toString() !== 's2') return target.checkAndMutateRow(...args);
          if (applied) await target.checkAndMutateRow(...args);
          throw new StoreError('IO_ERROR', 'connection reset (test)', {});
        };
      },
    });
    const client = await Percolator.open({ store, oracle: p.oracle, commitProtocol: 'two-phase', leaseMs: 500, lockTtlMs: 60_000 });
    try {
      const tx = await client.begin();
      for (const r of ['p', 's1', 's2', 's3']) tx.set('t', r, 'c:v', 'new');
      await expect(tx.commit()).rejects.toMatchObject({ code: 'IO_ERROR' });
      tx.release();
      // Every lock it wrote (s2's too, if applied) is gone: a reader elsewhere finds none to clean.
      expect(await lockedRows(p)).toBe(0);
      for (const r of ['p', 's1', 's2', 's3']) expect(str(await p.get('t', r, 'c:v'))).toBe('old');
    } finally {
      await client.close();
    }
  });
});
