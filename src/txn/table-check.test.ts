/**
 * A call that names a table that is not a Percolator table (made with the store's own
 * `createTable`) or no table at all, on every backend: NOT_A_PERCOLATOR_TABLE with the families it
 * lacks, or the store's TABLE_NOT_FOUND — for reads too, which read nothing before (`db.get` null,
 * a scan empty), and for writes, which failed with the store's FAMILY_NOT_FOUND for `write` or
 * `lock`. A table is checked once per instance (table-check.ts): no store call per read after that.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type PercolatorServer, startServer } from '../server/server.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { Percolator } from './percolator.js';
import type { Transaction } from './transaction.js';
import { LOCK, WRITE } from './layout.js';

const dir = mkdtempSync(join(tmpdir(), 'table-check-'));
const servers: PercolatorServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

const ALL_MISSING = ['lock', 'write', 'data', 'notify'];
const notPercolator = (table: string, families = ALL_MISSING) => ({
  name: 'TxnError',
  code: 'NOT_A_PERCOLATOR_TABLE',
  details: { table, families },
  message: expect.stringMatching(new RegExp(`^table ${table} is not a Percolator table: it lacks the system famil`)),
});
const notFound = (table: string) => ({ name: 'StoreError', code: 'TABLE_NOT_FOUND', details: { table } });

/** What `fn` rejected with (a test that expects a rejection fails on a resolution). */
async function rejection(fn: () => Promise<unknown>): Promise<unknown> {
  return fn().then(
    (v) => {
      throw new Error(`resolved with ${String(v)}`);
    },
    (e: unknown) => e,
  );
}

/** Every read entry point naming `table`. */
function reads(db: Percolator): [string, (table: string) => Promise<unknown>][] {
  const inSnapshot =
    (f: (s: Awaited<ReturnType<Percolator['snapshot']>>, t: string) => Promise<unknown>) =>
    async (t: string): Promise<unknown> => {
      const s = await db.snapshot();
      try {
        return await f(s, t);
      } finally {
        s.release();
      }
    };
  const inTransaction = (f: (tx: Transaction, t: string) => Promise<unknown>) => (t: string) => db.transaction((tx) => f(tx, t));
  const all = async (it: AsyncIterable<unknown>): Promise<unknown[]> => {
    const out: unknown[] = [];
    for await (const r of it) out.push(r);
    return out;
  };
  return [
    ['db.get', (t) => db.get(t, 'r', 'c:v')],
    ['db.getString', (t) => db.getString(t, 'r', 'c:v')],
    ['db.getJson', (t) => db.getJson(t, 'r', 'c:v')],
    ['snapshot.get', inSnapshot((s, t) => s.get(t, 'r', 'c:v'))],
    ['snapshot.getVersion', inSnapshot((s, t) => s.getVersion(t, 'r', 'c:v'))],
    [
      'snapshot.getMany',
      inSnapshot((s, t) =>
        s.getMany(t, [
          { row: 'r', column: 'c:v' },
          { row: 's', column: 'c:v' },
        ]),
      ),
    ],
    ['snapshot.scan', inSnapshot((s, t) => all(s.scan(t)))],
    ['tx.get', inTransaction((tx, t) => tx.get(t, 'r', 'c:v'))],
    ['tx.scan', inTransaction((tx, t) => all(tx.scan(t, { prefix: 'r' })))],
    // A scan over the transaction's own write in the table (read-your-writes) reads the table too.
    ['tx.scan over its own write', inTransaction((tx, t) => (tx.set(t, 'r', 'c:v', 'x'), all(tx.scan(t))))],
  ];
}

/** Every write entry point naming `table` (each committed by db.transaction). */
const writes: [string, (tx: Transaction, table: string) => void][] = [
  ['tx.set', (tx, t) => tx.set(t, 'r', 'c:v', 'x')],
  ['tx.setJson', (tx, t) => tx.setJson(t, 'r', 'c:v', { x: 1 })],
  ['tx.delete', (tx, t) => tx.delete(t, 'r', 'c:v')],
  ['tx.notify', (tx, t) => tx.notify(t, 'r', 'c:v')],
];

