import { beforeEach, describe, expect, it } from 'vitest';
import { encodeColumn } from '../layout.js';
import { readRowAt } from '../snapshot-read.js';
import { type Fixture, makeFixture } from '../txn.fixture.js';
import { cleanup } from './cleanup.js';
import { commitPrimary } from './commit.js';
import { prewrite } from './prewrite.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture();
});
const q = encodeColumn('c:a');
const read = (ts: number) =>
  readRowAt(f.store, 't', Buffer.from('p'), [{ column: 'c:a', q }], ts, { ...f.ctx, lockWaitMs: 0 }).then((v) => v[0]);

describe('cleanup (rollback)', () => {
  it('removes the lock and its data and leaves a rollback record; idempotent', async () => {
    const p = f.row('p', ['c:a', 'x'.repeat(400)]);
    await prewrite(f.store, p, 100, f.template(p));
    expect(await cleanup(f.store, 't', Buffer.from('p'), q, 100)).toBe('rolledBack');
    expect(await cleanup(f.store, 't', Buffer.from('p'), q, 100)).toBe('rolledBack');
    const raw = await f.store.readRow('t', Buffer.from('p'));
    expect(raw?.cells.map((c) => `${c.family}@${c.timestamp}`)).toEqual(['write@100']);
    expect(await read(1000)).toBeNull();
  });

  it('after commit: reports the commit and changes nothing visible (rollback after commit fails)', async () => {
    const p = f.row('p', ['c:a', 'v']);
    await prewrite(f.store, p, 100, f.template(p));
    await commitPrimary(f.store, p, 0, 100, 110);
    expect(await cleanup(f.store, 't', Buffer.from('p'), q, 100)).toEqual({ committed: 110 });
    expect(Buffer.from((await read(200)) ?? []).toString()).toBe('v');
  });

  it('without any lock still writes the rollback record, so a late prewrite fails', async () => {
    expect(await cleanup(f.store, 't', Buffer.from('p'), q, 100)).toBe('rolledBack');
    const p = f.row('p', ['c:a', 'v']);
    await expect(prewrite(f.store, p, 100, f.template(p))).rejects.toMatchObject({ code: 'TXN_ABORTED' });
  });

  it('races with the commit point: exactly one of commit and rollback wins', async () => {
    for (let i = 0; i < 50; i++) {
      const start = 1000 + i * 10;
      const p = f.row(`race${i}`, ['c:a', 'v']);
      await prewrite(f.store, p, start, f.template(p));
      const [c, r] = await Promise.allSettled([commitPrimary(f.store, p, 0, start, start + 5), cleanup(f.store, 't', p.row, q, start)]);
      if (c.status === 'fulfilled') expect(r).toEqual({ status: 'fulfilled', value: { committed: start + 5 } });
      else expect(r).toEqual({ status: 'fulfilled', value: 'rolledBack' });
    }
  });
});
