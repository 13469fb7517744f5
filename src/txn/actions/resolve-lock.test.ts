import { beforeEach, describe, expect, it } from 'vitest';
import { encodeColumn } from '../layout.js';
import { readRowAt } from '../snapshot-read.js';
import { type Fixture, makeFixture } from '../txn.fixture.js';
import { cleanup } from './cleanup.js';
import { commitPrimary } from './commit.js';
import { prewrite } from './prewrite.js';
import { resolveLock } from './resolve-lock.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture();
});

async function twoRowTxn(owner: string, start: number) {
  const p = f.row('p', ['c:a', 'pv']);
  const s = f.row('s', ['c:b', 'sv'], ['c:long', 'L'.repeat(3000)]);
  const template = f.template(p, owner);
  await prewrite(f.store, p, start, template);
  await prewrite(f.store, s, start, template);
  return { p, s };
}

const readS = (column: string, ts: number) =>
  readRowAt(f.store, 't', Buffer.from('s'), [{ column, q: encodeColumn(column) }], ts, { ...f.ctx, lockWaitMs: 0 }).then((v) =>
    v[0] === null || v[0] === undefined ? null : Buffer.from(v[0]).toString(),
  );

describe('resolveLock', () => {
  it('rolls a secondary forward when the primary committed (long values included)', async () => {
    const { p } = await twoRowTxn('crashed', 100);
    await commitPrimary(f.store, p, 0, 100, 110);
    for (const column of ['c:b', 'c:long']) {
      const cell = await f.lockedCell('s', column);
      expect(cell).not.toBeNull();
      if (cell) expect(await resolveLock(f.store, cell, f.ctx)).toBe('committed');
    }
    expect(await readS('c:b', 110)).toBe('sv');
    expect(await readS('c:long', 110)).toBe('L'.repeat(3000));
    expect(await readS('c:b', 109)).toBeNull();
  });

  it('rolls a secondary back when the primary was rolled back, and a late prewrite then fails', async () => {
    const { s } = await twoRowTxn('crashed', 100);
    await cleanup(f.store, 't', Buffer.from('p'), encodeColumn('c:a'), 100);
    const cell = await f.lockedCell('s', 'c:b');
    if (!cell) throw new Error('expected a lock');
    expect(await resolveLock(f.store, cell, f.ctx)).toBe('rolledBack');
    expect(await f.lockedCell('s', 'c:b')).toBeNull();
    await expect(prewrite(f.store, s, 100, f.template(f.row('p', ['c:a', 'pv'])))).rejects.toMatchObject({ code: 'TXN_ABORTED' });
  });

  it('leaves the lock of a live transaction and says locked', async () => {
    await twoRowTxn('w1', 100);
    const cell = await f.lockedCell('s', 'c:b');
    if (!cell) throw new Error('expected a lock');
    expect(await resolveLock(f.store, cell, f.ctx)).toBe('locked');
    expect(await f.lockedCell('s', 'c:b')).not.toBeNull();
  });

  it('a dead owner: resolving a secondary rolls back the primary first, and the owner can no longer commit', async () => {
    const { p } = await twoRowTxn('crashed', 100);
    const cell = await f.lockedCell('s', 'c:b');
    if (!cell) throw new Error('expected a lock');
    expect(await resolveLock(f.store, cell, f.ctx)).toBe('rolledBack');
    await expect(commitPrimary(f.store, p, 0, 100, 110)).rejects.toMatchObject({ code: 'TXN_ABORTED' });
  });

  it('is safe when many readers race on one lock while the primary commits', async () => {
    const { p } = await twoRowTxn('crashed', 100);
    const cell = await f.lockedCell('s', 'c:b');
    if (!cell) throw new Error('expected a lock');
    const [commit, ...resolved] = await Promise.allSettled([
      commitPrimary(f.store, p, 0, 100, 110),
      ...Array.from({ length: 20 }, () => resolveLock(f.store, cell, f.ctx)),
    ]);
    const outcome = commit?.status === 'fulfilled' ? 'committed' : 'rolledBack';
    for (const r of resolved) expect(r).toEqual({ status: 'fulfilled', value: outcome });
    expect(await readS('c:b', 1000)).toBe(outcome === 'committed' ? 'sv' : null);
    expect(await f.lockedCell('s', 'c:b')).toBeNull();
  });
});