interface Backend {
  readonly name: string;
  open(): Promise<{ db: Percolator; store: Store }>;
}

const backends: Backend[] = [
  {
    name: 'memory: (one-phase commits)',
    open: async () => {
      const db = await Percolator.open({ store: 'memory:', gcIntervalMs: 0 });
      return { db, store: db.store };
    },
  },
  {
    name: 'memory: (two-phase commits)',
    open: async () => {
      const db = await Percolator.open({ store: 'memory:', gcIntervalMs: 0, commitProtocol: 'two-phase' });
      return { db, store: db.store };
    },
  },
  {
    name: 'file:',
    open: async () => {
      const db = await Percolator.open({ store: `file:${mkdtempSync(join(dir, 'f-'))}`, gcIntervalMs: 0 });
      return { db, store: db.store };
    },
  },
  {
    name: 'bigtable:// (percolator serve)',
    open: async () => {
      const server = await startServer({ storeUrl: 'memory:', port: 0, httpPort: null, oraclePort: 0, log: () => undefined });
      servers.push(server);
      const db = await Percolator.open({
        store: `bigtable://127.0.0.1:${server.port}?oracle=127.0.0.1:${server.oraclePort}`,
        gcIntervalMs: 0,
      });
      return { db, store: db.store };
    },
  },
];

describe.each(backends)('$name', (backend) => {
  let db: Percolator;
  let store: Store;
  beforeEach(async () => {
    ({ db, store } = await backend.open());
    await db.createTable('t');
    await db.transaction(async (tx) => tx.set('t', 'r', 'c:v', 'committed'));
    await store.createTable('plain', { families: { f: {} } });
  });
  afterEach(() => db.close({ graceMs: 0 }));

  it('reads: NOT_A_PERCOLATOR_TABLE in a plain table (they read nothing, silently), the store’s TABLE_NOT_FOUND in none', async () => {
    for (const [what, read] of reads(db)) {
      expect(await rejection(() => read('plain')), what).toMatchObject(notPercolator('plain'));
      expect(await rejection(() => read('nosuch')), what).toMatchObject(notFound('nosuch'));
      // And a second time: nothing bad is remembered as good.
      expect(await rejection(() => read('plain')), what).toMatchObject(notPercolator('plain'));
    }
    expect(await db.getString('t', 'r', 'c:v')).toBe('committed');
  });

  it('writes: NOT_A_PERCOLATOR_TABLE in a plain table (it was FAMILY_NOT_FOUND for write or lock), TABLE_NOT_FOUND in none; nothing written', async () => {
    for (const [what, write] of writes) {
      const plain = await rejection(() =>
        db.transaction(async (tx) => {
          tx.set('t', 'r', 'c:v', 'torn');
          write(tx, 'plain');
        }),
      );
      expect(plain, what).toMatchObject(notPercolator('plain'));
      expect(await rejection(() => db.transaction(async (tx) => write(tx, 'nosuch'))), what).toMatchObject(notFound('nosuch'));
    }
    // By hand too, and nothing of either transaction reached the Percolator table or the plain one.
    const tx = await db.begin();
    tx.set('plain', 'r', 'c:v', 'x');
    expect(await rejection(() => tx.commit())).toMatchObject(notPercolator('plain'));
    tx.release();
    expect(await db.getString('t', 'r', 'c:v')).toBe('committed');
    expect(await store.readRow('plain', Buffer.from('r'))).toBeNull();
  });

  it('a table with some of the system families names those it lacks', async () => {
    await store.createTable('half', { families: { [LOCK]: {}, [WRITE]: {} } });
    expect(await rejection(() => db.get('half', 'r', 'c:v'))).toMatchObject(notPercolator('half', ['data', 'notify']));
    expect(await rejection(() => db.transaction(async (tx) => tx.set('half', 'r', 'c:v', 'x')))).toMatchObject(
      notPercolator('half', ['data', 'notify']),
    );
    // createTable of that name says the same.
    expect(await rejection(() => db.createTable('half'))).toMatchObject(notPercolator('half', ['data', 'notify']));
  });

  it('waitForQuiescence({ tables }): the store’s TABLE_NOT_FOUND for a table that does not exist (it said NOT_A_PERCOLATOR_TABLE)', async () => {
    expect(await rejection(() => db.waitForQuiescence({ tables: ['t', 'nosuch'], timeoutMs: 5_000 }))).toMatchObject(notFound('nosuch'));
    expect(await rejection(() => db.waitForQuiescence({ tables: ['plain'], timeoutMs: 5_000 }))).toMatchObject(notPercolator('plain'));
    await db.waitForQuiescence({ tables: ['t'], timeoutMs: 5_000 });
  });

  it('worker.observe with a table: start() rejects a plain one (its observers would never run); one not there yet is observed once created', async () => {
    const plain = db.worker({ threads: 1, scanners: 1 });
    plain.observe('c:v', 'o', async () => undefined, { table: 't' });
    plain.observe('c:w', 'p', async () => undefined, { table: 'plain' });
    expect(await rejection(() => plain.start())).toMatchObject(notPercolator('plain'));
    expect(plain.running).toBe(false);
    // A worker may start before the process that creates its tables.
    const early = db.worker({ threads: 1, scanners: 1 });
    const seen: string[] = [];
    early.observe('c:w', 'p', async (_tx, row) => void seen.push(Buffer.from(row).toString()), { table: 'later' });
    await early.start();
    expect(early.running).toBe(true);
    await db.createTable('later');
    await db.transaction(async (tx) => tx.set('later', 'r1', 'c:w', 'v'));
    await db.waitForQuiescence({ tables: ['later'], timeoutMs: 10_000 });
    expect(seen).toEqual(['r1']);
    await early.stop();
  });

  it('a table remembered good, then deleted and recreated without the families elsewhere: a commit to it says so, and reads after it', async () => {
    await db.createTable('again');
    await db.transaction(async (tx) => tx.set('again', 'r', 'c:v', 'v'));
    expect(await db.getString('again', 'r', 'c:v')).toBe('v');
    // Another process's work, through the store's own API.
    await store.deleteTable('again');
    await store.createTable('again', { families: { f: {} } });
    expect(await rejection(() => db.transaction(async (tx) => tx.set('again', 'r', 'c:v', 'x')))).toMatchObject(notPercolator('again'));
    // Forgotten, and checked again: reads say so too.
    expect(await rejection(() => db.get('again', 'r', 'c:v'))).toMatchObject(notPercolator('again'));
  });
});

