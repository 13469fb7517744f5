import { beforeEach, describe, expect, it } from 'vitest';
import { type Fixture, makeFixture } from '../txn.fixture.js';
import { prewrite } from './prewrite.js';
import { rollBackRows } from './roll-back.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture();
});

/** Every cell of row `key`, as `family@timestamp`. */
async function cellsOf(key: string): Promise<string[]> {
  const r = await f.store.readRow('t', Buffer.from(key));
  return r?.cells.map((c) => `${c.family}@${c.timestamp}`) ?? [];
}

describe('rollBackRows (a transaction undoing its own prewrites)', () => {
  it('drops every lock and long value of every row at once and leaves rollback records; idempotent', async () => {
    const p = f.row('p', ['c:a', 'x'.repeat(400)], ['c:b', 'short']);
    const s = f.row('s', ['c:a', null]);
    for (const r of [p, s]) await prewrite(f.store, r, 100, f.template(p));
    expect(await cellsOf('p')).toContain('data@100');
    for (let i = 0; i < 2; i++) {
      await rollBackRows(f.store, [p, s], 100);
      expect(await cellsOf('p')).toEqual(['write@100', 'write@100']);
      expect(await cellsOf('s')).toEqual(['write@100']);
    }
  });

  it('writes the rollback record on a row it never locked, so a late prewrite of it fails', async () => {
    const p = f.row('p', ['c:a', 'v']);
    await rollBackRows(f.store, [p], 100);
    await expect(prewrite(f.store, p, 100, f.template(p))).rejects.toMatchObject({ code: 'TXN_ABORTED' });
    expect(await f.lockedCell('p', 'c:a')).toBeNull();
  });

  it("touches no other transaction's lock or commit on the same cells", async () => {
    const p = f.row('p', ['c:a', 'theirs']);
    await prewrite(f.store, p, 200, f.template(p));
    await rollBackRows(f.store, [f.row('p', ['c:a', 'ours'])], 100);
    expect((await f.lockedCell('p', 'c:a'))?.startTs).toBe(200);
    expect(await cellsOf('p')).toEqual(['lock@200', 'write@100']);
  });

  it("drops the notify cell a secondary's prewrite set on an observed column", async () => {
    const p = f.row('p', ['c:a', 'v']);
    const observed = { ...f.row('s', ['c:o', 'v']), cells: f.row('s', ['c:o', 'v']).cells.map((c) => ({ ...c, notify: true })) };
    await prewrite(f.store, observed, 100, f.template(p));
    expect(await cellsOf('s')).toContain('notify@100');
    await rollBackRows(f.store, [p, observed], 100);
    expect(await cellsOf('s')).toEqual(['write@100']);
  });
});
