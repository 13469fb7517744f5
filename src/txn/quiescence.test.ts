/**
 * waitForQuiescence's evidence and table filter: a QUIESCENCE_TIMEOUT says what is pending (per
 * table and column, with the registered observers, and a few rows; bounded), and `tables` waits
 * for the named tables only (a check of its own table is not held up by a user's parked rows).
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ObservedColumns } from '../notify/observed-columns.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import type { ReadRowsOptions } from '../store/types.js';
import { TxnError } from './errors.js';
import { NOTIFY, encodeColumn, strongNotifyMutation } from './layout.js';
import { Percolator } from './percolator.js';
import { recordingReads } from './recording-reads.fixture.js';
import { mulberry32 } from '../util/seeded-random.js';
import { MemoryMarkStore } from '../oracle/mark-store.js';
import { Oracle } from '../oracle/oracle.js';
import { OracleError } from '../oracle/errors.js';

let store: Store;
let db: Percolator;

/** Registers observed columns before the database opens: writes notify them, and no worker runs them. */
async function openWithObserved(observed: readonly [table: string, column: string, observer: string][]): Promise<void> {
  const registry = new ObservedColumns(store);
  await registry.open(0);
  for (const [t, c, o] of observed) await registry.register(t, c, o);
  await registry.close();
  db = await Percolator.open({ store, leaseMs: 1000 });
}

beforeEach(async () => {
  store = await openStore('memory:');
});
afterEach(async () => {
  await db.close();
  await store.close();
});

/**
 * `inner`, except that its first read of `table` yields nothing and, meanwhile, runs `meanwhile`
 * (a write landing while a pass reads): a pass that raced a commit, made deterministic.
 */
function withEmptyPass(inner: Store, table: string, meanwhile: () => Promise<void>): { store: Store; emptyPassesLeft(): number } {
  let left = 1;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'readRows')
        return (t: string, options: ReadRowsOptions) => {
          if (t !== table || left === 0) return target.readRows(t, options);
          left--;
          return (async function* () {
            await meanwhile();
          })();
        };
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store, emptyPassesLeft: () => left };
}

async function timeoutOf(p: Promise<void>): Promise<TxnError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(TxnError);
  expect((e as TxnError).code).toBe('QUIESCENCE_TIMEOUT');
  return e as TxnError;
}

it('a QUIESCENCE_TIMEOUT counts what is pending per table and column, names the observers, and shows a few rows', async () => {
  await openWithObserved([
    ['docs', 'doc:in', 'indexer'],
    ['*', 'c:x', 'everywhere'],
  ]);
  await db.createTable('docs');
  await db.createTable('other');
  await db.transaction(async (tx) => {
    for (let i = 0; i < 7; i++) tx.set('docs', `r${i}`, 'doc:in', 'v');
    tx.set('docs', new Uint8Array([0, 255]), 'c:x', 'v');
    tx.set('other', 'a', 'c:x', 'v');
    tx.set('other', 'b', 'c:x', 'v');
    tx.set('other', 'b', 'c:unobserved', 'v');
  });
  const e = await timeoutOf(db.waitForQuiescence({ timeoutMs: 30 }));
  expect(e.details).toMatchObject({
    pending: 10,
    tables: null,
    byColumn: [
      { table: 'docs', column: 'doc:in', pending: 7, observers: ['indexer'] },
      { table: 'other', column: 'c:x', pending: 2, observers: ['everywhere'] },
      { table: 'docs', column: 'c:x', pending: 1, observers: ['everywhere'] },
    ],
    moreColumns: 0,
  });
  const examples = e.details.examples as { table: string; row: string; column: string }[];
  expect(examples).toHaveLength(5);
  expect(examples).toContainEqual({ table: 'docs', row: '0x00ff', column: 'c:x' });
  expect(e.message).toBe(
    `not quiescent after 30 ms: 10 notifications pending: docs/doc:in 7 (observer indexer), other/c:x 2 (observer everywhere), ` +
      `docs/c:x 1 (observer everywhere); e.g. ${examples
        .slice(0, 3)
        .map((x) => `${x.table}/${x.row}/${x.column}`)
        .join(', ')}; 10 when the wait began`,
  );
});

