import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cleanup } from './actions/cleanup.js';
import { isTxnError } from './errors.js';
import { encodeColumn } from './layout.js';
import { isStoreError } from '../store/errors.js';
import { openStore } from '../store/open-store.js';
import { type Store, atomicRowsOf } from '../store/store.js';
import type { Oracle } from '../oracle/oracle.js';
import { frozenWriter } from './frozen-writer.fixture.js';
import { remoteLike } from './remote-like.fixture.js';
import { unreachableAt } from '../store/unreachable-store.fixture.js';
import { Percolator } from './percolator.js';
import type { Transaction } from './transaction.js';
import type { ProtocolPoint } from './transaction.js';

let db: Percolator;
let protocol: 'auto' | 'two-phase' = 'auto';
beforeEach(async () => {
  db = await Percolator.open({ store: 'memory:', lockWaitMs: 200, leaseMs: 500, commitProtocol: protocol });
  await db.createTable('t');
});
afterEach(async () => {
  await db.close();
});

const str = (v: Uint8Array | null | undefined) => (v === null || v === undefined ? null : Buffer.from(v).toString());

/**
 * Writers commit increments of two of three counters at a time while readers call `db.get`. Each
 * cell holds `count:partner:partnerCount` (its commit's other cell). A value is never older than
 * a commit acknowledged before the read began, nor older than one the same reader saw before, nor
 * older than the partner count of a commit the reader already saw through the other cell: each
 * `db.get` is a transaction that starts after the previous one ended.
 */
async function checkGetNeverStale(db: Percolator): Promise<void> {
  const rows = ['r0', 'r1', 'r2'];
  await db.transaction(async (tx) => {
    for (const r of rows) tx.set('t', r, 'c:n', '0::0');
  });
  const parse = (v: Uint8Array | null) => {
    const [n, partner, partnerN] = (str(v) ?? '').split(':');
    return { n: Number(n), partner: partner as string, partnerN: Number(partnerN) };
  };
  const acked = new Map(rows.map((r) => [r, 0]));
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  let writing = true;
  const writers = Array.from({ length: 3 }, async () => {
    for (let i = 0; i < 20; i++) {
      // Two rows per commit: in two phases one of them is a secondary, locked past the commit point.
      const a = rows[rand(3)] as string;
      const b = rows.find((r) => r !== a) as string;
      const got = await db.transaction(async (tx) => {
        const va = parse(await tx.get('t', a, 'c:n')).n + 1;
        const vb = parse(await tx.get('t', b, 'c:n')).n + 1;
        tx.set('t', a, 'c:n', `${va}:${b}:${vb}`);
        tx.set('t', b, 'c:n', `${vb}:${a}:${va}`);
        return [va, vb] as const;
      });
      acked.set(a, Math.max(acked.get(a) as number, got[0]));
      acked.set(b, Math.max(acked.get(b) as number, got[1]));
    }
  });
  let reads = 0;
  const readers = Array.from({ length: 3 }, async () => {
    const floor = new Map(rows.map((r) => [r, 0])); // what this reader must see at least
    while (writing) {
      const r = rows[rand(3)] as string;
      const ackedBefore = acked.get(r) as number;
      const v = parse(await db.get('t', r, 'c:n'));
      expect(v.n).toBeGreaterThanOrEqual(ackedBefore);
      expect(v.n).toBeGreaterThanOrEqual(floor.get(r) as number);
      floor.set(r, v.n);
      if (v.partner !== '') floor.set(v.partner, Math.max(floor.get(v.partner) as number, v.partnerN));
      reads++;
      if (reads % 8 === 0) await new Promise((res) => setImmediate(res));
    }
  });
  try {
    await Promise.all(writers);
  } finally {
    writing = false; // a failed writer must not leave the readers looping
  }
  await Promise.all(readers);
  expect(reads).toBeGreaterThan(0);
  for (const r of rows) expect(parse(await db.get('t', r, 'c:n')).n).toBe(acked.get(r));
}

