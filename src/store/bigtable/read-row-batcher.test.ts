import { describe, expect, it } from 'vitest';
import { bytesKey } from '../bytes.js';
import { CellRecord } from '../cells.js';
import type { Bytes, Row, RowFilter } from '../types.js';
import { type ReadGroup, type ReadGroups, ReadRowBatcher } from './read-row-batcher.js';

const b = (s: string) => Buffer.from(s);
const f1: RowFilter = { familyNameRegexFilter: 'a' };
const f2: RowFilter = { familyNameRegexFilter: 'b' };

/** A fake store: rows exist for keys that do not start with "none"; a row's one cell names its table and filter. */
function rowsOf(table: string, filter: RowFilter | undefined, keys: readonly Bytes[]): Map<string, Row> {
  const out = new Map<string, Row>();
  for (const k of keys) {
    if (Buffer.from(k).toString().startsWith('none')) continue;
    out.set(bytesKey(k), { key: k, cells: [new CellRecord('f', b('q'), 1, b(`${table}/${JSON.stringify(filter ?? null)}`))] });
  }
  return out;
}

function fake(grouped?: (groups: readonly ReadGroup[]) => ReturnType<ReadGroups>) {
  const single: { table: string; keys: string[] }[] = [];
  const calls: ReadGroup[][] = [];
  const batcher = new ReadRowBatcher(
    async (table, filter, keys) => {
      single.push({ table, keys: keys.map((k) => Buffer.from(k).toString()) });
      return rowsOf(table, filter, keys);
    },
    grouped === undefined
      ? undefined
      : (groups) => {
          calls.push([...groups]);
          return grouped(groups);
        },
  );
  return { batcher, single, calls };
}
const answer = (groups: readonly ReadGroup[]) => Promise.resolve(groups.map((g) => ({ rows: rowsOf(g.table, g.filter, g.keys) })));
const value = (r: Row | null) => (r === null ? null : Buffer.from(r.cells[0]?.value ?? []).toString());

describe('ReadRowBatcher', () => {
  it('reads the groups of one turn (tables and filters) in one call, each key once, each caller its row', async () => {
    const { batcher, single, calls } = fake(answer);
    const rows = await Promise.all([
      batcher.read('t', b('k1'), f1),
      batcher.read('t', b('k2'), f1),
      batcher.read('t', b('k1'), f1),
      batcher.read('t', b('k1'), f2),
      batcher.read('u', b('none'), f1),
    ]);
    expect(rows.map(value)).toEqual([
      't/{"familyNameRegexFilter":"a"}',
      't/{"familyNameRegexFilter":"a"}',
      't/{"familyNameRegexFilter":"a"}',
      't/{"familyNameRegexFilter":"b"}',
      null,
    ]);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.map((g) => [g.table, g.filter, g.keys.map((k) => Buffer.from(k).toString())])).toEqual([
      ['t', f1, ['k1', 'k2']],
      ['t', f2, ['k1']],
      ['u', f1, ['none']],
    ]);
    expect(single).toHaveLength(0);
    expect(batcher.stats).toEqual({ groupedCalls: 1, groupedGroups: 3 });
  });

  it('reads a lone group with one request of its own, as without grouping', async () => {
    const { batcher, single, calls } = fake(answer);
    await Promise.all([batcher.read('t', b('k1'), f1), batcher.read('t', b('k2'), f1)]);
    expect(calls).toHaveLength(0);
    expect(single).toEqual([{ table: 't', keys: ['k1', 'k2'] }]);
  });

  it("fails only the callers of a group the server refused, with that group's error", async () => {
    const refused = new Error('TABLE_NOT_FOUND');
    const { batcher } = fake((groups) =>
      Promise.resolve(groups.map((g) => (g.table === 'gone' ? { error: refused } : { rows: rowsOf(g.table, g.filter, g.keys) }))),
    );
    const out = await Promise.allSettled([
      batcher.read('t', b('k1'), f1),
      batcher.read('gone', b('k1'), f1),
      batcher.read('gone', b('k2'), f1),
    ]);
    expect(out.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect((out[1] as PromiseRejectedResult).reason).toBe(refused);
  });

  it('reads group by group when the grouped call fails as a whole, and for good once the server says UNIMPLEMENTED', async () => {
    let code = 14;
    const { batcher, single, calls } = fake(() => Promise.reject(Object.assign(new Error('failed'), { code })));
    const first = await Promise.all([batcher.read('t', b('k1'), f1), batcher.read('t', b('k1'), f2)]);
    expect(first.map(value)).toEqual(['t/{"familyNameRegexFilter":"a"}', 't/{"familyNameRegexFilter":"b"}']);
    expect(single).toHaveLength(2);
    expect(calls).toHaveLength(1);
    // A transport failure does not stop grouping; UNIMPLEMENTED does.
    code = 12;
    await Promise.all([batcher.read('t', b('k2'), f1), batcher.read('t', b('k2'), f2)]);
    expect(calls).toHaveLength(2);
    await Promise.all([batcher.read('t', b('k3'), f1), batcher.read('t', b('k3'), f2)]);
    expect(calls).toHaveLength(2);
    expect(single).toHaveLength(6);
  });

  it('reads group by group when the grouped call answers a different number of groups', async () => {
    const { batcher, single } = fake((groups) => answer(groups.slice(1)));
    const rows = await Promise.all([batcher.read('t', b('k1'), f1), batcher.read('u', b('k1'), f1)]);
    expect(rows.map(value)).toEqual(['t/{"familyNameRegexFilter":"a"}', 'u/{"familyNameRegexFilter":"a"}']);
    expect(single.map((r) => r.table)).toEqual(['t', 'u']);
  });

  it('keeps a grouped call to at most 1 000 keys', async () => {
    const { batcher, calls, single } = fake(answer);
    const reads = Array.from({ length: 1500 }, (_, i) => batcher.read('t', b(`k${i}`), i % 2 === 0 ? f1 : f2));
    reads.push(batcher.read('u', b('x'), f1));
    expect((await Promise.all(reads)).filter((r) => r !== null)).toHaveLength(1501);
    // 750 keys a filter on t, one on u: the first group alone is a request of its own.
    expect(calls.map((c) => c.map((g) => g.keys.length))).toEqual([[750, 1]]);
    expect(single).toEqual([{ table: 't', keys: Array.from({ length: 750 }, (_, i) => `k${2 * i}`) }]);
  });
});
