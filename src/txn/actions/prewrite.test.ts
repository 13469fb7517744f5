import { beforeEach, describe, expect, it } from 'vitest';
import { DATA, LOCK, encodeColumn } from '../layout.js';
import { type Fixture, makeFixture } from '../txn.fixture.js';
import { cleanup } from './cleanup.js';
import { commitPrimary } from './commit.js';
import { prewrite } from './prewrite.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture();
});

describe('prewrite', () => {
  it('locks every cell of the row at the start ts, short values in the lock, long ones in data', async () => {
    const long = 'x'.repeat(1000);
    const row = f.row('r', ['c:a', 'short'], ['c:b', long], ['c:d', null]);
    await prewrite(f.store, row, 100, f.template(row));
    const got = await f.store.readRow('t', Buffer.from('r'));
    const cells = got?.cells.map((c) => `${c.family}/${Buffer.from(c.qualifier).toString()}@${c.timestamp}`);
    expect(cells).toEqual(['data/c:b@100', 'lock/c:a@100', 'lock/c:b@100', 'lock/c:d@100']);
    const a = await f.lockedCell('r', 'c:a');
    expect(a?.lock.value).toEqual({ mode: 'inline', value: Buffer.from('short') });
    expect((await f.lockedCell('r', 'c:b'))?.lock.value).toEqual({ mode: 'data' });
    expect((await f.lockedCell('r', 'c:d'))?.lock.kind).toBe('delete');
    expect(a?.lock.primaryColumn).toBe('c:a');
  });

  it('is idempotent: a retried prewrite of the same transaction succeeds', async () => {
    const row = f.row('r', ['c:a', 'v']);
    await prewrite(f.store, row, 100, f.template(row));
    await expect(prewrite(f.store, row, 100, f.template(row))).resolves.toBeUndefined();
  });

  it('fails with KEY_LOCKED carrying the other lock, whatever its timestamp', async () => {
    const first = f.row('r', ['c:a', 'v1']);
    await prewrite(f.store, first, 200, f.template(first));
    for (const ts of [150, 300]) {
      const second = f.row('r', ['c:a', 'v2']);
      await expect(prewrite(f.store, second, ts, f.template(second))).rejects.toMatchObject({
        code: 'KEY_LOCKED',
        retryable: true,
        details: { lockTs: 200, lock: expect.objectContaining({ owner: 'w1', primaryColumn: 'c:a' }) },
      });
    }
  });

  it('fails with WRITE_CONFLICT when a write committed at or after the start ts', async () => {
    const w = f.row('r', ['c:a', 'v1']);
    await prewrite(f.store, w, 100, f.template(w));
    await commitPrimary(f.store, w, 0, 100, 120);
    const late = f.row('r', ['c:a', 'v2']);
    await expect(prewrite(f.store, late, 110, f.template(late))).rejects.toMatchObject({
      code: 'WRITE_CONFLICT',
      details: { commitTs: 120 },
    });
    // A transaction that started after the commit may write.
    await expect(prewrite(f.store, late, 130, f.template(late))).resolves.toBeUndefined();
  });

  it('fails with TXN_ABORTED after the transaction was rolled back (late prewrite)', async () => {
    const q = encodeColumn('c:a');
    expect(await cleanup(f.store, 't', Buffer.from('r'), q, 100)).toBe('rolledBack');
    const row = f.row('r', ['c:a', 'v']);
    await expect(prewrite(f.store, row, 100, f.template(row))).rejects.toMatchObject({ code: 'TXN_ABORTED' });
    const left = await f.store.readRow('t', Buffer.from('r'), { familyNameRegexFilter: `${LOCK}|${DATA}` });
    expect(left).toBeNull();
  });

  it('writes nothing on conflict (no partial row lock)', async () => {
    const a = f.row('r', ['c:b', 'x']);
    await prewrite(f.store, a, 100, f.template(a));
    const both = f.row('r', ['c:a', 'v'], ['c:b', 'w']);
    await expect(prewrite(f.store, both, 150, f.template(both))).rejects.toMatchObject({ code: 'KEY_LOCKED' });
    expect(await f.lockedCell('r', 'c:a')).toBeNull();
  });
});
