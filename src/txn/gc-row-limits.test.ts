/**
 * Version GC under the store's per-row limit (`Store.limits.maxMutationsPerRow`, Cloud Bigtable's
 * 100 000): a row holding more old versions than one row mutation can delete is collected in
 * several row mutations, each within the limit and each deleting whole versions (a write record
 * with its `data` cell), and what every live snapshot reads is unchanged. The store here takes
 * 30 mutations a row mutation: a wide row is built from transactions of 10 cells (3 mutations a
 * cell to roll back, which row-limits.ts checks), each pass then needs well over 30 deletions.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Mutation } from '../store/types.js';
import { Percolator } from './percolator.js';

const LIMIT = 30;
const COLUMNS = 60;
/** Columns round(…, 5) deletes. */
const DELETED = COLUMNS / 5;
const HOUR = 3_600_000; // background GC on (targeted passes track commits) but no tick during a test

let db: Percolator | null = null;
afterEach(async () => {
  await db?.close();
  db = null;
});

async function open(gcIntervalMs: number): Promise<Percolator> {
  db = await Percolator.open({ store: 'memory:', leaseMs: 500, gcIntervalMs, storeOptions: { limits: { maxMutationsPerRow: LIMIT } } });
  await db.createTable('t');
  return db;
}

/** Long values live in `data` (odd columns), short ones inline in the write record. */
const value = (round: number, i: number): string => (i % 2 === 1 ? `r${round}-${i}`.padEnd(400, '.') : `r${round}-${i}`);

/**
 * One round: every column c:0… of row `wide` (in transactions of 10 cells), and c:v of rows `a`
 * and `zz`, on both sides of it in key order. With `deleteEvery`, columns i % deleteEvery === 0
 * are deleted instead.
 */
async function round(p: Percolator, r: number, deleteEvery = 0): Promise<void> {
  for (let from = 0; from < COLUMNS; from += 10) {
    await p.transaction(async (tx) => {
      for (let i = from; i < from + 10; i++) {
        if (deleteEvery > 0 && i % deleteEvery === 0) tx.delete('t', 'wide', `c:${i}`);
        else tx.set('t', 'wide', `c:${i}`, value(r, i));
      }
      if (from === 0) {
        tx.set('t', 'a', 'c:v', `a${r}`.padEnd(400, '.'));
        tx.set('t', 'zz', 'c:v', `zz${r}`);
      }
    });
  }
}

/** Everything a snapshot reads of the rows written. */
async function readAll(s: { getString(t: string, r: string, c: string): Promise<string | null> }): Promise<(string | null)[]> {
  const out: (string | null)[] = [];
  for (let i = 0; i < COLUMNS; i++) out.push(await s.getString('t', 'wide', `c:${i}`));
  out.push(await s.getString('t', 'a', 'c:v'), await s.getString('t', 'zz', 'c:v'));
  return out;
}

/** Write records and data cells per column of a row, as stored. */
async function stored(p: Percolator, row: string): Promise<Map<string, { write: number; data: number }>> {
  const out = new Map<string, { write: number; data: number }>();
  const r = await p.store.readRow('t', Buffer.from(row), { familyNameRegexFilter: 'write|data' });
  for (const c of r?.cells ?? []) {
    const q = Buffer.from(c.qualifier).toString();
    const n = out.get(q) ?? { write: 0, data: 0 };
    if (c.family === 'write') n.write++;
    else n.data++;
    out.set(q, n);
  }
  return out;
}

/** Records the GC's row mutations on `wide`, to check each against the limit and for whole versions. */
function watchRewrites(p: Percolator): { calls: Mutation[][]; restore(): void } {
  const calls: Mutation[][] = [];
  const real = p.store.mutateRow.bind(p.store);
  const spy = vi.spyOn(p.store, 'mutateRow').mockImplementation(async (table, key, mutations, options) => {
    if (Buffer.from(key).toString() === 'wide') calls.push([...mutations]);
    return real(table, key, mutations, options);
  });
  return { calls, restore: () => spy.mockRestore() };
}

/** Per qualifier, the write-record deletions and the data deletions of one row mutation. */
function deletionsPerColumn(mutations: readonly Mutation[]): Map<string, { write: number; data: number }> {
  const out = new Map<string, { write: number; data: number }>();
  for (const m of mutations) {
    if (!('deleteFromColumn' in m)) throw new Error(`GC wrote ${JSON.stringify(m)}`);
    const q = Buffer.from(m.deleteFromColumn.columnQualifier).toString();
    const n = out.get(q) ?? { write: 0, data: 0 };
    if (m.deleteFromColumn.familyName === 'write') n.write++;
    else if (m.deleteFromColumn.familyName === 'data') n.data++;
    else throw new Error(`GC deleted from ${m.deleteFromColumn.familyName}`);
    out.set(q, n);
  }
  return out;
}