it('a QUIESCENCE_TIMEOUT says how many were pending when the wait began, so a shrinking backlog shows', async () => {
  await openWithObserved([['docs', 'doc:in', 'indexer']]);
  await db.close();
  // A worker elsewhere acknowledges four of ten as soon as the wait has counted them (its first full
  // pass over the notify family): done here by deleting their notify cells, deterministically.
  let counted = 0;
  const inner = store;
  const draining = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'readRows')
        return (table: string, options: ReadRowsOptions) => {
          const rows = target.readRows(table, options);
          if (table !== 'docs') return rows;
          return (async function* () {
            yield* rows;
            // Only a pass read to its end gets here (a pass that stops at its first find does not).
            if (++counted === 1)
              for (let i = 0; i < 4; i++)
                await inner.mutateRow('docs', new TextEncoder().encode(`r${i}`), [{ deleteFromFamily: { familyName: NOTIFY } }]);
          })();
        };
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  db = await Percolator.open({ store: draining, leaseMs: 1000 });
  await db.createTable('docs');
  await db.transaction(async (tx) => {
    for (let i = 0; i < 10; i++) tx.set('docs', `r${i}`, 'doc:in', 'v');
  });
  const e = await timeoutOf(db.waitForQuiescence({ timeoutMs: 30 }));
  expect(e.details).toMatchObject({ pending: 6, pendingAtStart: 10 });
  expect(e.message).toMatch(
    /^not quiescent after 30 ms: 6 notifications pending: docs\/doc:in 6 \(observer indexer\); e\.g\. .*; 10 when the wait began$/,
  );
});

it('the evidence is bounded: 20 columns in details, 5 in the message, the rest counted', async () => {
  const columns = Array.from({ length: 30 }, (_, i) => `c:q${String(i).padStart(2, '0')}`);
  await openWithObserved(columns.map((c) => ['wide', c, `o${c.slice(3)}`] as [string, string, string]));
  await db.createTable('wide');
  await db.transaction(async (tx) => {
    columns.forEach((c, i) => {
      for (let r = 0; r <= i; r++) tx.set('wide', `r${r}`, c, 'v'); // column i: i + 1 rows
    });
  });
  const e = await timeoutOf(db.waitForQuiescence({ timeoutMs: 30 }));
  const byColumn = e.details.byColumn as { column: string; pending: number }[];
  expect(e.details.pending).toBe((30 * 31) / 2);
  expect(byColumn).toHaveLength(20);
  expect(byColumn[0]).toMatchObject({ column: 'c:q29', pending: 30 });
  expect(e.details.moreColumns).toBe(10);
  expect(e.details.examples).toHaveLength(5);
  expect(e.message).toContain('wide/c:q29 30 (observer o29), wide/c:q28 29 (observer o28)');
  expect(e.message).toContain(', and 25 more column(s); e.g. ');
  expect(e.message.length).toBeLessThan(500);
});

it('tables: waits for the named tables only, and their timeout lists only them', async () => {
  await openWithObserved([['*', 'c:x', 'parked-elsewhere']]);
  await db.createTable('user');
  await db.createTable('mine');
  await db.transaction(async (tx) => tx.set('user', 'stuck', 'c:x', 'v'));
  // Another table's pending notification: the whole system is not quiescent, `mine` is.
  await timeoutOf(db.waitForQuiescence({ timeoutMs: 30 }));
  await db.waitForQuiescence({ tables: ['mine'], timeoutMs: 5_000 });

  await db.transaction(async (tx) => tx.set('mine', 'm', 'c:x', 'v'));
  const e = await timeoutOf(db.waitForQuiescence({ tables: ['mine', 'mine'], timeoutMs: 30 }));
  expect(e.details).toMatchObject({ pending: 1, tables: ['mine'], byColumn: [{ table: 'mine', column: 'c:x', pending: 1 }] });
  expect(e.message).toMatch(/^not quiescent after 30 ms \(tables mine\): 1 notifications pending: mine\/c:x 1/);
});

it('tables: a table created a moment ago is found; bad values are INVALID_ARGUMENT, a plain table NOT_A_PERCOLATOR_TABLE, a missing one TABLE_NOT_FOUND', async () => {
  await openWithObserved([]);
  await db.waitForQuiescence({ timeoutMs: 5_000 }); // the table listing is cached now
  await db.createTable('fresh');
  await db.waitForQuiescence({ tables: ['fresh'], timeoutMs: 5_000 });
  for (const tables of [[], 'fresh', [1], [''], null, ['fresh', undefined]]) {
    await expect(db.waitForQuiescence({ tables: tables as unknown as string[] }), JSON.stringify(tables)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { option: 'tables' },
    });
  }
  await store.createTable('plain', { families: { f: {} } });
  for (const [name, code] of [
    ['nope', 'TABLE_NOT_FOUND'], // was NOT_A_PERCOLATOR_TABLE, as if a table of that name existed
    ['plain', 'NOT_A_PERCOLATOR_TABLE'],
  ]) {
    await expect(db.waitForQuiescence({ tables: ['fresh', name as string], timeoutMs: 5_000 })).rejects.toMatchObject({
      code,
      details: { table: name },
    });
  }
});

