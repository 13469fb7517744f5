/**
 * The public API (src/index.ts, `percolator/server`, `percolator/bigtable`) called from JavaScript
 * with bad input — wrong types, NaN, negative or fractional numbers, Infinity, empty strings,
 * misspelt option names, calls after close. Each case is a typed error with a stable code (its
 * class and code asserted here) at the call: never a TypeError from deep inside, a hang, an input
 * ignored without a word, or data lost. The argument checks of transactions themselves are in
 * src/txn/transaction-arguments.test.ts, the store's mutations and filters in src/store/*.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Percolator, type Worker } from '../src/index.js';

const any = <T>(x: unknown): T => x as T;

/** What `fn` threw or rejected with (an async iterable is drained): `Class CODE`, or 'no error'. */
async function failure(fn: () => unknown): Promise<string> {
  try {
    const r = fn();
    if (r !== null && typeof r === 'object' && Symbol.asyncIterator in r) for await (const _ of r as AsyncIterable<unknown>);
    else await r;
  } catch (e) {
    return `${(e as Error).constructor.name} ${String((e as { code?: unknown }).code)}`;
  }
  return 'no error';
}

/** The error `fn` threw or rejected with (for its message and details). */
async function errorOf(fn: () => unknown): Promise<{ message: string; details?: Record<string, unknown> }> {
  try {
    await fn();
  } catch (e) {
    return e as { message: string; details?: Record<string, unknown> };
  }
  throw new Error('no error');
}

let db: Percolator;

beforeAll(async () => {
  db = await Percolator.open({ store: 'memory:' });
  await db.createTable('t');
  await db.transaction(async (tx) => tx.set('t', 'r', 'c:v', 'committed'));
});

afterAll(() => db.close({ graceMs: 0 }));

describe('db.worker(options)', () => {
  it.each<[string, unknown]>([
    ['maxFailures NaN', { maxFailures: NaN }],
    ['maxFailures 0', { maxFailures: 0 }],
    ['maxFailures 1.5', { maxFailures: 1.5 }],
    ['maxFailures "3"', { maxFailures: '3' }],
    ['rowLockTtlMs NaN', { rowLockTtlMs: NaN }],
    ['rowLockTtlMs 0', { rowLockTtlMs: 0 }],
    ['rowLockTtlMs -1', { rowLockTtlMs: -1 }],
    ['rowLockTtlMs Infinity', { rowLockTtlMs: Infinity }],
    ['rowLockTtlMs "5000"', { rowLockTtlMs: '5000' }],
    ['weakDelayMs NaN', { weakDelayMs: NaN }],
    ['weakDelayMs -5', { weakDelayMs: -5 }],
    ['weakDelayMs Infinity', { weakDelayMs: Infinity }],
    ['weakDelayMs "10"', { weakDelayMs: '10' }],
    ['log a string', { log: 'console' }],
    ['log an object', { log: {} }],
    ['threads NaN', { threads: NaN }],
    ['busyUtilization "0.5"', { busyUtilization: '0.5' }],
    ['a misspelt option (thread)', { thread: 8 }],
    ['a misspelt option (stopGrace)', { stopGrace: 0 }],
    ['options that are a number', 5],
  ])('%s is a TxnError INVALID_ARGUMENT', async (_what, options) => {
    expect(await failure(() => db.worker(any(options)))).toBe('TxnError INVALID_ARGUMENT');
  });

  it('names the option and its value in details', async () => {
    expect((await errorOf(() => db.worker(any({ rowLockTtlMs: NaN })))).details).toEqual({ option: 'rowLockTtlMs', value: NaN });
    const e = await errorOf(() => db.worker(any({ thread: 8 })));
    expect(e.details).toEqual({ option: 'thread' });
    expect(e.message).toContain('threads');
  });
});

describe('worker.observe, worker.stop', () => {
  const fn = async (): Promise<void> => undefined;
  it.each<[string, (w: Worker) => unknown]>([
    ['observe with a name that is a number', (w) => w.observe('c:v', any(5), fn)],
    ['observe with a body that is not a function', (w) => w.observe('c:v', 'o', any('fn'))],
    ['observe with options that are null', (w) => w.observe('c:v', 'o', fn, any(null))],
    ['observe with a misspelt option (tabel)', (w) => w.observe('c:v', 'o', fn, any({ tabel: 't' }))],
    ['observe with a collapseMs that is NaN', (w) => w.observe('c:v', 'o', fn, { collapseMs: NaN })],
    ['stop with a misspelt option (grace)', (w) => w.stop(any({ grace: 0 }))],
    ['stop with a graceMs that is Infinity', (w) => w.stop({ graceMs: Infinity })],
  ])('%s is a TxnError INVALID_ARGUMENT', async (_what, call) => {
    const w = db.worker();
    expect(await failure(() => call(w))).toBe('TxnError INVALID_ARGUMENT');
  });

  it('observe with a column that is a number is a TxnError INVALID_COLUMN', async () => {
    expect(await failure(() => db.worker().observe(any(5), 'o', fn))).toBe('TxnError INVALID_COLUMN');
  });
});

describe('worker.hint', () => {
  let worker: Worker;
  beforeAll(async () => {
    worker = db.worker({ threads: 1, scanners: 1 });
    worker.observe('c:v', 'hinted', async () => undefined, { table: 't' });
    await worker.start();
  });
  afterAll(() => worker.stop({ graceMs: 0 }));

  it.each<[string, (w: Worker) => void]>([
    // Was dropped without a word: the table matched no observer.
    ['a table that is a number', (w) => w.hint(any(5), 'r')],
    ['a table that is undefined', (w) => w.hint(any(undefined), 'r')],
    // Were TypeErrors from Buffer.from.
    ['a row that is a number', (w) => w.hint('t', any(5))],
    ['a row that is null', (w) => w.hint('t', any(null))],
    ['a row that is an object', (w) => w.hint('t', any({}))],
    // Was queued for a run that could only fail.
    ['an empty row', (w) => w.hint('t', '')],
    ['an empty row of bytes', (w) => w.hint('t', new Uint8Array(0))],
    ['a mayWait that is a string', (w) => w.hint('t', 'r', any('yes'))],
  ])('with %s is a TxnError INVALID_ARGUMENT', async (_what, call) => {
    expect(await failure(() => call(worker))).toBe('TxnError INVALID_ARGUMENT');
  });

  it('of a valid row still takes it (a table nobody observes is not an error)', async () => {
    const before = worker.metrics.hinted;
    worker.hint('t', 'r');
    worker.hint('elsewhere', 'r');
    await expect.poll(() => worker.metrics.hinted).toBe(before + 1);
  });
});
