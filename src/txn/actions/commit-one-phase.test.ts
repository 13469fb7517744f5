import { beforeEach, describe, expect, it } from 'vitest';
import { atomicRowsOf, type AtomicRowsStore } from '../../store/store.js';
import { type BufferedRow } from './types.js';
import { decodeWrite } from '../layout.js';
import { type Fixture, makeFixture } from '../txn.fixture.js';
import { commitOnePhase } from './commit-one-phase.js';
import { commitPrimary } from './commit.js';
import { prewrite } from './prewrite.js';

let f: Fixture;
let store: AtomicRowsStore;
beforeEach(async () => {
  f = await makeFixture();
  const atomic = atomicRowsOf(f.store);
  if (atomic === null) throw new Error('the fixture store is embedded');
  store = atomic;
});

const cellsOf = async (row: string): Promise<string[]> =>
  ((await f.store.readRow('t', Buffer.from(row)))?.cells ?? []).map(
    (c) => `${c.family}/${Buffer.from(c.qualifier).toString()}@${c.timestamp}`,
  );

/** `row` with its first cell marked observed (a notify cell comes with its commit). */
const observed = (row: BufferedRow): BufferedRow => ({ ...row, cells: row.cells.map((c, i) => ({ ...c, notify: i === 0 })) });

describe('commitOnePhase', () => {
  it('commits every row at commitTs in one write: records (short values inline), long values in data, notify cells, no lock', async () => {
    const long = 'x'.repeat(1000);
    const a = observed(f.row('a', ['c:v', 'short'], ['c:d', null]));
    const b = f.row('b', ['c:v', long]);
    await commitOnePhase(store, [a, b], 100, 110);
    expect(await cellsOf('a')).toEqual(['notify/c:v@110', 'write/c:d@110', 'write/c:v@110']);
    expect(await cellsOf('b')).toEqual(['data/c:v@100', 'write/c:v@110']);
    const rec = (await f.store.readRow('t', Buffer.from('a')))?.cells.find(
      (c) => c.family === 'write' && Buffer.from(c.qualifier).toString() === 'c:v',
    );
    expect(decodeWrite(rec?.value ?? new Uint8Array())).toEqual({
      kind: 'put',
      startTs: 100,
      value: { mode: 'inline', value: Buffer.from('short') },
    });
  });

  it('fails with KEY_LOCKED on a lock at any timestamp, and writes none of its rows', async () => {
    const locker = f.row('b', ['c:v', 'theirs']);
    await prewrite(f.store, locker, 300, f.template(locker));
    for (const ts of [200, 400]) {
      await expect(commitOnePhase(store, [f.row('a', ['c:v', 'mine']), f.row('b', ['c:v', 'mine'])], ts, ts + 10)).rejects.toMatchObject({
        code: 'KEY_LOCKED',
        retryable: true,
        details: { lockTs: 300 },
      });
    }
    expect(await cellsOf('a')).toEqual([]);
  });

  it('fails with WRITE_CONFLICT on a write at or after its start ts; an older write does not conflict', async () => {
    const w = f.row('r', ['c:v', 'first']);
    await prewrite(f.store, w, 100, f.template(w));
    await commitPrimary(f.store, w, 0, 100, 120);
    await expect(commitOnePhase(store, [f.row('r', ['c:v', 'late'])], 110, 130)).rejects.toMatchObject({
      code: 'WRITE_CONFLICT',
      details: { commitTs: 120 },
    });
    await expect(commitOnePhase(store, [f.row('r', ['c:other', 'x'])], 110, 130)).resolves.toBeUndefined(); // another column
    await commitOnePhase(store, [f.row('r', ['c:v', 'after'])], 125, 140);
    expect(await cellsOf('r')).toEqual(['write/c:other@130', 'write/c:v@140', 'write/c:v@120']);
  });

  it('writes side writes in the same write: into a committed row, or as rows of their own; none when vetoed', async () => {
    const weak = (row: string, ts: number) => ({
      table: 't',
      row: Buffer.from(row),
      mutations: [
        { setCell: { familyName: 'notify', columnQualifier: Buffer.from('c:ping'), timestampMicros: ts, value: Buffer.from('w') } },
      ],
    });
    const clear = (row: string, upTo: number) => ({
      table: 't',
      row: Buffer.from(row),
      mutations: [
        {
          deleteFromColumn: {
            familyName: 'notify',
            columnQualifier: Buffer.from('c:v'),
            timeRange: { startTimestampMicros: 0, endTimestampMicros: upTo + 1 },
          },
        },
      ],
    });
    // A notification of `a` to be cleared up to 50 by the commit; one at 60 must survive.
    for (const ts of [50, 60]) {
      await f.store.mutateRow('t', Buffer.from('a'), [
        { setCell: { familyName: 'notify', columnQualifier: Buffer.from('c:v'), timestampMicros: ts, value: Buffer.from('') } },
      ]);
    }
    await commitOnePhase(store, [f.row('a', ['c:v', 'x'])], 100, 110, 'durable', [clear('a', 50), weak('b', 110)]);
    expect(await cellsOf('a')).toEqual(['notify/c:v@60', 'write/c:v@110']);
    expect(await cellsOf('b')).toEqual(['notify/c:ping@110']);
    // Vetoed (a write after its start ts): neither the rows nor the side writes are written.
    await expect(
      commitOnePhase(store, [f.row('a', ['c:v', 'y'])], 105, 120, 'durable', [clear('a', 60), weak('c', 120)]),
    ).rejects.toMatchObject({
      code: 'WRITE_CONFLICT',
    });
    expect(await cellsOf('a')).toEqual(['notify/c:v@60', 'write/c:v@110']);
    expect(await cellsOf('c')).toEqual([]);
  });
});