// The isolation tests run under both commit protocols: one phase (the default on an unshared
// embedded store) and Percolator's two phases (shared stores).
describe.each(['auto', 'two-phase'] as const)('Percolator transactions (commitProtocol %s)', (p) => {
  beforeAll(() => {
    protocol = p;
  });
  afterAll(() => {
    protocol = 'auto';
  });

  it('commits writes across rows atomically and returns the callback value', async () => {
    const out = await db.transaction(async (tx) => {
      tx.set('t', 'a', 'c:x', '1');
      tx.set('t', 'b', 'c:y', '2');
      tx.setJson('t', 'c', 'c:z', { n: 3 });
      return 'done';
    });
    expect(out).toBe('done');
    const snap = await db.snapshot();
    expect(str(await snap.get('t', 'a', 'c:x'))).toBe('1');
    expect(await snap.getString('t', 'b', 'c:y')).toBe('2');
    expect(await snap.getJson('t', 'c', 'c:z')).toEqual({ n: 3 });
    snap.release();
  });

  it("tx.commit() inside db.transaction is INVALID_ARGUMENT and writes nothing: the caller's error means no commit", async () => {
    // Until 2026-12 the function's commit landed, then db.transaction's own threw TXN_FINISHED.
    let commitTs: number | null | undefined;
    const err = await db
      .transaction(async (tx) => {
        tx.set('t', 'own', 'c:x', 'committed by the function');
        commitTs = await tx.commit();
      })
      .catch((e: unknown) => e);
    expect(isTxnError(err, 'INVALID_ARGUMENT')).toBe(true);
    expect((err as Error).message).toMatch(/ is committed by db\.transaction when the function returns, not by the code it runs$/);
    expect(commitTs).toBeUndefined();
    expect(await db.get('t', 'own', 'c:x')).toBeNull();

    // Refused, the transaction stays open: a function that goes on and returns is committed, once.
    const out = await db.transaction(async (tx) => {
      tx.set('t', 'own', 'c:x', 'v1');
      const refused = await tx.commit().catch((e: unknown) => e);
      expect(isTxnError(refused, 'INVALID_ARGUMENT')).toBe(true);
      tx.set('t', 'own', 'c:y', 'v2');
      return 'returned';
    });
    expect(out).toBe('returned');
    const snap = await db.snapshot();
    expect([await snap.getString('t', 'own', 'c:x'), await snap.getString('t', 'own', 'c:y')]).toEqual(['v1', 'v2']);
    let writeRecords = 0; // one per column: neither was committed twice
    for await (const r of db.store.readRows('t', { filter: { familyNameRegexFilter: 'write' } })) writeRecords += r.cells.length;
    expect(writeRecords).toBe(2);
    snap.release();
  });
  it('reads at the start timestamp: later commits are invisible, earlier ones visible', async () => {
    await db.transaction(async (tx) => tx.set('t', 'k', 'c:v', 'old'));
    const before = await db.snapshot();
    await db.transaction(async (tx) => tx.set('t', 'k', 'c:v', 'new'));
    const after = await db.snapshot();
    expect(await before.getString('t', 'k', 'c:v')).toBe('old');
    expect(await after.getString('t', 'k', 'c:v')).toBe('new');
    // An explicit old timestamp reads the old version too.
    const again = await db.snapshot(before.startTs);
    expect(await again.getString('t', 'k', 'c:v')).toBe('old');
    for (const s of [before, after, again]) s.release();
  });

  it('sees its own buffered writes and deletes', async () => {
    await db.transaction(async (tx) => tx.set('t', 'k', 'c:v', 'committed'));
    await db.transaction(async (tx) => {
      expect(await tx.getString('t', 'k', 'c:v')).toBe('committed');
      tx.set('t', 'k', 'c:v', 'mine');
      expect(await tx.getString('t', 'k', 'c:v')).toBe('mine');
      tx.delete('t', 'k', 'c:v');
      expect(await tx.get('t', 'k', 'c:v')).toBeNull();
    });
    const snap = await db.snapshot();
    expect(await snap.get('t', 'k', 'c:v')).toBeNull();
    snap.release();
  });

  it('db.get reads the latest committed value of one cell and holds no snapshot afterwards', async () => {
    await db.transaction(async (tx) => {
      tx.set('t', 'short', 'c:v', 's1');
      tx.set('t', 'long', 'c:v', 'L'.repeat(1000)); // in `data`: a second read
      tx.set('t', 'gone', 'c:v', 'x');
    });
    await db.transaction(async (tx) => {
      tx.set('t', 'short', 'c:v', 's2');
      tx.delete('t', 'gone', 'c:v');
    });
    expect(str(await db.get('t', 'short', 'c:v'))).toBe('s2');
    expect(str(await db.get('t', 'long', 'c:v'))?.length).toBe(1000);
    expect(await db.get('t', 'gone', 'c:v')).toBeNull();
    expect(await db.get('t', 'never', 'c:v')).toBeNull();
    expect(str(await db.get('t', Buffer.from('short'), 'c:v'))).toBe('s2');
    expect(await db.getString('t', 'short', 'c:v')).toBe('s2');
    await db.transaction(async (tx) => tx.setJson('t', 'j', 'c:v', { n: [1, 2] }));
    expect(await db.getJson('t', 'j', 'c:v')).toEqual({ n: [1, 2] });
    expect(await db.getJson('t', 'never', 'c:v')).toBeNull();
    // A key that is not ASCII is encoded as UTF-8, like every other row key.
    await db.transaction(async (tx) => tx.set('t', 'clé', 'c:v', 'é'));
    expect(str(await db.get('t', Buffer.from('clé', 'utf8'), 'c:v'))).toBe('é');
    expect(str(await db.get('t', 'clé', 'c:v'))).toBe('é');
    // No registration outlives its read (the long value took the asynchronous path): the
    // watermark passes every timestamp handed out so far.
    const after = await db.oracle.getTimestamp();
    expect(await db.oracle.getWatermark()).toBeGreaterThan(after);
    // Bad input is a rejected promise with a stable code, not a synchronous throw.
    const bad = db.get('t', 'short', 'no-family');
    await expect(bad).rejects.toMatchObject({ code: 'INVALID_COLUMN' });
  });

  it('db.get hands every reader of one committed version the same resolved promise, and a new one after each commit', async () => {
    await db.transaction(async (tx) => tx.set('t', 'm', 'c:v', 'a'));
    const first = db.get('t', 'm', 'c:v');
    expect(db.get('t', Buffer.from('m'), 'c:v')).toBe(first); // the row as bytes: the same cell
    expect(str(await first)).toBe('a');
    await db.transaction(async (tx) => tx.set('t', 'm', 'c:v', 'b'));
    const second = db.get('t', 'm', 'c:v');
    expect(second).not.toBe(first);
    expect(str(await second)).toBe('b');
    expect(str(await first)).toBe('a'); // what a reader was handed never changes under it
    const snap = await db.snapshot();
    expect(snap.get('t', 'm', 'c:v')).toBe(second); // a snapshot at or above the commit: the same version
    snap.release();
    await db.transaction(async (tx) => {
      expect(tx.get('t', 'm', 'c:v')).toBe(second);
      tx.set('t', 'm', 'c:v', 'mine');
      expect(str(await tx.get('t', 'm', 'c:v'))).toBe('mine'); // its own write first
      tx.set('t', 'm', 'c:v', 'b'); // the same value again: a new version all the same
    });
    expect(db.get('t', 'm', 'c:v')).not.toBe(second);
    expect(str(await db.get('t', 'm', 'c:v'))).toBe('b');
    expect(db.get('t', 'm', 'c:other')).not.toBe(second); // another column of the row
    expect(await db.get('t', 'm', 'c:other')).toBeNull();
    await db.transaction(async (tx) => tx.delete('t', 'm', 'c:v'));
    expect(await db.get('t', 'm', 'c:v')).toBeNull();
    // A value kept in `data` takes a second read, with a promise of its own each time.
    await db.transaction(async (tx) => tx.set('t', 'long', 'c:v', 'L'.repeat(1000)));
    const long = db.get('t', 'long', 'c:v');
    expect(db.get('t', 'long', 'c:v')).not.toBe(long);
    expect(str(await long)?.length).toBe(1000);
    // A closed db and a missing table: rejected promises too.
    const other = await Percolator.open({ store: 'memory:' });
    await other.createTable('t');
    await other.close();
    await expect(other.get('t', 'm', 'c:v')).rejects.toMatchObject({ code: 'TXN_FINISHED' });
    await expect(db.get('missing', 'm', 'c:v')).rejects.toMatchObject({ code: 'TABLE_NOT_FOUND' });
  });

  it('db.get under concurrent multi-row commits: never older than an acknowledged commit, never going back', async () => {
    await checkGetNeverStale(db);
  });

  it('concurrent increments of one counter never lose an update (conflicts retried)', async () => {
    await db.transaction(async (tx) => tx.set('t', 'counter', 'c:n', '0'));
    const n = 40;
    await Promise.all(
      Array.from({ length: n }, () =>
        db.transaction(
          async (tx) => {
            const v = Number(await tx.getString('t', 'counter', 'c:n'));
            tx.set('t', 'counter', 'c:n', String(v + 1));
          },
          { maxAttempts: 200 },
        ),
      ),
    );
    const snap = await db.snapshot();
    expect(await snap.getString('t', 'counter', 'c:n')).toBe(String(n));
    snap.release();
  });

  it('a second writer of the same cell conflicts (first committer wins)', async () => {
    const t1 = await db.begin();
    const t2 = await db.begin();
    t1.set('t', 'k', 'c:v', 'one');
    t2.set('t', 'k', 'c:v', 'two');
    await t1.commit();
    const err = await t2.commit().catch((e: unknown) => e);
    expect(isTxnError(err, 'WRITE_CONFLICT')).toBe(true);
    t1.release();
    t2.release();
  });

  it('a transaction that loses every attempt: RETRIES_EXHAUSTED with the last conflict as cause, and what to change', async () => {
    let attempts = 0;
    const err = await db
      .transaction(
        async (tx) => {
          attempts++;
          tx.set('t', 'hot', 'c:v', 'mine');
          // Another writer commits to the same cell during every attempt: first committer wins.
          await db.transaction(async (other) => other.set('t', 'hot', 'c:v', `theirs ${attempts}`));
        },
        { maxAttempts: 3 },
      )
      .catch((e: unknown) => e);
    expect(attempts).toBe(3);
    expect(isTxnError(err, 'RETRIES_EXHAUSTED')).toBe(true);
    const e = err as Error & { details: Record<string, unknown> };
    expect(e.details).toEqual({ attempts: 3 });
    expect(isTxnError(e.cause, 'WRITE_CONFLICT')).toBe(true);
    expect(e.message).toMatch(/^transaction failed after 3 attempts, each lost to a conflict \(the last, WRITE_CONFLICT, is the cause: /);
    expect(e.message).toMatch(/retry it later, give it more attempts \(maxAttempts\), or spread a hot row over several$/);
    expect(str(await db.get('t', 'hot', 'c:v'))).toBe('theirs 3');
  });

  it('write skew is possible: snapshot isolation, not serializability', async () => {
    // Invariant the application wants: at least one of x, y is on call. Each transaction checks
    // that the other is on call, then goes off call. Under SI both commit (disjoint write sets).
    await db.transaction(async (tx) => {
      tx.set('t', 'x', 'c:oncall', 'yes');
      tx.set('t', 'y', 'c:oncall', 'yes');
    });
    const t1 = await db.begin();
    const t2 = await db.begin();
    if ((await t1.getString('t', 'y', 'c:oncall')) === 'yes') t1.set('t', 'x', 'c:oncall', 'no');
    if ((await t2.getString('t', 'x', 'c:oncall')) === 'yes') t2.set('t', 'y', 'c:oncall', 'no');
    await t1.commit();
    await t2.commit();
    const snap = await db.snapshot();
    expect([await snap.getString('t', 'x', 'c:oncall'), await snap.getString('t', 'y', 'c:oncall')]).toEqual(['no', 'no']);
    snap.release();
    t1.release();
    t2.release();
  });

  it('scans rows of a range with their visible columns', async () => {
    await db.transaction(async (tx) => {
      for (const k of ['a1', 'a2', 'a3', 'b1']) {
        tx.set('t', k, 'c:v', k);
        tx.set('t', k, 'd:w', `${k}!`);
      }
    });
    await db.transaction(async (tx) => tx.delete('t', 'a2', 'c:v'));
    const snap = await db.snapshot();
    const rows: string[] = [];
    for await (const r of snap.scan('t', { prefix: 'a' })) {
      rows.push(`${Buffer.from(r.row).toString()}:${[...r.columns.keys()].sort().join(',')}`);
    }
    expect(rows).toEqual(['a1:c:v,d:w', 'a2:d:w', 'a3:c:v,d:w']);
    const onlyC: string[] = [];
    for await (const r of snap.scan('t', {}, { columns: ['c:'] })) onlyC.push(Buffer.from(r.row).toString());
    expect(onlyC).toEqual(['a1', 'a3', 'b1']);
    snap.release();
  });

  it("a transaction's scan sees its own writes: new rows, changed and deleted columns, in row order, within range, limit and columns", async () => {
    await db.transaction(async (tx) => {
      for (const k of ['a1', 'a3', 'a5']) {
        tx.set('t', k, 'c:v', k);
        tx.set('t', k, 'd:w', `${k}!`);
      }
    });
    const show = (r: { row: Uint8Array; columns: Map<string, Uint8Array> }) =>
      `${Buffer.from(r.row).toString()}:${[...r.columns]
        .map(([c, v]) => `${c}=${Buffer.from(v).toString()}`)
        .sort()
        .join(',')}`;
    const seen = await db.transaction(async (tx) => {
      tx.set('t', 'a2', 'c:v', 'new'); // a row only this transaction has
      tx.set('t', 'a3', 'c:v', 'changed');
      tx.delete('t', 'a5', 'c:v');
      tx.delete('t', 'a5', 'd:w'); // every column of a5: the row is gone
      tx.set('t', 'b1', 'c:v', 'outside'); // not in the prefix
      const all: string[] = [];
      for await (const r of tx.scan('t', { prefix: 'a' })) all.push(show(r));
      const two: string[] = [];
      for await (const r of tx.scan('t', { prefix: 'a' }, { limit: 2 })) two.push(show(r));
      const onlyD: string[] = [];
      for await (const r of tx.scan('t', { prefix: 'a' }, { columns: ['d:'] })) onlyD.push(show(r));
      return { all, two, onlyD };
    });
    expect(seen.all).toEqual(['a1:c:v=a1,d:w=a1!', 'a2:c:v=new', 'a3:c:v=changed,d:w=a3!']);
    expect(seen.two).toEqual(['a1:c:v=a1,d:w=a1!', 'a2:c:v=new']);
    expect(seen.onlyD).toEqual(['a1:d:w=a1!', 'a3:d:w=a3!']);
    const snap = await db.snapshot();
    const after: string[] = [];
    for await (const r of snap.scan('t', { prefix: 'a' })) after.push(show(r));
    expect(after).toEqual(seen.all); // what the transaction saw is what it committed
    await expect(
      (async () => {
        for await (const _ of snap.scan('t', {}, { limit: 0 })) void _;
      })(),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    snap.release();
  });

  it('getVersion gives the commit timestamp of the write a value comes from', async () => {
    const commit = async (fn: (tx: Transaction) => void): Promise<number> => {
      const tx = await db.begin();
      try {
        fn(tx);
        await tx.commit();
        return tx.commitTs as number;
      } finally {
        tx.release();
      }
    };
    const first = await commit((tx) => tx.set('t', 'v', 'c:a', 'one'));
    const second = await commit((tx) => {
      tx.set('t', 'v', 'c:b', 'x'.repeat(1000)); // a long value, kept in data
      tx.delete('t', 'v', 'c:a');
    });
    const between = await db.snapshot(); // above `second`
    const third = await commit((tx) => tx.set('t', 'v', 'c:a', 'three'));
    const tx = await db.begin();
    try {
      const version = async (column: string) => {
        const v = await tx.getVersion('t', 'v', column);
        return [v.value === null ? null : Buffer.from(v.value).toString().slice(0, 5), v.commitTs];
      };
      expect(await version('c:a')).toEqual(['three', third]);
      expect(await version('c:b')).toEqual(['xxxxx', second]);
      expect(await version('c:never')).toEqual([null, 0]);
      tx.set('t', 'v', 'c:b', 'mine');
      expect(await version('c:b')).toEqual(['mine', null]);
      const old = await between.getVersion('t', 'v', 'c:a');
      expect([old.value, old.commitTs]).toEqual([null, second]); // deleted by `second`
      expect(first).toBeLessThan(second);
      // The same through a store without synchronous reads (the full read path).
      const rdb = await Percolator.open({ store: remoteLike(db.store).store, oracle: db.oracle, lockWaitMs: 200, leaseMs: 500 });
      try {
        const remote = await rdb.snapshot(tx.startTs);
        const v = await remote.getVersion('t', 'v', 'c:a');
        expect([Buffer.from(v.value ?? []).toString(), v.commitTs]).toEqual(['three', third]);
        expect((await remote.getVersion('t', 'v', 'c:b')).commitTs).toBe(second);
        remote.release();
      } finally {
        await rdb.close();
      }
    } finally {
      tx.release();
      between.release();
    }
  });

  it('scans at the snapshot: commits and locks above its timestamp are invisible', async () => {
    await db.transaction(async (tx) => {
      for (const k of ['a1', 'a2']) tx.set('t', k, 'c:v', `${k}-old`);
    });
    const snap = await db.snapshot();
    await db.transaction(async (tx) => {
      tx.set('t', 'a1', 'c:v', 'a1-new');
      tx.set('t', 'a3', 'c:v', 'a3-new');
      tx.delete('t', 'a2', 'c:v');
    });
    const { other, reached } = await freezingAt('after-primary-prewrite'); // a lock above the snapshot
    void other.transaction(async (tx) => tx.set('t', 'a2', 'c:v', 'locked'));
    await reached;
    const seen = async (columns?: string[]) => {
      const out: string[] = [];
      for await (const r of snap.scan('t', { prefix: 'a' }, columns === undefined ? {} : { columns })) {
        out.push(`${Buffer.from(r.row).toString()}=${Buffer.from(r.columns.get('c:v') ?? []).toString()}`);
      }
      return out;
    };
    for (const columns of [undefined, ['c:v'], ['c:'], ['c:v']]) expect(await seen(columns)).toEqual(['a1=a1-old', 'a2=a2-old']);
    snap.release();
    await other.close();
  });

  /** Opens a second instance whose commit freezes forever at `point` (a process that stopped). */
  async function freezingAt(point: ProtocolPoint): Promise<{ other: Percolator; reached: Promise<void> }> {
    const { writer, reached } = await frozenWriter({ store: db.store, oracle: db.oracle, point });
    return { other: writer, reached };
  }

  for (const [point, expected] of [
    ['after-primary-prewrite', null],
    ['mid-secondary-prewrites', null],
    ['after-primary-commit', 'v'],
    ['mid-secondary-commits', 'v'],
  ] as const) {
    it(`a writer stopped at ${point} leaves locks that readers resolve to ${expected === null ? 'roll back' : 'roll forward'}`, async () => {
      const { other, reached } = await freezingAt(point);
      void other.transaction(async (tx) => {
        tx.set('t', 'p', 'c:v', 'v');
        tx.set('t', 's1', 'c:v', 'v');
        tx.set('t', 's2', 'c:v', 'v');
      });
      await reached;
      await other.close(); // its lease is gone: the locks' owner is dead
      const snap = await db.snapshot();
      expect(
        await snap
          .getMany(
            't',
            ['p', 's1', 's2'].map((row) => ({ row, column: 'c:v' })),
          )
          .then((vs) => vs.map(str)),
      ).toEqual([expected, expected, expected]);
      snap.release();
      // Every lock is gone after the reads.
      const locks = [];
      for await (const r of db.store.readRows('t', { filter: { familyNameRegexFilter: 'lock' } })) locks.push(r);
      expect(locks).toEqual([]);
    });
  }

  it('a read blocked by a live lock waits, then fails with KEY_LOCKED; once the owner is gone it resolves', async () => {
    const { other, reached } = await freezingAt('after-primary-prewrite');
    void other.transaction(async (tx) => tx.set('t', 'held', 'c:v', 'x'));
    await reached;
    const snap = await db.snapshot();
    const t0 = Date.now();
    const err = await snap.get('t', 'held', 'c:v').catch((e: unknown) => e);
    expect(isTxnError(err, 'KEY_LOCKED')).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    await other.close();
    expect(await snap.get('t', 'held', 'c:v')).toBeNull();
    snap.release();
  });

  it('db.get waits on a live lock like a snapshot read, and resolves it once the owner is gone', async () => {
    await db.transaction(async (tx) => tx.set('t', 'held', 'c:v', 'before'));
    const { other, reached } = await freezingAt('after-primary-prewrite');
    void other.transaction(async (tx) => tx.set('t', 'held', 'c:v', 'x'));
    await reached;
    const err = await db.get('t', 'held', 'c:v').catch((e: unknown) => e);
    expect(isTxnError(err, 'KEY_LOCKED')).toBe(true);
    await other.close();
    expect(str(await db.get('t', 'held', 'c:v'))).toBe('before'); // the dead writer's lock rolled back
  });
});

describe('broken invariants are reported, not hidden', () => {
  it('a secondary rolled back after the commit point: LOCK_NOT_FOUND in db.anomalies and told to `log`, no dangling write record', async () => {
    // Stage the broken invariant: right after the commit point, roll the secondary back the way
    // a resolver would if it wrongly believed the transaction dead.
    const lines: string[] = [];
    const other = await Percolator.open({
      store: db.store,
      oracle: db.oracle,
      commitProtocol: 'two-phase',
      log: (line) => lines.push(line),
      onProtocolPoint: async (p) => {
        if (p !== 'after-primary-commit') return;
        const locks = [];
        for await (const r of db.store.readRows('t', { filter: { familyNameRegexFilter: 'lock' } })) locks.push(r);
        for (const r of locks) for (const c of r.cells) await cleanup(db.store, 't', r.key, encodeColumn('c:v'), c.timestamp);
      },
    });
    const long = 'L'.repeat(1000); // lives in `data`, which the rollback deletes
    await other.transaction(async (tx) => {
      tx.set('t', 'p', 'c:v', long);
      tx.set('t', 's', 'c:v', long);
    });
    expect(other.anomalies.map((e) => e.code)).toEqual(['LOCK_NOT_FOUND']);
    expect(other.anomalies[0]?.details).toMatchObject({ table: 't', column: 'c:v', rolledBack: true });
    expect(lines).toEqual([`anomaly: ${other.anomalies[0]?.message}`]);
    const snap = await db.snapshot();
    expect(str(await snap.get('t', 'p', 'c:v'))).toBe(long);
    expect(str(await snap.get('t', 's', 'c:v'))).toBeNull(); // before: CORRUPTED_RECORD on every read
    snap.release();
    await other.close();
  });
});

describe('db.get on a store without synchronous reads (a remote store)', () => {
  /** A writer on `store` whose commits stop for good at `point` (`reached` resolves there). */
  async function frozenAt(store: Store, point: ProtocolPoint): Promise<{ frozen: Percolator; reached: Promise<void> }> {
    const { writer, reached } = await frozenWriter({ store, oracle: db.oracle, point, commitProtocol: 'auto', leaseMs: 500 });
    return { frozen: writer, reached };
  }

  /** Timestamps the (in-process) oracle handed out so far. */
  const handedOut = () => (db.oracle as Oracle).stats().handedOut;

  it('getMany answers a cell asked twice, embedded or remote, fresh or older snapshot, few or many columns', async () => {
    // Until 2026-11-26 the second mention of a cell read as null.
    const columns = Array.from({ length: 10 }, (_, i) => `c:k${i}`);
    await db.transaction(async (tx) => {
      for (const c of columns) tx.set('t', 'r', c, `old-${c}`);
    });
    const older = await db.snapshot();
    await db.transaction(async (tx) => {
      for (const c of columns) tx.set('t', 'r', c, `new-${c}`);
    });
    const rdb = await Percolator.open({ store: remoteLike(db.store).store, oracle: db.oracle, lockWaitMs: 200, leaseMs: 500 });
    try {
      for (const asked of [
        ['c:k1', 'c:k2', 'c:k1'],
        [...columns, 'c:k3', 'c:k0'],
      ]) {
        const cells = asked.map((column) => ({ row: 'r', column }));
        for (const reader of [db, rdb]) {
          const fresh = await reader.snapshot();
          expect((await fresh.getMany('t', cells)).map(str)).toEqual(asked.map((c) => `new-${c}`));
          fresh.release();
          const old = reader === db ? older : await rdb.snapshot(older.startTs);
          expect((await old.getMany('t', cells)).map(str)).toEqual(asked.map((c) => `old-${c}`));
          if (old !== older) old.release();
        }
      }
    } finally {
      older.release();
      await rdb.close();
    }
  });

  it('getMany tells rows given as strings from rows given as bytes, and reads its own writes', async () => {
    // 'Ã©' as a string is UTF-8 C3 83 C2 A9; the bytes C3 A9 are 'é'. Grouping by the latin1
    // string of the bytes would put the bytes C3 A9 with the string 'Ã©'.
    const rows = { e: 'é', mojibake: 'Ã©', ascii: 'plain' };
    await db.transaction(async (tx) => {
      for (const [name, row] of Object.entries(rows)) tx.set('t', row, 'c:v', name);
    });
    const asBytes = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'));
    const cells = [
      { row: rows.mojibake, column: 'c:v' },
      { row: asBytes(rows.e), column: 'c:v' },
      { row: rows.e, column: 'c:v' },
      { row: asBytes(rows.mojibake), column: 'c:v' },
      { row: Uint8Array.from([0xc3, 0xa9]), column: 'c:v' },
      { row: rows.ascii, column: 'c:v' },
      { row: asBytes(rows.ascii), column: 'c:v' },
      { row: rows.ascii, column: 'c:none' },
    ];
    const snap = await db.snapshot();
    expect((await snap.getMany('t', cells)).map(str)).toEqual(['mojibake', 'e', 'e', 'mojibake', 'e', 'ascii', 'ascii', null]);
    snap.release();
    const tx = await db.begin();
    tx.set('t', asBytes(rows.e), 'c:v', 'mine');
    tx.delete('t', rows.ascii, 'c:v');
    expect((await tx.getMany('t', cells)).map(str)).toEqual(['mojibake', 'mine', 'mine', 'mojibake', 'mine', null, null, null]);
    tx.abort();
    tx.release();
  });

  it('answers from one store read without a timestamp when no lock is on the cell, else at a fresh timestamp', async () => {
    const remote = remoteLike(db.store);
    expect(atomicRowsOf(remote.store)).toBeNull();
    const rdb = await Percolator.open({ store: remote.store, oracle: db.oracle, lockWaitMs: 200, leaseMs: 500 });
    try {
      await rdb.transaction(async (tx) => {
        tx.set('t', 'short', 'c:v', 's');
        tx.set('t', 'long', 'c:v', 'L'.repeat(1000));
        tx.set('t', 'gone', 'c:v', 'x');
      });
      await rdb.transaction(async (tx) => tx.delete('t', 'gone', 'c:v'));
      const handedOutBefore = handedOut();
      const reads = remote.reads();
      expect(str(await rdb.get('t', 'short', 'c:v'))).toBe('s');
      expect(remote.reads() - reads).toBe(1);
      expect(str(await rdb.get('t', 'long', 'c:v'))?.length).toBe(1000); // + the data read
      expect(await rdb.get('t', 'gone', 'c:v')).toBeNull();
      expect(await rdb.get('t', 'never', 'c:v')).toBeNull();
      expect(handedOut()).toBe(handedOutBefore);
      await expect(rdb.get('t', 'short', 'bad')).rejects.toMatchObject({ code: 'INVALID_COLUMN' });

      // A lock on the cell: the ordinary path (a timestamp; waiting, then KEY_LOCKED; resolved once its owner is gone).
      const { frozen, reached } = await frozenAt(remote.store, 'after-primary-prewrite');
      void frozen.transaction(async (tx) => tx.set('t', 'short', 'c:v', 'never committed'));
      await reached;
      const before = handedOut();
      expect(isTxnError(await rdb.get('t', 'short', 'c:v').catch((e: unknown) => e), 'KEY_LOCKED')).toBe(true);
      expect(handedOut()).toBeGreaterThan(before);
      await frozen.close();
      expect(str(await rdb.get('t', 'short', 'c:v'))).toBe('s');
    } finally {
      await rdb.close();
    }
  });

  it('a cell whose commit passed its commit point reads as committed, though its lock is still there', async () => {
    const remote = remoteLike(db.store);
    const rdb = await Percolator.open({ store: remote.store, oracle: db.oracle, lockWaitMs: 200, leaseMs: 500 });
    await rdb.transaction(async (tx) => {
      tx.set('t', 'p', 'c:v', 'old');
      tx.set('t', 's', 'c:v', 'old');
    });
    const { frozen, reached } = await frozenAt(remote.store, 'after-primary-commit');
    try {
      void frozen.transaction(async (tx) => {
        tx.set('t', 'p', 'c:v', 'new');
        tx.set('t', 's', 'c:v', 'new');
      });
      await reached;
      expect(str(await rdb.get('t', 'p', 'c:v'))).toBe('new');
      expect(str(await rdb.get('t', 's', 'c:v'))).toBe('new'); // rolled forward, not the older record
    } finally {
      await frozen.close();
      await rdb.close();
    }
  });

  it('never older than an acknowledged commit under concurrent two-phase commits', async () => {
    const rdb = await Percolator.open({ store: remoteLike(db.store).store, oracle: db.oracle, lockWaitMs: 2000, leaseMs: 500 });
    try {
      await checkGetNeverStale(rdb);
    } finally {
      await rdb.close();
    }
  });
});

describe('one-phase commits (an unshared embedded store)', () => {
  /** A second instance whose one-phase commits stop before their atomic write until released. */
  function heldBeforeWrite(): Promise<{ other: Percolator; reached: Promise<void>; release: () => void }> {
    return heldAt('before-primary-commit');
  }

  /** A second instance whose commits stop at `at` until released. */
  async function heldAt(
    at: ProtocolPoint,
    commitProtocol: 'auto' | 'two-phase' = 'auto',
  ): Promise<{ other: Percolator; reached: Promise<void>; release: () => void }> {
    let release!: () => void;
    const until = new Promise<void>((r) => {
      release = r;
    });
    const { writer, reached } = await frozenWriter({ store: db.store, oracle: db.oracle, point: at, commitProtocol, until });
    return { other: writer, reached, release };
  }

  async function lockCells(): Promise<number> {
    let n = 0;
    for await (const r of db.store.readRows('t', { filter: { familyNameRegexFilter: 'lock' } })) n += r.cells.length;
    return n;
  }

  it('writes no lock cell, and commits every row or none', async () => {
    const { other, reached, release } = await heldBeforeWrite();
    const done = other.transaction(async (tx) => {
      tx.set('t', 'a', 'c:v', 'A');
      tx.set('t', 'b', 'c:v', 'L'.repeat(1000)); // a long value: in `data`
    });
    await reached;
    expect(await lockCells()).toBe(0); // held between commit ts and write: nothing stored yet
    release();
    await done;
    expect(await lockCells()).toBe(0);
    const snap = await db.snapshot();
    expect([await snap.getString('t', 'a', 'c:v'), (await snap.getString('t', 'b', 'c:v'))?.length]).toEqual(['A', 1000]);
    snap.release();
    await other.close();
  });

  it('a reader that started after the commit ts waits for the write, then sees it; one that started before does not wait', async () => {
    const early = await db.snapshot();
    const { other, reached, release } = await heldBeforeWrite();
    const done = other.transaction(async (tx) => tx.set('t', 'k', 'c:v', 'new'));
    await reached; // the commit ts exists, the write does not
    const late = await db.snapshot();
    expect(await early.getString('t', 'k', 'c:v')).toBeNull(); // below the commit: no wait
    let seen: string | null | undefined;
    const reading = late.getString('t', 'k', 'c:v').then((v) => {
      seen = v;
    });
    const scanning = (async () => {
      const rows: string[] = [];
      for await (const r of late.scan('t')) rows.push(Buffer.from(r.row).toString());
      return rows;
    })();
    await new Promise((r) => setImmediate(r));
    expect(seen).toBeUndefined(); // still waiting for the in-flight commit
    release();
    await done;
    await reading;
    expect(seen).toBe('new');
    expect(await scanning).toEqual(['k']);
    early.release();
    late.release();
    await other.close();
  });

  it('db.get, made while a commit of the cell is between its commit ts and its write, waits for the write', async () => {
    await db.transaction(async (tx) => tx.set('t', 'k', 'c:v', 'old'));
    const { other, reached, release } = await heldBeforeWrite();
    const done = other.transaction(async (tx) => tx.set('t', 'k', 'c:v', 'new'));
    await reached; // the commit ts exists, the write does not
    let seen: string | null | undefined;
    const reading = db.get('t', 'k', 'c:v').then((v) => {
      seen = str(v);
    });
    expect(str(await db.get('t', 'other-row', 'c:v'))).toBeNull(); // other cells are not held up
    await new Promise((r) => setImmediate(r));
    expect(seen).toBeUndefined(); // it took a timestamp above the commit's and waits for it
    release();
    await done;
    await reading;
    expect(seen).toBe('new');
    await other.close();
  });

  it('conflicts are decided by the store: first committer wins, a stored lock vetoes', async () => {
    const t1 = await db.begin();
    const t2 = await db.begin();
    t1.set('t', 'k', 'c:v', 'one');
    t1.set('t', 'k2', 'c:v', 'one');
    t2.set('t', 'k2', 'c:v', 'two');
    t2.set('t', 'k3', 'c:v', 'two');
    await t1.commit();
    const err = await t2.commit().catch((e: unknown) => e);
    expect(isTxnError(err, 'WRITE_CONFLICT')).toBe(true);
    const snap = await db.snapshot();
    expect(await snap.get('t', 'k3', 'c:v')).toBeNull(); // none of t2's rows was written
    snap.release();
    t1.release();
    t2.release();
    // A two-phase writer's lock (a shared deployment's process) vetoes a one-phase commit.
    const { writer: twoPhase, reached } = await frozenWriter({ store: db.store, oracle: db.oracle, point: 'after-primary-prewrite' });
    void twoPhase.transaction(async (tx) => tx.set('t', 'locked', 'c:v', 'x'));
    await reached;
    const t3 = await db.begin();
    t3.set('t', 'locked', 'c:v', 'y');
    const locked = await t3.commit().catch((e: unknown) => e);
    expect(isTxnError(locked, 'KEY_LOCKED')).toBe(true);
    t3.release();
    await twoPhase.close();
  });

  it("a live lock on one column of a row does not hold up reads of the row's other columns", async () => {
    await db.transaction(async (tx) => {
      tx.set('t', 'r', 'c:a', 'A');
      tx.set('t', 'r', 'c:b', 'B');
    });
    const { other: twoPhase, reached, release } = await heldAt('after-primary-prewrite', 'two-phase');
    const writer = twoPhase.transaction(async (tx) => tx.set('t', 'r', 'c:b', 'B2'));
    await reached;
    // c:b is locked by a live writer; c:a must read at once (lockWaitMs is 200: waiting for the
    // lock would fail these reads with KEY_LOCKED), through every read path.
    const snap = await db.snapshot();
    expect(await snap.getString('t', 'r', 'c:a')).toBe('A');
    expect(
      (
        await snap.getMany('t', [
          { row: 'r', column: 'c:a' },
          { row: 'other', column: 'c:a' },
        ])
      ).map(str),
    ).toEqual(['A', null]);
    snap.release();
    expect(await db.transaction(async (tx) => tx.getString('t', 'r', 'c:a'))).toBe('A');
    // A bad key after a row whose read had to wait: the call fails with the key's error, and the
    // read already started (it fails with KEY_LOCKED later) must not reject unhandled.
    const both = await db.snapshot();
    const bad = await both
      .getMany('t', [
        { row: 'r', column: 'c:b' },
        { row: '', column: 'c:a' },
      ])
      .catch((e: unknown) => e);
    expect(isStoreError(bad) && bad.code).toBe('EMPTY_ROW_KEY');
    both.release();
    const blocked = await db.snapshot();
    expect(isTxnError(await blocked.get('t', 'r', 'c:b').catch((e: unknown) => e), 'KEY_LOCKED')).toBe(true);
    blocked.release();
    release();
    await writer;
    await twoPhase.close();
  });

  it('a store served to other processes commits in two phases from then on', async () => {
    const atomic = atomicRowsOf(db.store);
    expect(atomic).not.toBeNull();
    atomic?.markShared();
    const { other, reached, release } = await heldAt('after-primary-prewrite');
    const done = other.transaction(async (tx) => tx.set('t', 'k', 'c:v', 'v'));
    await reached;
    expect(await lockCells()).toBe(1);
    release();
    await done;
    expect(await lockCells()).toBe(0);
    await other.close();
  });
});

describe('Percolator.open', () => {
  it('opens a store URL with the given storeOptions', async () => {
    const long = 'r'.repeat(200);
    const limited = await Percolator.open({ store: 'memory:', storeOptions: { limits: { maxRowKeyBytes: 128 } } });
    try {
      await limited.createTable('t');
      const err = await limited.transaction(async (tx) => tx.set('t', long, 'c:x', '1')).catch((e: unknown) => e);
      expect(isStoreError(err) && err.code).toBe('ROW_KEY_TOO_LARGE');
    } finally {
      await limited.close();
    }
    const plain = await Percolator.open({ store: 'memory:' });
    try {
      await plain.createTable('t');
      await plain.transaction(async (tx) => tx.set('t', long, 'c:x', '1'));
      expect(await plain.get('t', long, 'c:x')).not.toBeNull();
    } finally {
      await plain.close();
    }
  });

  it('two close() calls at once close once: the oracle another Percolator on the same store shares stays open', async () => {
    const store = await openStore('memory:');
    const a = await Percolator.open({ store });
    const b = await Percolator.open({ store });
    try {
      await a.createTable('t');
      await Promise.all([a.close(), a.close()]);
      await b.transaction(async (tx) => tx.set('t', 'r', 'c:x', 'v'));
      expect(str(await b.get('t', 'r', 'c:x'))).toBe('v');
    } finally {
      await b.close();
      await store.close();
    }
  });
});

describe('waitForQuiescence through a store out of reach', () => {
  it('takes a pass that failed for a pass that found work: times out instead of calling the system quiet', async () => {
    const worker = db.worker();
    worker.observe('c:v', 'noop', async () => undefined);
    await worker.start();
    await worker.stop(); // c:v is observed; nothing runs its notifications
    await db.transaction(async (tx) => tx.set('t', 'r', 'c:v', 'x'));
    let down: 'getTable' | 'readRows' | null = null;
    const flaky = unreachableAt(db.store, ['getTable', 'readRows'], () => down !== null);
    const other = await Percolator.open({ store: flaky, oracle: db.oracle, leaseMs: 500 });
    try {
      expect(await other.pendingNotifications()).toBe(1);
      for (const method of ['getTable', 'readRows'] as const) {
        down = method;
        await new Promise((r) => setTimeout(r, 1_100)); // past the table list's cache
        const e = await other.waitForQuiescence({ timeoutMs: 200 }).then(
          () => null,
          (x: unknown) => x,
        );
        expect(isTxnError(e, 'QUIESCENCE_TIMEOUT'), `${method}: ${String(e)}`).toBe(true);
        expect((e as Error).cause).toMatchObject({ code: 'IO_ERROR' });
        down = null;
        expect(await other.pendingNotifications()).toBe(1);
      }
    } finally {
      await other.close();
    }
  });
});

describe('bad options are typed errors', () => {
  it('a millisecond server (the emulator, Cloud Bigtable) at timestampScale=1 is refused before it is reached', async () => {
    // Oracle timestamps are µs: such a store would take the first writes and then refuse one with
    // INVALID_TIMESTAMP once two transactions start in the same millisecond. Nothing listens on
    // port 1, and the Cloud URL has no credentials: the refusal comes before any connection.
    for (const store of ['bigtable://127.0.0.1:1?emulator=1&oracle=127.0.0.1:2', 'bigtable://p/i?timestampScale=1&oracle=127.0.0.1:2']) {
      await expect(Percolator.open({ store }), store).rejects.toMatchObject({
        code: 'INVALID_CONFIG',
        message: expect.stringContaining('add timestampScale=1000 to the URL'),
        details: { url: store, timestampScale: 1 },
      });
    }
    // At scale 1000 the check lets it through: what fails next is the missing oracle.
    await expect(Percolator.open({ store: 'bigtable://127.0.0.1:1?emulator=1&timestampScale=1000' })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('?oracle=HOST:PORT'),
    });
  });

  it('durations a timer cannot take, a NaN timeout, zero attempts, a snapshot at NaN or in the future or released, a row key that is not one', async () => {
    for (const options of [{ lockTtlMs: -1 }, { leaseMs: 1e10 }, { gcIntervalMs: Number.NaN }, { lockWaitMs: Number.POSITIVE_INFINITY }]) {
      await expect(Percolator.open({ store: 'memory:', ...options })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    }
    await expect(Percolator.open(null as unknown as object)).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    const db = await Percolator.open({ store: 'memory:' });
    try {
      await expect(db.waitForQuiescence({ timeoutMs: Number.NaN })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(db.transaction(async () => 1, { maxAttempts: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      for (const ts of [Number.NaN, -1, 1.5, Number.POSITIVE_INFINITY])
        await expect(db.snapshot(ts)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      const now = await db.snapshot();
      await expect(db.snapshot(now.startTs + 1e9)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      (await db.snapshot(now.startTs)).release();
      now.release();
      // A released snapshot reads nothing more (GC may have collected what it would read).
      await expect(now.get('t', 'r', 'f:q')).rejects.toMatchObject({ code: 'TXN_FINISHED' });
      await db.createTable('t');
      for (const row of [5, {}, null]) {
        await expect(db.transaction(async (tx) => tx.set('t', row as never, 'f:q', 'v'))).rejects.toMatchObject({
          code: 'INVALID_ARGUMENT',
        });
      }
      await expect(db.transaction(async (tx) => tx.getMany('t', 5 as never))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      await db.close();
    }
  });
});

describe('values belong to whoever holds them', () => {
  it('writing into a value after set, or into a value read, changes nothing committed, even after its row is rewritten and reopened', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'percolator-values-'));
    try {
      let db = await Percolator.open({ store: `file:${dir}`, gcIntervalMs: 0 });
      await db.createTable('t');
      const mine = Buffer.from('100');
      await db.transaction(async (tx) => {
        tx.set('t', 'r', 'f:balance', mine);
        mine.write('999'); // reused before the commit: what was set is what commits
      });
      const read = (await db.get('t', 'r', 'f:balance')) as Uint8Array;
      read.set(Buffer.from('777')); // a reader writes into what it got
      const scanned = await db.transaction(async (tx) => {
        for await (const row of tx.scan('t', {})) (row.columns.get('f:balance') as Uint8Array).fill(0x21);
        tx.set('t', 'r', 'f:other', 'x'); // the row is rewritten from the store's cells
      });
      expect(scanned).toBeUndefined();
      // A long value (kept in `data`, not in the write record) read and written into, likewise.
      const long = 'L'.repeat(4096);
      await db.transaction(async (tx) => tx.set('t', 'r', 'f:long', long));
      ((await db.get('t', 'r', 'f:long')) as Uint8Array).fill(0x23);
      await db.transaction(async (tx) => {
        ((await tx.get('t', 'r', 'f:long')) as Uint8Array).fill(0x24);
        tx.set('t', 'r', 'f:other', 'y');
      });
      expect(await db.getString('t', 'r', 'f:long')).toBe(long);
      await db.close();
      db = await Percolator.open({ store: `file:${dir}`, gcIntervalMs: 0 });
      expect(await db.getString('t', 'r', 'f:balance')).toBe('100');
      expect(await db.getString('t', 'r', 'f:other')).toBe('y');
      expect(await db.getString('t', 'r', 'f:long')).toBe(long);
      await db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a value that is neither a string nor a Uint8Array is INVALID_VALUE, and nothing commits', async () => {
    const db = await Percolator.open({ store: 'memory:' });
    try {
      await db.createTable('t');
      for (const bad of [new ArrayBuffer(8), new DataView(new ArrayBuffer(4)), new Uint16Array([1, 2]), { byteLength: 64 }, 42, null]) {
        await expect(db.transaction(async (tx) => tx.set('t', 'r', 'f:q', bad as never))).rejects.toMatchObject({ code: 'INVALID_VALUE' });
      }
      expect(await db.get('t', 'r', 'f:q')).toBeNull();
    } finally {
      await db.close();
    }
  });
});

describe('gcWatermark', () => {
  it('stays at the oldest open transaction and passes it once that ends', async () => {
    const db = await Percolator.open({ store: 'memory:' });
    try {
      const old = await db.begin();
      const newer = await db.begin();
      expect(await db.gcWatermark()).toBe(old.startTs);
      old.release();
      expect(await db.gcWatermark()).toBe(newer.startTs);
      newer.release();
      const after = await db.gcWatermark();
      expect(after).toBeGreaterThan(newer.startTs);
      // Nothing registered: the next timestamp, and the result never goes backwards.
      expect(await db.gcWatermark()).toBeGreaterThanOrEqual(after);
    } finally {
      await db.close();
    }
    await expect(db.gcWatermark()).rejects.toMatchObject({ code: 'TXN_FINISHED' });
  });
});