describe('the cost: one store lookup per table and instance', () => {
  it('reads and commits after the first use of a table call no getTable; concurrent first uses share one', async () => {
    const inner = await openStore('memory:');
    let lookups = 0;
    const store = new Proxy(inner, {
      get(target, p) {
        const v: unknown = Reflect.get(target, p);
        if (p === 'getTable') {
          return (name: string) => {
            if (name === 'u') lookups++;
            return target.getTable(name);
          };
        }
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const writer = await Percolator.open({ store, gcIntervalMs: 0 });
    await writer.createTable('u');
    await writer.transaction(async (tx) => tx.set('u', 'r', 'c:v', 'v'));
    const db = await Percolator.open({ store, gcIntervalMs: 0 });
    try {
      lookups = 0;
      // Concurrent first uses of a table this instance has not seen.
      const first = await Promise.all(Array.from({ length: 8 }, () => db.getString('u', 'r', 'c:v')));
      expect(first).toEqual(Array(8).fill('v'));
      expect(lookups).toBe(1);
      for (let i = 0; i < 50; i++) {
        await db.get('u', 'r', 'c:v');
        await db.transaction(async (tx) => {
          await tx.get('u', `r${i}`, 'c:v');
          tx.set('u', `r${i}`, 'c:v', 'x');
        });
      }
      const snap = await db.snapshot();
      for await (const _ of snap.scan('u')) void _;
      snap.release();
      expect(lookups).toBe(1);
      // On an embedded store, db.get of a known table still answers with a promise already resolved.
      const p = db.get('u', 'r', 'c:v');
      expect(db.get('u', 'r', 'c:v')).toBe(p);
    } finally {
      await db.close();
      await writer.close();
      await inner.close();
    }
  });
});
