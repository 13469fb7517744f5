import { beforeEach, describe, expect, it } from 'vitest';
import { encodeColumn, lockAtFilter, valueRefFor } from '../layout.js';
import { readRowAt } from '../snapshot-read.js';
import { type Fixture, makeFixture } from '../txn.fixture.js';
import { cleanup } from './cleanup.js';
import { commitCellMutations, commitPrimary, commitSecondary } from './commit.js';
import { prewrite } from './prewrite.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture();
});

const read = (row: string, column: string, ts: number) =>
  readRowAt(f.store, 't', Buffer.from(row), [{ column, q: encodeColumn(column) }], ts, { ...f.ctx, lockWaitMs: 0 }).then((v) =>
    v[0] === null || v[0] === undefined ? null : Buffer.from(v[0]).toString(),
  );

describe('commit', () => {
  it('makes the value visible exactly from the commit timestamp on', async () => {
    const p = f.row('p', ['c:a', 'v1']);
    await prewrite(f.store, p, 100, f.template(p));
    expect(await commitPrimary(f.store, p, 0, 100, 110)).toBe(110);
    expect(await read('p', 'c:a', 109)).toBeNull();
    expect(await read('p', 'c:a', 110)).toBe('v1');
    expect(await f.lockedCell('p', 'c:a')).toBeNull();
  });

  it('is idempotent: committing again returns the commit timestamp in effect', async () => {
    const p = f.row('p', ['c:a', 'v1']);
    await prewrite(f.store, p, 100, f.template(p));
    expect(await commitPrimary(f.store, p, 0, 100, 110)).toBe(110);
    expect(await commitPrimary(f.store, p, 0, 100, 110)).toBe(110);
    expect(await commitPrimary(f.store, p, 0, 100, 130)).toBe(110);
    const s = f.row('s', ['c:b', 'v2']);
    await prewrite(f.store, s, 100, f.template(p));
    await commitSecondary(f.store, s, 100, 110);
    await commitSecondary(f.store, s, 100, 110);
    expect(await read('s', 'c:b', 200)).toBe('v2');
  });

  it('fails with TXN_ABORTED after a rollback of the primary', async () => {
    const p = f.row('p', ['c:a', 'v1']);
    await prewrite(f.store, p, 100, f.template(p));
    expect(await cleanup(f.store, 't', Buffer.from('p'), encodeColumn('c:a'), 100)).toBe('rolledBack');
    await expect(commitPrimary(f.store, p, 0, 100, 110)).rejects.toMatchObject({ code: 'TXN_ABORTED', retryable: true });
    expect(await read('p', 'c:a', 200)).toBeNull();
  });

  it('commits every cell of the primary row atomically, deletes and long values included', async () => {
    const setup = f.row('p', ['c:gone', 'old']);
    await prewrite(f.store, setup, 50, f.template(setup));
    await commitPrimary(f.store, setup, 0, 50, 60);
    const long = 'L'.repeat(5000);
    const p = f.row('p', ['c:a', 'short'], ['c:b', long], ['c:gone', null]);
    await prewrite(f.store, p, 100, f.template(p));
    await commitPrimary(f.store, p, 0, 100, 110);
    expect(await read('p', 'c:a', 110)).toBe('short');
    expect(await read('p', 'c:b', 110)).toBe(long);
    expect(await read('p', 'c:gone', 110)).toBeNull();
    expect(await read('p', 'c:gone', 105)).toBe('old');
  });

  it('commits many secondaries concurrently, each row whole; idempotent', async () => {
    const p = f.row('p', ['c:a', 'v0']);
    await prewrite(f.store, p, 100, f.template(p));
    const rows = Array.from({ length: 5 }, (_, i) => f.row(`s${i}`, ['c:a', `v${i}`], ['c:b', null]));
    for (const r of rows) await prewrite(f.store, r, 100, f.template(p));
    await commitPrimary(f.store, p, 0, 100, 110);
    await Promise.all(rows.map((r) => commitSecondary(f.store, r, 100, 110)));
    await Promise.all(rows.map((r) => commitSecondary(f.store, r, 100, 110)));
    for (let i = 0; i < 5; i++) {
      expect(await read(`s${i}`, 'c:a', 110)).toBe(`v${i}`);
      expect(await read(`s${i}`, 'c:a', 109)).toBeNull();
      expect(await f.lockedCell(`s${i}`, 'c:a')).toBeNull();
      expect(await f.lockedCell(`s${i}`, 'c:b')).toBeNull();
    }
  });

  it('a secondary some of whose cells a resolver already rolled forward: the rest are committed too', async () => {
    const p = f.row('p', ['c:a', 'v0']);
    await prewrite(f.store, p, 100, f.template(p));
    const long = 'L'.repeat(1000);
    const s = f.row('s', ['c:a', long], ['c:b', 'two']);
    await prewrite(f.store, s, 100, f.template(p));
    await commitPrimary(f.store, p, 0, 100, 110);
    // A reader rolled `c:a` forward (resolve-lock's mutation), but not `c:b` yet.
    const a = s.cells[0] as (typeof s.cells)[number];
    await f.store.checkAndMutateRow('t', s.row, {
      predicateFilter: lockAtFilter(a.q, 100),
      trueMutations: commitCellMutations(a.q, a.kind, valueRefFor(a.kind, a.value), 100, 110, false),
    });
    await commitSecondary(f.store, s, 100, 110);
    expect(await read('s', 'c:a', 110)).toBe(long);
    expect(await read('s', 'c:b', 110)).toBe('two');
    expect(await f.lockedCell('s', 'c:b')).toBeNull();
  });

  it('a secondary whose lock was rolled back: LOCK_NOT_FOUND, and no write record pointing at deleted data', async () => {
    const p = f.row('p', ['c:a', 'v0']);
    await prewrite(f.store, p, 100, f.template(p));
    const long = 'L'.repeat(1000);
    const s = f.row('s', ['c:a', long]);
    await prewrite(f.store, s, 100, f.template(p));
    await commitPrimary(f.store, p, 0, 100, 110);
    // The broken invariant itself, staged: the secondary rolled back after the commit point.
    expect(await cleanup(f.store, 't', Buffer.from('s'), encodeColumn('c:a'), 100)).toBe('rolledBack');
    await expect(commitSecondary(f.store, s, 100, 110)).rejects.toMatchObject({
      code: 'LOCK_NOT_FOUND',
      details: { startTs: 100, commitTs: 110, rolledBack: true },
    });
    // Before, the unconditional commit wrote a record whose `data` cell the rollback had deleted:
    // every later reader failed with CORRUPTED_RECORD. Now the cell reads as never written.
    expect(await read('s', 'c:a', 200)).toBeNull();
  });

  it('commitSecondary reports a row the store refused', async () => {
    const bad = { ...f.row('s', ['c:a', 'v']), table: 'missing' };
    await expect(commitSecondary(f.store, bad, 100, 110)).rejects.toMatchObject({ code: 'TABLE_NOT_FOUND' });
  });
});
