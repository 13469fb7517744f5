import { beforeEach, describe, expect, it } from 'vitest';
import { encodeColumn } from '../layout.js';
import { type Fixture, makeFixture } from '../txn.fixture.js';
import { checkTxnStatus } from './check-txn-status.js';
import { commitPrimary } from './commit.js';
import { prewrite } from './prewrite.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture();
});
const primary = { table: 't', row: Buffer.from('p'), q: encodeColumn('c:a') };

describe('checkTxnStatus', () => {
  it('reports a live owner within its TTL as locked and leaves the lock', async () => {
    const p = f.row('p', ['c:a', 'v']);
    await prewrite(f.store, p, 100, f.template(p, 'w1', 10_000));
    expect(await checkTxnStatus(f.store, primary, 100, f.ctx)).toMatchObject({ state: 'locked' });
    expect(await f.lockedCell('p', 'c:a')).not.toBeNull();
  });

  it('rolls back the lock of a dead owner', async () => {
    const p = f.row('p', ['c:a', 'v']);
    await prewrite(f.store, p, 100, f.template(p, 'crashed-worker'));
    expect(await checkTxnStatus(f.store, primary, 100, f.ctx)).toEqual({ state: 'rolledBack' });
    expect(await f.lockedCell('p', 'c:a')).toBeNull();
    await expect(commitPrimary(f.store, p, 0, 100, 110)).rejects.toMatchObject({ code: 'TXN_ABORTED' });
  });

  it('rolls back a lock older than its TTL even if the owner looks alive', async () => {
    const p = f.row('p', ['c:a', 'v']);
    await prewrite(f.store, p, 100, f.template(p, 'w1', 500));
    f.clock.ms += 499;
    expect((await checkTxnStatus(f.store, primary, 100, f.ctx)).state).toBe('locked');
    f.clock.ms += 2;
    expect(await checkTxnStatus(f.store, primary, 100, f.ctx)).toEqual({ state: 'rolledBack' });
  });

  it('reports committed with the commit timestamp', async () => {
    const p = f.row('p', ['c:a', 'v']);
    await prewrite(f.store, p, 100, f.template(p, 'crashed-worker'));
    await commitPrimary(f.store, p, 0, 100, 123);
    expect(await checkTxnStatus(f.store, primary, 100, f.ctx)).toEqual({ state: 'committed', commitTs: 123 });
  });

  it('a transaction never seen on the primary is rolled back for good', async () => {
    expect(await checkTxnStatus(f.store, primary, 100, f.ctx)).toEqual({ state: 'rolledBack' });
    const p = f.row('p', ['c:a', 'v']);
    await expect(prewrite(f.store, p, 100, f.template(p))).rejects.toMatchObject({ code: 'TXN_ABORTED' });
  });

  it('many checkers racing with the owner agree with the final outcome', async () => {
    const p = f.row('p', ['c:a', 'v']);
    await prewrite(f.store, p, 100, f.template(p, 'crashed-worker'));
    const results = await Promise.allSettled([
      commitPrimary(f.store, p, 0, 100, 150),
      ...Array.from({ length: 20 }, () => checkTxnStatus(f.store, primary, 100, f.ctx)),
    ]);
    const [commit, ...checks] = results;
    const states = new Set(checks.map((c) => (c.status === 'fulfilled' ? c.value.state : 'error')));
    expect(states.size).toBe(1);
    expect([...states][0]).toBe(commit?.status === 'fulfilled' ? 'committed' : 'rolledBack');
  });
});
