/**
 * The public API (src/index.ts, `percolator/server`, `percolator/bigtable`) called from JavaScript
 * with bad input — wrong types, NaN, negative or fractional numbers, Infinity, empty strings,
 * misspelt option names, calls after close. Each case is a typed error with a stable code (its
 * class and code asserted here) at the call: never a TypeError from deep inside, a hang, an input
 * ignored without a word, or data lost. The argument checks of transactions themselves are in
 * src/txn/transaction-arguments.test.ts, the store's mutations and filters in src/store/*.test.ts.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FileMarkStore,
  InProcessLockService,
  MemoryMarkStore,
  Oracle,
  OracleClient,
  Percolator,
  type Store,
  StoreMarkStore,
  type Transaction,
  type Worker,
  collectRows,
  openStore,
  startOracleServer,
} from '../src/index.js';
import { BigtableStore } from '../src/store/bigtable/index.js';
import { NetworkLockService, startServer } from '../src/server/index.js';
import { failure } from '../src/util/failure.fixture.js';

const any = <T>(x: unknown): T => x as T;

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

/** A temporary directory for `file:` stores, removed after the file's tests. */
const dir = mkdtempSync(join(tmpdir(), 'api-bad-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Percolator.open(options)', () => {
  it.each<[string, string, unknown]>([
    ['a store that is null', 'INVALID_CONFIG', { store: null }],
    ['a store that is an empty object', 'INVALID_CONFIG', { store: {} }],
    ['an oracle that is a number', 'INVALID_CONFIG', { store: 'memory:', oracle: 5 }],
    ['an oracle without its methods', 'INVALID_CONFIG', { store: 'memory:', oracle: { getTimestamp: () => 1 } }],
    ['a lockService that is a string', 'INVALID_CONFIG', { store: 'memory:', lockService: 'localhost:1' }],
    ['a nowMs that is a number', 'INVALID_CONFIG', { store: 'memory:', nowMs: 5 }],
    ['an onProtocolPoint that is a string', 'INVALID_CONFIG', { store: 'memory:', onProtocolPoint: 'log' }],
    ['a misspelt option (lockTtl)', 'INVALID_CONFIG', { store: 'memory:', lockTtl: 5 }],
    ['a misspelt option (gcInterval)', 'INVALID_CONFIG', { store: 'memory:', gcInterval: 0 }],
    ['storeOptions beside an open Store', 'INVALID_CONFIG', { store: 'open', storeOptions: { cacheBytes: 0 } }],
    ['storeOptions that are a number', 'StoreError INVALID_ARGUMENT', { store: 'memory:', storeOptions: 5 }],
    ['storeOptions that are null', 'StoreError INVALID_ARGUMENT', { store: 'memory:', storeOptions: null }],
    ['storeOptions with a misspelt option', 'StoreError INVALID_ARGUMENT', { store: 'memory:', storeOptions: { cacheByte: 0 } }],
  ])('with %s is %s', async (_what, code, options) => {
    const store = await openStore('memory:');
    const o = options as { store?: unknown };
    const opened = await Percolator.open(any(o.store === 'open' ? { ...o, store } : o)).catch((e: unknown) => e);
    await store.close();
    if (opened instanceof Percolator) await opened.close();
    expect(`${(opened as Error).constructor.name} ${String((opened as { code?: unknown }).code)}`).toBe(
      code.includes(' ') ? code : `TxnError ${code}`,
    );
  });

  it('names the option in details', async () => {
    expect((await errorOf(() => Percolator.open(any({ store: 'memory:', oracle: 5 })))).details).toEqual({ option: 'oracle' });
    expect((await errorOf(() => Percolator.open(any({ store: 'memory:', lockTtl: 5 })))).details).toEqual({ option: 'lockTtl' });
  });

  it('on file: with bad storeOptions creates nothing', async () => {
    const at = join(dir, 'refused');
    expect(await failure(() => Percolator.open({ store: `file:${at}`, storeOptions: any({ level: { create: 'no' } }) }))).toBe(
      'StoreError INVALID_ARGUMENT',
    );
    expect(await failure(() => Percolator.open({ store: `file:${at}`, storeOptions: any({ level: { creat: false } }) }))).toBe(
      'StoreError INVALID_ARGUMENT',
    );
    expect(() => readdirSync(at)).toThrow(); // never created
  });
});

describe('the Percolator methods', () => {
  it.each<[string, () => unknown]>([
    ['transaction with a misspelt option (maxAttemps)', () => db.transaction(async () => undefined, any({ maxAttemps: 1 }))],
    // A string made the deadline a concatenation: a wait of centuries.
    ['waitForQuiescence with a timeoutMs that is a string', () => db.waitForQuiescence({ timeoutMs: any('5') })],
    ['waitForQuiescence with a timeoutMs that is Infinity', () => db.waitForQuiescence({ timeoutMs: Infinity })],
    ['waitForQuiescence with a misspelt option (timeout)', () => db.waitForQuiescence(any({ timeout: 5 }))],
    ['collectRecentGarbage with NaN cells', () => db.collectRecentGarbage(NaN)],
    ['collectRecentGarbage with -1 cells', () => db.collectRecentGarbage(-1)],
    ['collectRecentGarbage with a string', () => db.collectRecentGarbage(any('10'))],
    ['percolatorTables with a maxAgeMs that is NaN', () => db.percolatorTables(NaN)],
  ])('%s is a TxnError INVALID_ARGUMENT', async (_what, call) => {
    expect(await failure(call)).toBe('TxnError INVALID_ARGUMENT');
    expect(await db.getString('t', 'r', 'c:v')).toBe('committed'); // still open, nothing changed
  });

  it.each<[string, unknown]>([
    ['options that are null', null],
    ['a misspelt option (grace)', { grace: 0 }],
  ])('close with %s is a TxnError INVALID_ARGUMENT, and closes nothing', async (_what, options) => {
    const own = await Percolator.open({ store: 'memory:' });
    expect(await failure(() => own.close(any(options)))).toBe('TxnError INVALID_ARGUMENT');
    expect(await failure(() => own.createTable('t'))).toBe('no error');
    await own.close();
  });

  it("after close, every method is TXN_FINISHED (pendingNotifications was the store's STORE_CLOSED, percolatorTables answered)", async () => {
    const closed = await Percolator.open({ store: 'memory:' });
    await closed.createTable('t');
    await closed.close();
    for (const call of [
      () => closed.get('t', 'r', 'c:v'),
      () => closed.getString('t', 'r', 'c:v'),
      () => closed.transaction(async () => undefined),
      () => closed.snapshot(),
      () => closed.begin(),
      () => closed.createTable('u'),
      () => closed.worker(),
      () => closed.waitForQuiescence(),
      () => closed.pendingNotifications(),
      () => closed.percolatorTables(),
      () => closed.collectGarbage(),
      () => closed.collectRecentGarbage(),
    ]) {
      expect(await failure(call)).toBe('TxnError TXN_FINISHED');
    }
    await closed.close(); // a second close is no error
  });
});

describe('an empty row key', () => {
  it.each<[string, (tx: Transaction) => unknown]>([
    // Writes were TxnError INVALID_COLUMN ("empty row key") where reads are the store's EMPTY_ROW_KEY.
    ['set', (tx) => tx.set('t', '', 'c:v', 'x')],
    ['set of empty bytes', (tx) => tx.set('t', new Uint8Array(0), 'c:v', 'x')],
    ['setJson', (tx) => tx.setJson('t', '', 'c:v', 1)],
    ['delete', (tx) => tx.delete('t', '', 'c:v')],
    ['notify', (tx) => tx.notify('t', '', 'c:v')],
    ['get', (tx) => tx.get('t', '', 'c:v')],
  ])('in %s is a StoreError EMPTY_ROW_KEY naming the table, and nothing commits', async (_what, call) => {
    let thrown = '';
    let details: unknown;
    await db.transaction(async (tx) => {
      thrown = await failure(() => call(tx));
      details = (await errorOf(() => call(tx))).details;
      tx.set('t', 'r', 'c:v', 'committed');
    });
    expect(thrown).toBe('StoreError EMPTY_ROW_KEY');
    expect(details).toEqual({ table: 't' });
    expect(await db.getString('t', 'r', 'c:v')).toBe('committed');
  });
});

describe('scan ranges and options', () => {
  beforeAll(async () => {
    await db.transaction(async (tx) => {
      tx.set('t', 'a1', 'c:v', 'x');
      tx.set('t', 'b1', 'c:v', 'y');
    });
  });

  it.each<[string, unknown, unknown]>([
    // Each was read as "no bound": the scan covered the whole table.
    ['a misspelt prefix (prefx)', { prefx: 'a' }, {}],
    ['a misspelt start (from)', { from: 'b' }, {}],
    ['a prefix and a start', { prefix: 'a', start: 'b' }, {}],
    ['a prefix and an end', { prefix: 'a', end: 'a2' }, {}],
    ['a misspelt option (limt)', {}, { limt: 1 }],
    ['a misspelt option (column)', {}, { column: ['c:v'] }],
  ])('a scan with %s is a TxnError INVALID_ARGUMENT, in a snapshot and in a transaction with writes', async (_what, range, options) => {
    const snap = await db.snapshot();
    try {
      expect(await failure(() => snap.scan('t', any(range), any(options)))).toBe('TxnError INVALID_ARGUMENT');
    } finally {
      snap.release();
    }
    const tx = await db.begin();
    try {
      tx.set('t', 'a0', 'c:v', 'mine');
      expect(await failure(() => tx.scan('t', any(range), any(options)))).toBe('TxnError INVALID_ARGUMENT');
    } finally {
      tx.abort();
      tx.release();
    }
  });

  it('a valid prefix still selects its rows', async () => {
    const snap = await db.snapshot();
    try {
      const rows: string[] = [];
      for await (const r of snap.scan('t', { prefix: 'a' })) rows.push(Buffer.from(r.row).toString());
      expect(rows).toEqual(['a1']);
    } finally {
      snap.release();
    }
  });
});

describe('openStore and the Store', () => {
  let store: Store;
  const k = Buffer.from('r');
  beforeAll(async () => {
    store = await openStore('memory:');
    await store.createTable('t', { families: { f: {} } });
    await store.mutateRow('t', k, [{ setCell: { familyName: 'f', columnQualifier: k, timestampMicros: 1000, value: k } }]);
    await store.mutateRow('t', Buffer.from('s'), [{ setCell: { familyName: 'f', columnQualifier: k, timestampMicros: 1000, value: k } }]);
  });
  afterAll(() => store.close());

  it.each<[string, unknown]>([
    ['options that are null', null],
    ['options that are a number', 5],
    ['a misspelt option (cacheByte)', { cacheByte: 0 }],
    ['limits that are a number', { limits: 5 }],
    ['a misspelt limit (maxRowKeySize)', { limits: { maxRowKeySize: 10 } }],
    ['a limit of 0', { limits: { maxValueBytes: 0 } }],
    ['a limit that is NaN', { limits: { maxRowKeyBytes: NaN } }],
    ['a cacheBytes of -1', { cacheBytes: -1 }],
    ['a cacheBytes that is a string', { cacheBytes: '1mb' }],
    ['a tabletSplitBytes of 1.5', { tabletSplitBytes: 1.5 }],
    ['a gcIntervalMs that is NaN', { gcIntervalMs: NaN }],
    ['a nowMicros that is a number', { nowMicros: 5 }],
    ['level options that are a number', { level: 5 }],
  ])('openStore("memory:") with %s is a StoreError INVALID_ARGUMENT', async (_what, options) => {
    expect(await failure(() => openStore('memory:', any(options)).then((s) => s.close()))).toBe('StoreError INVALID_ARGUMENT');
  });

  it.each<[string, unknown]>([
    ["a create of 'no' (it created the database)", { level: { create: 'no' } }],
    ['a misspelt level option (creat)', { level: { creat: false } }],
    ['a cacheSize of -1', { level: { cacheSize: -1 } }],
    ['a cacheSize of 4 GiB (classic-level keeps its low 32 bits: none)', { level: { cacheSize: 2 ** 32 } }],
    ['a writeBufferSize of 5 GiB', { level: { writeBufferSize: 5 * 2 ** 30 } }],
    ['a writeBufferSize of 0', { level: { writeBufferSize: 0 } }],
    ['a verify of "some"', { level: { verify: 'some' } }],
    ['a recheckBytes of 1.5', { level: { recheckBytes: 1.5 } }],
    ['a compression of "snappy"', { level: { compression: 'snappy' } }],
  ])('openStore("file:") with %s is a StoreError INVALID_ARGUMENT, and creates nothing', async (what, options) => {
    const at = join(dir, `store-${what.replace(/\W+/g, '-')}`);
    expect(await failure(() => openStore(`file:${at}`, any(options)).then((s) => s.close()))).toBe('StoreError INVALID_ARGUMENT');
    expect(() => readdirSync(at)).toThrow();
  });

  it.each<[string, (s: Store) => unknown]>([
    ['modifyColumnFamilies with a number', (s) => s.modifyColumnFamilies('t', any(5))],
    ['modifyColumnFamilies with an entry that is a number', (s) => s.modifyColumnFamilies('t', any([5]))],
    ['modifyColumnFamilies with an entry that is null', (s) => s.modifyColumnFamilies('t', any([null]))],
    // Each was ignored: the read covered the whole table.
    ['readRows with rowKeys beside rows', (s) => s.readRows('t', any({ rowKeys: [k] }))],
    ['readRows with a misspelt option (limit)', (s) => s.readRows('t', any({ limit: 1 }))],
    ['readRows with a misspelt row set (rowKey)', (s) => s.readRows('t', any({ rows: { rowKey: [k] } }))],
    ['readRows with a misspelt bound (startKey)', (s) => s.readRows('t', any({ rows: { rowRanges: [{ startKey: k }] } }))],
    // Each was TABLE_NOT_FOUND for "table 5".
    ['getTable with a table that is a number', (s) => s.getTable(any(5))],
    ['readRow with a table that is null', (s) => s.readRow(any(null), k)],
    ['mutateRow with a table that is an object', (s) => s.mutateRow(any({}), k, [{ deleteFromRow: {} }])],
    // Each was ignored: the write was made, durably.
    ['mutateRow with options that are a number', (s) => s.mutateRow('t', Buffer.from('w'), [{ deleteFromRow: {} }], any(5))],
    ["mutateRow with options that are 'deferred'", (s) => s.mutateRow('t', Buffer.from('w'), [{ deleteFromRow: {} }], any('deferred'))],
    [
      'mutateRows with options that are null',
      (s) => s.mutateRows('t', [{ key: Buffer.from('w'), mutations: [{ deleteFromRow: {} }] }], any(null)),
    ],
    ['mutateRows with a misspelt option (durabilty)', (s) => s.mutateRows('t', [], any({ durabilty: 'deferred' }))],
    ['checkAndMutateRow with a durability of "later"', (s) => s.checkAndMutateRow('t', k, any({ durability: 'later' }))],
    ['collectRows of a number', () => collectRows(any(5))],
    ['collectRows of a promise', (s) => collectRows(any(Promise.resolve(s.readRows('t'))))],
  ])('%s is a StoreError INVALID_ARGUMENT', async (_what, call) => {
    expect(await failure(() => call(store))).toBe('StoreError INVALID_ARGUMENT');
    expect((await store.getTable('t')).families).toEqual({ f: expect.anything() });
    expect(await collectRows(store.readRows('t'))).toHaveLength(2);
  });

  it('a valid row set still selects its rows', async () => {
    expect(await collectRows(store.readRows('t', { rows: { rowKeys: [k] } }))).toHaveLength(1);
  });
});

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

  it('observe after start is a TxnError WORKER_STARTED (was a plain Error with a code), naming the observer', async () => {
    const w = db.worker({ threads: 1, scanners: 1 });
    await w.start();
    try {
      expect(await failure(() => w.observe('c:v', 'late', fn))).toBe('TxnError WORKER_STARTED');
      expect((await errorOf(() => w.observe('c:v', 'late', fn))).details).toEqual({ column: 'c:v', name: 'late' });
    } finally {
      await w.stop({ graceMs: 0 });
    }
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

describe('percolator/server and percolator/bigtable', () => {
  const base = { storeUrl: 'memory:', port: 0, httpPort: null, oraclePort: null, log: () => undefined };

  it.each<[string, unknown]>([
    ['options that are null', null],
    ['options that are a number', 5],
    // Served a store created in the working directory.
    ['a store that is null', { ...base, storeUrl: undefined, store: null }],
    ['a store that is an empty object', { ...base, storeUrl: undefined, store: {} }],
    ['a host that is a number', { ...base, host: 5 }],
    ['a port of -1', { ...base, port: -1 }],
    ['a port of 1.5', { ...base, port: 1.5 }],
    ['an oraclePort that is a string', { ...base, oraclePort: 'x' }],
    ['an httpPort of 70000', { ...base, httpPort: 70000 }],
    ['an authToken that is a number', { ...base, authToken: 5 }],
    // Served without the warning an open server gets.
    ['an empty authToken', { ...base, authToken: '' }],
    ['a maxMessageBytes that is NaN', { ...base, maxMessageBytes: NaN }],
    ['a maxChunkValueBytes of 0', { ...base, maxChunkValueBytes: 0 }],
    ['a shutdownGraceMs of -1', { ...base, shutdownGraceMs: -1 }],
    ['httpExtraRoutes that are an object', { ...base, httpExtraRoutes: {} }],
    ['a log that is a string', { ...base, log: 'stderr' }],
    ['a lockService that is a number', { ...base, lockService: 5 }],
    ['a misspelt option (prot)', { ...base, prot: 0 }],
  ])('startServer with %s is a StoreError INVALID_ARGUMENT, and serves nothing', async (_what, options) => {
    const started = await startServer(any(options)).catch((e: unknown) => e);
    if (started !== null && typeof started === 'object' && 'close' in started) await (started as { close(): Promise<void> }).close();
    expect(`${(started as Error).constructor.name} ${String((started as { code?: unknown }).code)}`).toBe('StoreError INVALID_ARGUMENT');
  });

  it("startServer's error names the option, and never shows the token", async () => {
    const e = await errorOf(() => startServer(any({ ...base, authToken: 12345 })));
    expect(e.details).toEqual({ option: 'authToken' });
    expect(e.message).not.toContain('12345');
  });

  it.each<[string, () => unknown, string]>([
    // Until 2026-12-02 each said `…, not string`: the type of a value whose type was right.
    [
      'an address without a port',
      () => new NetworkLockService({ address: 'localhost' }),
      `NetworkLockService's address must be HOST:PORT, not "localhost"`,
    ],
    [
      'an onUnavailable of "fail"',
      () => new NetworkLockService({ address: '127.0.0.1:1', onUnavailable: any('fail') }),
      `NetworkLockService's onUnavailable must be 'grant', 'deny' or 'throw', not "fail"`,
    ],
    [
      'an empty authToken',
      () => new NetworkLockService({ address: '127.0.0.1:1', authToken: '' }),
      "NetworkLockService's authToken must be a non-empty string, not an empty string",
    ],
    [
      'an empty authToken to startServer',
      () => startServer({ ...base, authToken: '' }),
      "startServer's authToken must be a non-empty string, not an empty string",
    ],
    // NaN and Infinity were shown as JSON spells them: `not null`.
    [
      'a port of NaN to startServer',
      () => startServer({ ...base, port: NaN }),
      "startServer's port must be an integer from 0 to 65535, not NaN",
    ],
    [
      'a cacheBytes of Infinity to openStore',
      () => openStore('memory:', { cacheBytes: Infinity }),
      'cacheBytes must be an integer of bytes from 0, not Infinity',
    ],
  ])('the error for %s shows the value that was wrong', async (_what, make, message) => {
    expect((await errorOf(make)).message).toBe(message);
  });

  it.each<[string, () => unknown]>([
    ['no options', () => new NetworkLockService(any(undefined))],
    ['an address that is a number', () => new NetworkLockService(any({ address: 5 }))],
    ['an address without a port', () => new NetworkLockService({ address: 'localhost' })],
    ['a timeoutMs that is NaN', () => new NetworkLockService({ address: '127.0.0.1:1', timeoutMs: NaN })],
    ['an onUnavailable of "fail"', () => new NetworkLockService({ address: '127.0.0.1:1', onUnavailable: any('fail') })],
    ['a misspelt option (timeout)', () => new NetworkLockService(any({ address: '127.0.0.1:1', timeout: 5 }))],
  ])('new NetworkLockService with %s is a TxnError INVALID_ARGUMENT', async (_what, make) => {
    expect(await failure(make)).toBe('TxnError INVALID_ARGUMENT');
  });

  it.each<[string, (l: NetworkLockService | InProcessLockService) => unknown]>([
    ['a key that is a number', (l) => l.tryLock(any(5), 'o', 1000)],
    ['an owner that is undefined', (l) => l.tryLock('k', any(undefined), 1000)],
    ['a ttlMs that is NaN', (l) => l.tryLock('k', 'o', NaN)],
    ['a ttlMs of 0', (l) => l.tryLock('k', 'o', 0)],
    ['a ttlMs that is a string', (l) => l.tryLock('k', 'o', any('5000'))],
    ['an unlock of a key that is null', (l) => l.unlock(any(null), 'o')],
  ])(
    'a lock service call with %s is a TxnError INVALID_ARGUMENT (NetworkLockService granted it while out of reach)',
    async (_what, call) => {
      const local = new InProcessLockService();
      // Out of reach, with the default 'grant': a bad call used to be granted without a word.
      const remote = new NetworkLockService({ address: '127.0.0.1:1', timeoutMs: 200 });
      try {
        expect(await failure(() => call(local))).toBe('TxnError INVALID_ARGUMENT');
        expect(await failure(() => call(remote))).toBe('TxnError INVALID_ARGUMENT');
        expect(local.size).toBe(0);
      } finally {
        await remote.close();
      }
    },
  );

  it.each<[string, unknown]>([
    ['options that are null', null],
    ['options that are a number', 5],
    ['a misspelt option (maxMutationsPerReq)', { maxMutationsPerReq: 7 }],
    ['a maxRequestBytes of 0', { maxRequestBytes: 0 }],
  ])('BigtableStore.open with %s is a StoreError INVALID_ARGUMENT', async (_what, options) => {
    expect(await failure(() => BigtableStore.open('bigtable://127.0.0.1:1', any(options)).then((s) => s.close()))).toBe(
      'StoreError INVALID_ARGUMENT',
    );
  });
});

describe('the oracle: Oracle.open, startOracleServer, OracleClient, the mark stores', () => {
  const marks = (): MemoryMarkStore => new MemoryMarkStore();

  it.each<[string, () => unknown]>([
    // TypeErrors from inside (reading a property of undefined or null, path.resolve).
    ['Oracle.open(null)', () => Oracle.open(any(null))],
    ['Oracle.open without a markStore', () => Oracle.open(any({}))],
    ['Oracle.open with a markStore that is a number', () => Oracle.open(any({ markStore: 5 }))],
    // Taken: a NaN maxBatch refused every batch (ORACLE_BAD_REQUEST), a string reserveMicros was coerced.
    ['Oracle.open with a maxBatch that is NaN', () => Oracle.open({ markStore: marks(), maxBatch: NaN })],
    ['Oracle.open with a reserveMicros that is a string', () => Oracle.open({ markStore: marks(), reserveMicros: any('10') })],
    ['Oracle.open with a leaseMs of -1', () => Oracle.open({ markStore: marks(), leaseMs: -1 })],
    ['Oracle.open with a holdbackMs that is Infinity', () => Oracle.open({ markStore: marks(), holdbackMs: Infinity })],
    ['Oracle.open with a clock that is a number', () => Oracle.open({ markStore: marks(), clock: any(5) })],
    ['Oracle.open with a misspelt option (reserve)', () => Oracle.open(any({ markStore: marks(), reserve: 5 }))],
    ['startOracleServer(null)', () => startOracleServer(any(null))],
    ['startOracleServer with options that are a number', () => startOracleServer(any(5))],
    ['startOracleServer without a markStore or an oracle', () => startOracleServer({})],
    ['startOracleServer with a port of -1', () => startOracleServer({ markStore: marks(), port: -1 })],
    ['startOracleServer with a port that is a string', () => startOracleServer({ markStore: marks(), port: any('8088') })],
    ['startOracleServer with a host that is a number', () => startOracleServer({ markStore: marks(), host: any(5) })],
    ['startOracleServer with a maxConnections of 0', () => startOracleServer({ markStore: marks(), maxConnections: 0 })],
    ['startOracleServer with a maxBatch of 2^32', () => startOracleServer({ markStore: marks(), maxBatch: 2 ** 32 })],
    ['startOracleServer with an oracle that is a number', () => startOracleServer(any({ oracle: 5 }))],
    ['startOracleServer with a misspelt option (prot)', () => startOracleServer(any({ markStore: marks(), prot: 0 }))],
    ['new OracleClient()', () => new OracleClient(any(undefined))],
    ['new OracleClient(null)', () => new OracleClient(any(null))],
    ['new OracleClient without a port', () => new OracleClient(any({ host: '127.0.0.1' }))],
    ['new OracleClient with a port of 0', () => new OracleClient({ port: 0 })],
    ['new OracleClient with a port that is a string', () => new OracleClient({ port: any('8088') })],
    ['new OracleClient with a port of 70000', () => new OracleClient({ port: 70000 })],
    ['new OracleClient with a host that is a number', () => new OracleClient({ port: 1, host: any(5) })],
    ['new OracleClient with an empty host', () => new OracleClient({ port: 1, host: '' })],
    ['new OracleClient with a timeoutMs that is NaN', () => new OracleClient({ port: 1, timeoutMs: NaN })],
    ['new OracleClient with a timeoutMs of 0', () => new OracleClient({ port: 1, timeoutMs: 0 })],
    ['new OracleClient with a connectTimeoutMs that is a string', () => new OracleClient({ port: 1, connectTimeoutMs: any('5') })],
    ['new OracleClient with a backoffMaxMs of -1', () => new OracleClient({ port: 1, backoffMaxMs: -1 })],
    // A report timer firing without end.
    ['new OracleClient with a reportIntervalMs of 0', () => new OracleClient({ port: 1, reportIntervalMs: 0 })],
    ['new OracleClient with a maxBatch of 1.5', () => new OracleClient({ port: 1, maxBatch: 1.5 })],
    ['new OracleClient with a clientId of -1', () => new OracleClient({ port: 1, clientId: -1 })],
    ['new OracleClient with a misspelt option (timeout)', () => new OracleClient(any({ port: 1, timeout: 5 }))],
    ['new FileMarkStore(5)', () => new FileMarkStore(any(5))],
    ["new FileMarkStore('')", () => new FileMarkStore('')],
    ['new FileMarkStore with options that are null', () => new FileMarkStore(join(dir, 'm'), any(null))],
    ["new FileMarkStore with a lock of 'no'", () => new FileMarkStore(join(dir, 'm'), any({ lock: 'no' }))],
    ['new FileMarkStore with a misspelt option (locked)', () => new FileMarkStore(join(dir, 'm'), any({ locked: false }))],
    ['new StoreMarkStore(null)', () => new StoreMarkStore(any(null))],
    ['new StoreMarkStore of a string', () => new StoreMarkStore(any('memory:'))],
    ['new StoreMarkStore with a row that is a number', () => new StoreMarkStore(db.store, any({ row: 5 }))],
    ['new StoreMarkStore with a misspelt option (tabel)', () => new StoreMarkStore(db.store, any({ tabel: 'x' }))],
    ['new MemoryMarkStore(-1)', () => new MemoryMarkStore(-1)],
    ["new MemoryMarkStore('5')", () => new MemoryMarkStore(any('5'))],
  ])('%s is an OracleError ORACLE_INVALID_OPTION', async (_what, make) => {
    let made: unknown;
    const outcome = await failure(async () => {
      made = await make();
    });
    if (made !== undefined) await (made as { close?(): Promise<void> }).close?.();
    expect(outcome).toBe('OracleError ORACLE_INVALID_OPTION');
  });

  it('names the option and its value in details', async () => {
    expect((await errorOf(() => new OracleClient({ port: any('8088') }))).details).toEqual({ option: 'port', value: '8088' });
    expect((await errorOf(() => Oracle.open(any({ markStore: marks(), reserve: 5 })))).details).toEqual({ option: 'reserve' });
    expect((await errorOf(() => new OracleClient(any(null)))).details).toEqual({ option: 'options' });
  });

  it('startOracleServer with an open oracle and options for opening one is refused, and the oracle keeps serving', async () => {
    const oracle = await Oracle.open({ markStore: marks() });
    try {
      // The mark store would have been ignored: the open oracle keeps its own.
      expect(await failure(() => startOracleServer({ oracle, markStore: marks() }))).toBe('OracleError ORACLE_INVALID_OPTION');
      expect(await failure(() => startOracleServer({ oracle, reserveMicros: 5 }))).toBe('OracleError ORACLE_INVALID_OPTION');
      expect(await oracle.getTimestamp()).toBeGreaterThan(0);
    } finally {
      await oracle.close();
    }
  });

  it('valid options still open, serve and connect', async () => {
    const server = await startOracleServer({ markStore: marks(), port: 0, maxBatch: 1000 });
    const client = new OracleClient({ port: server.port, host: '127.0.0.1', timeoutMs: 5000, maxBatch: 1000 });
    try {
      expect(await client.getTimestamp()).toBeGreaterThan(0);
    } finally {
      await client.close();
      await server.close();
    }
  });
});
