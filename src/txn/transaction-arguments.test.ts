/**
 * The public transaction API (Transaction, Snapshot, Percolator's reads) called from JavaScript
 * with arguments of the wrong type: each is a TxnError with a stable code (INVALID_ARGUMENT,
 * INVALID_VALUE, INVALID_COLUMN) at the call, never a TypeError, a store error about a table
 * named "5", or a write that fails only at commit — and nothing commits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Percolator } from './percolator.js';
import type { Snapshot, Transaction } from './transaction.js';
import { failure } from '../util/failure.fixture.js';

let db: Percolator;

beforeAll(async () => {
  db = await Percolator.open({ store: 'memory:' });
  await db.createTable('t');
  await db.transaction(async (tx) => tx.set('t', 'r', 'c:v', 'committed'));
});

afterAll(() => db.close());

const any = <T>(x: unknown): T => x as T;

const cyclic: Record<string, unknown> = {};
cyclic.self = cyclic;

describe('a transaction', () => {
  it.each<[string, string, (tx: Transaction) => unknown]>([
    ['setJson of undefined', 'INVALID_VALUE', (tx) => tx.setJson('t', 'r', 'c:v', undefined)],
    ['setJson of a function', 'INVALID_VALUE', (tx) => tx.setJson('t', 'r', 'c:v', () => 1)],
    ['setJson of a symbol', 'INVALID_VALUE', (tx) => tx.setJson('t', 'r', 'c:v', Symbol('s'))],
    ['setJson of a BigInt', 'INVALID_VALUE', (tx) => tx.setJson('t', 'r', 'c:v', 1n)],
    ['setJson of an object holding a BigInt', 'INVALID_VALUE', (tx) => tx.setJson('t', 'r', 'c:v', { n: 1n })],
    ['setJson of a cyclic object', 'INVALID_VALUE', (tx) => tx.setJson('t', 'r', 'c:v', cyclic)],
    ['set with a table that is a number', 'INVALID_ARGUMENT', (tx) => tx.set(any(5), 'r', 'c:v', 'x')],
    ['setJson with a table that is undefined', 'INVALID_ARGUMENT', (tx) => tx.setJson(any(undefined), 'r', 'c:v', 1)],
    ['delete with a table that is an object', 'INVALID_ARGUMENT', (tx) => tx.delete(any({}), 'r', 'c:v')],
    ['delete with a column that is a number', 'INVALID_COLUMN', (tx) => tx.delete('t', 'r', any(5))],
    ['notify with a table that is a number', 'INVALID_ARGUMENT', (tx) => tx.notify(any(5), 'r', 'c:v')],
    ['get with a table that is a number', 'INVALID_ARGUMENT', (tx) => tx.get(any(5), 'r', 'c:v')],
    ['get with a column that is a number', 'INVALID_COLUMN', (tx) => tx.get('t', 'r', any(5))],
    ['get with a row that is an object', 'INVALID_ARGUMENT', (tx) => tx.get('t', any({}), 'c:v')],
    ['getVersion with a table that is null', 'INVALID_ARGUMENT', (tx) => tx.getVersion(any(null), 'r', 'c:v')],
    ['getMany with an entry that is null', 'INVALID_ARGUMENT', (tx) => tx.getMany('t', any([null, { row: 'r', column: 'c:v' }]))],
    ['getMany with a row that is a number', 'INVALID_ARGUMENT', (tx) => tx.getMany('t', any([{ row: 5, column: 'c:v' }, { row: 'r' }]))],
    ['scan with a range that is a number', 'INVALID_ARGUMENT', (tx) => tx.scan('t', any(5))],
    ['scan with a range that is null', 'INVALID_ARGUMENT', (tx) => tx.scan('t', any(null))],
    ['scan with options that are null', 'INVALID_ARGUMENT', (tx) => tx.scan('t', {}, any(null))],
    ['scan with columns that are a string', 'INVALID_ARGUMENT', (tx) => tx.scan('t', {}, { columns: any('c:v') })],
    ['scan with a column that is a number', 'INVALID_COLUMN', (tx) => tx.scan('t', {}, { columns: any([5]) })],
    ['scan with a table that is a number', 'INVALID_ARGUMENT', (tx) => tx.scan(any(5))],
  ])('%s is a TxnError %s, and nothing commits', async (_what, code, call) => {
    let thrown = '';
    await db.transaction(async (tx) => {
      thrown = await failure(() => call(tx));
      tx.set('t', 'r', 'c:v', 'committed'); // the transaction goes on: the bad call wrote nothing
    });
    expect(thrown).toBe(`TxnError ${code}`);
    expect(await db.getString('t', 'r', 'c:v')).toBe('committed');
  });

  it('with writes buffered, a bad scan range or options are typed errors too', async () => {
    const tx = await db.begin();
    try {
      tx.set('t', 'mine', 'c:v', 'x');
      expect(await failure(() => tx.scan('t', any(null)))).toBe('TxnError INVALID_ARGUMENT');
      expect(await failure(() => tx.scan('t', {}, any(null)))).toBe('TxnError INVALID_ARGUMENT');
      expect(await failure(() => tx.scan('t', {}, { columns: any([5]) }))).toBe('TxnError INVALID_COLUMN');
    } finally {
      tx.abort();
      tx.release();
    }
  });
});

describe('a snapshot and the Percolator reads', () => {
  it.each<[string, string, (snap: Snapshot) => unknown]>([
    ['get with a table that is a number', 'INVALID_ARGUMENT', (s) => s.get(any(5), 'r', 'c:v')],
    ['getString with a column that is undefined', 'INVALID_COLUMN', (s) => s.getString('t', 'r', any(undefined))],
    ['scan with a range that is a number', 'INVALID_ARGUMENT', (s) => s.scan('t', any(5))],
  ])('snapshot %s is a TxnError %s', async (_what, code, call) => {
    const snap = await db.snapshot();
    try {
      expect(await failure(() => call(snap))).toBe(`TxnError ${code}`);
    } finally {
      snap.release();
    }
  });

  it('db.get with a row that is a number or an object is a TxnError INVALID_ARGUMENT (it was a StoreError of the store)', async () => {
    expect(await failure(() => db.get('t', any(5), 'c:v'))).toBe('TxnError INVALID_ARGUMENT');
    expect(await failure(() => db.getJson('t', any({}), 'c:v'))).toBe('TxnError INVALID_ARGUMENT');
  });

  it('db.get with a table that is a number is a TxnError INVALID_ARGUMENT (it was the store\'s TABLE_NOT_FOUND for table "5")', async () => {
    expect(await failure(() => db.get(any(5), 'r', 'c:v'))).toBe('TxnError INVALID_ARGUMENT');
  });
});

describe('db.transaction', () => {
  it.each<[string, () => unknown]>([
    ['a body that is not a function', () => db.transaction(any('not a function'))],
    ['a body that is null', () => db.transaction(any(null))],
    ['options that are null', () => db.transaction(async () => undefined, any(null))],
    ['a baseBackoffMs that is NaN', () => db.transaction(async () => undefined, { baseBackoffMs: NaN })],
    ['a maxBackoffMs below 0', () => db.transaction(async () => undefined, { maxBackoffMs: -1 })],
  ])('with %s is a TxnError INVALID_ARGUMENT, and runs nothing', async (_what, call) => {
    const before = await db.get('t', 'r', 'c:v');
    expect(await failure(call)).toBe('TxnError INVALID_ARGUMENT');
    expect(await db.get('t', 'r', 'c:v')).toEqual(before);
  });
});