it("tables: timestamps issued for other tables' work do not hold the wait; a chain of observer runs in the named table is waited for", async () => {
  await openWithObserved([]);
  await db.close();
  // Another application busy in its own tables: every time the wait looks, the oracle has handed
  // out more timestamps (deterministic, where a real busy loop would race the pass).
  const oracle = await Oracle.open({ markStore: new MemoryMarkStore() });
  const stats = oracle.stats.bind(oracle);
  let looks = 0;
  oracle.stats = () => ({ ...stats(), handedOut: stats().handedOut + ++looks });
  db = await Percolator.open({ store, oracle, leaseMs: 1000 });
  try {
    await db.createTable('busy');
    await db.createTable('mine');
    const worker = db.worker({ threads: 2 });
    // Each run passes the baton to the next row, through a notification in the same table.
    worker.observe(
      'c:baton',
      'relay',
      async (tx, row) => {
        const n = Number(await tx.getString('mine', row, 'c:baton'));
        tx.set('mine', row, 'c:done', String(n));
        if (n < 20) tx.set('mine', `r${n + 1}`, 'c:baton', String(n + 1));
      },
      { table: 'mine' },
    );
    await worker.start();
    try {
      await db.transaction(async (tx) => tx.set('mine', 'r0', 'c:baton', '0'));
      await db.waitForQuiescence({ tables: ['mine'], timeoutMs: 10_000 });
      for (let i = 0; i <= 20; i++) expect(await db.getString('mine', `r${i}`, 'c:done')).toBe(String(i));
      // Without `tables` the oracle's count is the rule, and it never stands still here.
      await timeoutOf(db.waitForQuiescence({ timeoutMs: 200 }));
      expect(looks).toBeGreaterThan(2);
    } finally {
      await worker.stop();
    }
  } finally {
    await db.close();
    await oracle.close();
    db = await Percolator.open({ store });
  }
});

it('tables: a pass during which a write reached the table is not taken for quiescence (a notification moved behind the pass)', async () => {
  await openWithObserved([['mine', 'c:x', 'nobody-runs-it']]);
  await db.close();
  // The first pass over `mine` reads nothing — as if an observer had cleared a notification the
  // pass had not reached and written one where it had already been — while that commit lands.
  const raced = withEmptyPass(store, 'mine', async () => {
    await theDb.transaction(async (tx) => tx.set('mine', 'a', 'c:x', 'moved here'));
  });
  const theDb = await Percolator.open({ store: raced.store, leaseMs: 1000 });
  db = theDb;
  await theDb.createTable('mine');
  // The notification really is pending (no worker runs its observer): a wait that took the faked
  // pass would resolve; one that saw the write during it looks again and times out.
  await timeoutOf(theDb.waitForQuiescence({ tables: ['mine'], timeoutMs: 300 }));
  expect(raced.emptyPassesLeft()).toBe(0);
});

it('a notify cell landing behind a quiet pass, from a commit whose timestamp came before it, is found by the second pass', async () => {
  await openWithObserved([['mine', 'c:x', 'nobody-runs-it']]);
  await db.close();
  // A transaction that took its commit timestamp before the pass: its primary row's notify cell
  // lands in a row the pass has already read, and the notification it answered (in a row the
  // pass had not reached) is cleared — no timestamp is issued during the pass. Faked as a first
  // pass over `mine` that reads nothing while the cell is written.
  let committedAt = 0;
  const inner = store;
  const raced = withEmptyPass(inner, 'mine', async () => {
    await inner.mutateRow('mine', new TextEncoder().encode('a'), [strongNotifyMutation(encodeColumn('c:x'), committedAt)]);
  });
  db = await Percolator.open({ store: raced.store, leaseMs: 1000 });
  await db.createTable('mine');
  committedAt = await db.oracle.getTimestamp();
  // One quiet pass used to be taken for quiescence; the second finds the notification pending.
  await timeoutOf(db.waitForQuiescence({ timeoutMs: 300 }));
  expect(raced.emptyPassesLeft()).toBe(0);
  expect(await db.pendingNotifications()).toBe(1);
});