describe('a full pass (collectGarbage) over a row with more old versions than one row mutation can delete', () => {
  it('collects it completely in row mutations within the limit, whole columns each, and every live snapshot reads the same', async () => {
    const p = await open(0);
    await round(p, 0);
    await round(p, 1);
    const mid = await p.snapshot(); // holds the watermark: round 1 is what it reads
    await round(p, 2, 5);
    const now = await p.snapshot();
    const atMid = await readAll(mid);
    const atNow = await readAll(now);
    expect(atMid[1]).toBe(value(1, 1));
    expect(atNow[0]).toBeNull(); // deleted in round 2

    const watch = watchRewrites(p);
    const first = await p.collectGarbage();
    // Round 0 of every column goes: 60 columns × (a record range + a data range) = 120 deletions.
    expect(first.versionsRemoved).toBe(COLUMNS + 2);
    expect(await readAll(mid)).toEqual(atMid);
    expect(await readAll(now)).toEqual(atNow);
    mid.release();
    const second = await p.collectGarbage();
    // Round 1, now that no snapshot reads it, and the delete records of round 2: a reader finds
    // no version of a deleted column where it found a delete.
    expect(second.versionsRemoved).toBe(COLUMNS + 2 + DELETED);
    watch.restore();
    expect(await readAll(now)).toEqual(atNow);

    expect(watch.calls.length).toBeGreaterThanOrEqual(2 * Math.ceil((2 * COLUMNS) / LIMIT));
    for (const call of watch.calls) {
      expect(call.length).toBeLessThanOrEqual(LIMIT);
      // A column's record range and data range travel in one row mutation.
      for (const n of deletionsPerColumn(call).values()) expect(n).toEqual({ write: 1, data: 1 });
    }
    // One version left per column: its write record, and its data cell if it is a long put; none
    // of a deleted column.
    const wide = await stored(p, 'wide');
    for (let i = 0; i < COLUMNS; i++) {
      const inData = i % 2 === 1;
      expect(wide.get(`c:${i}`), `c:${i}`).toEqual(i % 5 === 0 ? undefined : { write: 1, data: inData ? 1 : 0 });
    }
    expect(await stored(p, 'a')).toEqual(new Map([['c:v', { write: 1, data: 1 }]]));
    expect(await stored(p, 'zz')).toEqual(new Map([['c:v', { write: 1, data: 0 }]]));
    now.release();
  });
});

describe('a targeted pass (collectRecentGarbage) over such a row', () => {
  it('collects it completely in row mutations within the limit, whole versions each, and every live snapshot reads the same', async () => {
    const p = await open(HOUR);
    await round(p, 0);
    await round(p, 1);
    // One column with more versions than one row mutation can delete (24 × 2 deletions).
    for (let v = 0; v < 25; v++) await p.transaction(async (tx) => tx.set('t', 'wide', 'c:hot', `hot${v}`.padEnd(400, '.')));
    const mid = await p.snapshot();
    await round(p, 2, 5);
    const now = await p.snapshot();
    const atMid = await readAll(mid);
    const atNow = await readAll(now);
    const hot = await now.getString('t', 'wide', 'c:hot');
    expect(hot?.startsWith('hot24.')).toBe(true);

    const watch = watchRewrites(p);
    const first = await p.collectRecentGarbage();
    expect(first.versionsRemoved).toBe(COLUMNS + 2 + 24); // round 0 and the shadowed hot versions
    expect(await readAll(mid)).toEqual(atMid);
    expect(await readAll(now)).toEqual(atNow);
    expect(await mid.getString('t', 'wide', 'c:hot')).toBe(hot);
    mid.release();
    const second = await p.collectRecentGarbage();
    expect(second.versionsRemoved).toBe(COLUMNS + 2 + DELETED); // round 1, and round 2's delete records
    watch.restore();
    expect(await readAll(now)).toEqual(atNow);
    expect(await now.getString('t', 'wide', 'c:hot')).toBe(hot);

    for (const call of watch.calls) {
      expect(call.length).toBeLessThanOrEqual(LIMIT);
      // Each version's record and data cell travel in one row mutation; a delete record has no
      // data cell (a deleted column's may travel alone or with the version it hid).
      for (const [q, n] of deletionsPerColumn(call)) {
        const odd = q !== 'c:hot' && Number(q.slice(2)) % 2 === 1;
        const deleted = q !== 'c:hot' && Number(q.slice(2)) % 5 === 0;
        if (!(q === 'c:hot' || odd)) expect(n.data, q).toBe(0);
        else if (!deleted) expect(n.data, q).toBe(n.write);
        else expect(n.write - n.data, q).toBeOneOf([0, 1]);
      }
    }
    const wide = await stored(p, 'wide');
    expect(wide.get('c:hot')).toEqual({ write: 1, data: 1 });
    for (let i = 0; i < COLUMNS; i++) {
      const inData = i % 2 === 1;
      expect(wide.get(`c:${i}`), `c:${i}`).toEqual(i % 5 === 0 ? undefined : { write: 1, data: inData ? 1 : 0 });
    }
    now.release();
  });
});