it("a remote oracle's count is asked for (ISSUED): timestamps issued during each pass hold the wait, and an oracle that cannot count leaves the pending notifications to decide", async () => {
  await openWithObserved([]);
  await db.close();
  const withCount = async (issuedCount: () => Promise<number>, wait: (db: Percolator) => Promise<void>): Promise<void> => {
    const oracle = await Oracle.open({ markStore: new MemoryMarkStore() });
    const remote = Object.assign(oracle, { issuedCount });
    const theDb = await Percolator.open({ store, oracle: remote, leaseMs: 1000 });
    try {
      await wait(theDb);
    } finally {
      await theDb.close();
      await oracle.close();
    }
  };
  // Another process busy: each answer is higher (the in-process count stays still meanwhile).
  let looks = 0;
  await withCount(
    async () => ++looks,
    (d) => timeoutOf(d.waitForQuiescence({ timeoutMs: 200 })).then(() => undefined),
  );
  expect(looks).toBeGreaterThan(2);
  // Out of reach for now: no pass is taken for quiet.
  let asked = 0;
  await withCount(
    async () => {
      asked++;
      throw new OracleError('ORACLE_TIMEOUT', 'no answer', {});
    },
    (d) => timeoutOf(d.waitForQuiescence({ timeoutMs: 200 })).then(() => undefined),
  );
  expect(asked).toBeGreaterThan(2);
  // A server from before ISSUED: asked once, then the passes' pending counts decide.
  asked = 0;
  await withCount(
    async () => {
      asked++;
      throw new OracleError('ORACLE_PROTOCOL', 'unknown request type 0x4', {});
    },
    (d) => d.waitForQuiescence({ timeoutMs: 5_000 }),
  );
  expect(asked).toBe(1);
  db = await Percolator.open({ store });
});

it('a poll after the first reads the notify group in pages, from 16 rows, not whole: a server streams what it is asked for', async () => {
  await openWithObserved([['docs', 'doc:in', 'indexer']]);
  await db.close();
  // Each notify-family read of `docs`: the rowsLimit asked and the rows taken from it.
  const notifyFilter = JSON.stringify({ familyNameRegexFilter: NOTIFY });
  const { store: counting, reads } = recordingReads(
    store,
    (table, options) => table === 'docs' && JSON.stringify(options.filter) === notifyFilter,
  );
  db = await Percolator.open({ store: counting, leaseMs: 1000 });
  await db.createTable('docs');
  // 40 rows notified on a column nobody observes first (keys `a…`), then 300 pending ones.
  for (let i = 0; i < 40; i++) {
    const key = new TextEncoder().encode(`a${String(i).padStart(3, '0')}`);
    await store.mutateRow('docs', key, [strongNotifyMutation(encodeColumn('doc:other'), 1)]);
  }
  await db.transaction(async (tx) => {
    for (let i = 0; i < 300; i++) tx.set('docs', `r${String(i).padStart(3, '0')}`, 'doc:in', 'v');
  });
  await timeoutOf(db.waitForQuiescence({ timeoutMs: 40 }));
  // The first pass counts in full (a timeout says how many were pending when the wait began).
  expect(reads[0]).toEqual({ limit: undefined, rows: 340 });
  // The timeout's evidence counts in full too, last.
  expect(reads.at(-1)).toEqual({ limit: undefined, rows: 340 });
  const polls = reads.slice(1, -1);
  expect(polls.length).toBeGreaterThanOrEqual(2);
  // Each poll between: a page of 16 (the unobserved rows only), then one of 128 to the first pending row.
  expect(polls.length % 2).toBe(0);
  for (let i = 0; i < polls.length; i += 2) {
    expect(polls[i]).toEqual({ limit: 16, rows: 16 });
    expect(polls[i + 1]).toEqual({ limit: 128, rows: 25 });
  }
});

it('a paged poll finds a pending notification wherever it lies among others nobody observes (random layouts, seed 61206)', async () => {
  const random = mulberry32(61206);
  const tables = Array.from({ length: 8 }, (_, i) => `t${i}`);
  await openWithObserved(tables.map((t) => [t, 'doc:in', 'indexer'] as [string, string, string]));
  for (const t of tables) await db.createTable(t);
  for (const [i, t] of tables.entries()) {
    // Up to ~1 500 rows notified on an unobserved column; in most tables one observed pending row
    // among them, anywhere — past the first pages (16, 128, 1 024 rows) too.
    const n = Math.floor(random() * 1_500);
    const at = i % 4 === 3 ? -1 : Math.floor(random() * (n + 1));
    const q = (column: string) => [strongNotifyMutation(encodeColumn(column), 1)];
    const results = await store.mutateRows(
      t,
      Array.from({ length: n + (at >= 0 ? 1 : 0) }, (_, k) => ({
        key: new TextEncoder().encode(`r${String(k).padStart(5, '0')}`),
        mutations: q(k === at ? 'doc:in' : 'doc:other'),
      })),
    );
    expect(results.every((r) => r.error === undefined)).toBe(true);
    const pending = await timedOut(db.waitForQuiescence({ timeoutMs: 60, tables: [t] }));
    expect(pending, JSON.stringify({ t, n, at })).toBe(at >= 0);
  }
});

/** Whether `wait` ended in QUIESCENCE_TIMEOUT (true) or resolved (false). */
async function timedOut(wait: Promise<void>): Promise<boolean> {
  return wait.then(
    () => false,
    (e: unknown) => {
      if (e instanceof TxnError && e.code === 'QUIESCENCE_TIMEOUT') return true;
      throw e;
    },
  );
}
