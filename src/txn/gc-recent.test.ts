import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import type { Cell } from '../store/types.js';
import { RecentCommits, recentVersions } from './gc-recent.js';
import { encodeWrite } from './layout.js';
import { Percolator } from './percolator.js';
import { remoteLike } from './remote-like.fixture.js';

const HOUR = 3_600_000; // background GC on (rows are tracked) but no tick during a test

function writeCell(ts: number, startTs: number, kind: 'put' | 'delete' | 'rollback' = 'put'): Cell {
  const value = encodeWrite(kind === 'put' ? { kind, startTs, value: { mode: 'data' } } : { kind, startTs, value: { mode: 'none' } });
  return { family: 'write', qualifier: Buffer.from('c:v'), timestamp: ts, value, labels: [] };
}

describe('recentVersions', () => {
  it('deletes exactly the done versions older than the one visible at the watermark', () => {
    // newest first: 90 (above W=50), 40 (visible at W), 30, 20 (not done), 10
    const cells = [writeCell(90, 85), writeCell(40, 35), writeCell(30, 25), writeCell(20, 15), writeCell(10, 5)];
    const done = new Set([85, 35, 25, 5]);
    const r = recentVersions(cells, 50, (ts) => done.has(ts));
    expect(r.versions).toBe(2);
    const ranges = r.deletions
      .flatMap((g) => g.mutations)
      .map((m) => {
        const d = (m as { deleteFromColumn: { familyName: string; timeRange: { startTimestampMicros: number } } }).deleteFromColumn;
        return `${d.familyName}@${d.timeRange.startTimestampMicros}`;
      });
    expect(ranges).toEqual(['write@30', 'data@25', 'write@10', 'data@5']);
    expect(r.pending).toBe(true); // 90 is above the watermark: look again later
  });

  it('keeps rollback records, and the visible version even when it is done', () => {
    const cells = [writeCell(40, 40, 'rollback'), writeCell(30, 25), writeCell(20, 20, 'rollback'), writeCell(10, 5)];
    const r = recentVersions(cells, 50, () => true);
    expect(r.versions).toBe(1); // only the put at 10 (shadowed by the put at 30)
    expect(r.pending).toBe(false);
  });
});

describe('recentVersions on a column whose visible version is a delete', () => {
  const at = (r: ReturnType<typeof recentVersions>) => r.tombstones.flatMap((t) => t.group.mutations).map(timeOf);
  const timeOf = (m: unknown) =>
    (m as { deleteFromColumn: { timeRange: { startTimestampMicros: number } } }).deleteFromColumn.timeRange.startTimestampMicros;

  it('offers the delete record too when every older version goes (rollbacks aside)', () => {
    const cells = [writeCell(40, 35, 'delete'), writeCell(32, 32, 'rollback'), writeCell(30, 25), writeCell(10, 5)];
    const r = recentVersions(cells, 50, () => true);
    expect(r.deletions.flatMap((g) => g.mutations).map(timeOf)).toEqual([30, 25, 10, 5]); // records and data of both puts
    expect(at(r)).toEqual([40]); // then the delete: it has no data cell
    expect(r.tombstones[0]?.group.versions).toBe(1);
  });

  it('keeps the delete while an older version stays (it would show again), or when its transaction is not done', () => {
    const cells = [writeCell(40, 35, 'delete'), writeCell(30, 25), writeCell(10, 5)];
    expect(at(recentVersions(cells, 50, (ts) => ts !== 25))).toEqual([]); // the put at 30 stays
    expect(at(recentVersions(cells, 50, (ts) => ts !== 35))).toEqual([]); // the delete's own transaction
    // Not visible at the watermark yet: the put at 30 is, and stays.
    const above = recentVersions(cells, 35, () => true);
    expect([at(above), above.pending]).toEqual([[], true]);
    // A newer version above the watermark does not stop it: readers above see that one.
    expect(at(recentVersions([writeCell(90, 85), ...cells], 50, () => true))).toEqual([40]);
  });
});

describe('RecentCommits', () => {
  /** A commit of cells `row:col` (one table). */
  const commit = (startTs: number, cells: string[], complete = true) => {
    const rows = new Map<string, { q: Uint8Array }[]>();
    for (const c of cells) {
      const [row, col] = c.split(':') as [string, string];
      if (!rows.has(row)) rows.set(row, []);
      rows.get(row)?.push({ q: Buffer.from(col) });
    }
    return { startTs, rows: [...rows].map(([row, cs]) => ({ table: 't', row: Buffer.from(row), cells: cs })), complete };
  };
  const dirtyOf = (rc: RecentCommits): string[] =>
    [...(rc.take().get('t') ?? [])].flatMap(([row, cols]) => [...cols].map((q) => `${row}:${q}`)).sort();

  it('hands over at most about maxCells columns per pass, whole rows, and keeps the rest', () => {
    const rc = new RecentCommits();
    const cells = ['a:x', 'a:y', 'b:x', 'c:x', 'c:y', 'c:z', 'd:x'];
    rc.record(commit(1, cells));
    rc.record(commit(2, cells));
    expect(rc.dirtyCells).toBe(7);
    const first = [...(rc.take(3).get('t') ?? [])].map(([row, cols]) => `${row}:${cols.size}`);
    expect(first).toEqual(['a:2', 'b:1']); // a row is never split
    expect(rc.dirtyCells).toBe(4);
    expect(dirtyOf(rc)).toEqual(['c:x', 'c:y', 'c:z', 'd:x']);
    expect(rc.dirtyCells).toBe(0);
  });

  it('makes a column dirty from its second commit on: a first commit leaves nothing to collect', () => {
    const rc = new RecentCommits();
    rc.record(commit(1, ['a:x', 'b:x', 'b:y']));
    expect(rc.dirtyCells).toBe(0);
    rc.record(commit(2, ['b:x', 'b:z', 'c:x']));
    expect(dirtyOf(rc)).toEqual(['b:x']); // b:z is a first commit of its column
    rc.record(commit(3, ['b:x', 'b:z']));
    expect(dirtyOf(rc)).toEqual(['b:x', 'b:z']); // still remembered after a pass
    // Cells are told apart by table, row and qualifier, not by their concatenation.
    rc.record(commit(4, ['ab:cd']));
    rc.record(commit(5, ['abc:d', 'a:bcd']));
    expect(rc.dirtyCells).toBe(0);
  });

  it('remembers `seenCells` cells committed once: a second commit after more than that counts as a first', () => {
    const rc = new RecentCommits({ transactions: 10, dirtyCells: 10, cells: 2 });
    rc.record(commit(1, ['a:c', 'b:c']));
    rc.record(commit(2, ['x:c'])); // a:c forgotten
    rc.record(commit(3, ['a:c', 'x:c']));
    expect(dirtyOf(rc)).toEqual(['x:c']);
  });

  it('stays bounded and says when it forgot something', () => {
    const rc = new RecentCommits({ transactions: 2, dirtyCells: 3 });
    for (let i = 1; i <= 3; i++) rc.record(commit(i, [`r${i}:c`]));
    for (let i = 1; i <= 3; i++) rc.record(commit(10 + i, [`r${i}:c`]));
    expect(rc.isDone(1)).toBe(false); // only the last two transactions are remembered
    expect(rc.isDone(13)).toBe(true);
    expect(rc.overflowed).toBe(true);
    rc.fullPassDone();
    expect(rc.overflowed).toBe(false);
    rc.record(commit(20, ['r4:c'], false));
    rc.record(commit(21, ['r4:c'], false));
    expect(rc.overflowed).toBe(true); // a fourth dirty cell did not fit
    expect(rc.isDone(21)).toBe(false); // incomplete: never collected here
    expect(dirtyOf(rc)).toEqual(['r1:c', 'r2:c', 'r3:c']);
    expect(rc.dirtyCells).toBe(0);
  });

  it('a full pass clears only what was forgotten before it started (targeted passes go on during it)', () => {
    const rc = new RecentCommits({ transactions: 1, dirtyCells: 10 });
    rc.record(commit(1, ['a:c']));
    rc.record(commit(2, ['b:c'])); // transaction 1 forgotten
    const mark = rc.fullPassMark();
    rc.record(commit(3, ['c:c'])); // transaction 2 forgotten while the pass runs: newer than its watermark
    rc.fullPassDone(mark);
    expect(rc.overflowed).toBe(true);
    rc.fullPassDone(rc.fullPassMark());
    expect(rc.overflowed).toBe(false);
  });
});

// Embedded, a pass reads the cached rows' cells; on a store without the embedded extension
// (bigtable://), one filtered read per row.
describe.each(['embedded', 'remote-like'] as const)('Percolator.collectRecentGarbage (%s store)', (kind) => {
  let inner: Store;
  let store: Store;
  let db: Percolator;
  beforeEach(async () => {
    inner = await openStore('memory:');
    store = kind === 'embedded' ? inner : remoteLike(inner).store;
    db = await Percolator.open({ store, gcIntervalMs: HOUR });
    await db.createTable('t');
  });
  afterEach(async () => {
    await db.close();
    await inner.close();
  });

  async function cells(row: string): Promise<number> {
    const r = await store.readRow('t', Buffer.from(row), { familyNameRegexFilter: 'write|data' });
    return r?.cells.length ?? 0;
  }

  it('collects the shadowed versions of rows committed here, and what readers see is unchanged', async () => {
    for (let v = 0; v < 4; v++) {
      await db.transaction(async (tx) => {
        tx.set('t', 'a', 'c:v', `a${v}`.padEnd(300, '.'));
        tx.set('t', 'b', 'c:v', `b${v}`.padEnd(300, '.'));
      });
    }
    expect(await cells('a')).toBe(8); // 4 write records + 4 data cells
    const r = await db.collectRecentGarbage();
    expect(r.versionsRemoved).toBe(6);
    expect(await cells('a')).toBe(2);
    expect(await cells('b')).toBe(2);
    const s = await db.snapshot();
    expect((await s.getString('t', 'a', 'c:v'))?.startsWith('a3.')).toBe(true);
    expect((await s.getString('t', 'b', 'c:v'))?.startsWith('b3.')).toBe(true);
    s.release();
    // Nothing new committed: nothing to do.
    expect((await db.collectRecentGarbage()).rowsRewritten).toBe(0);
  });

  it('never collects what a registered snapshot can still read', async () => {
    await db.transaction(async (tx) => tx.set('t', 'a', 'c:v', 'old'.padEnd(300, '.')));
    const old = await db.snapshot();
    await db.transaction(async (tx) => tx.set('t', 'a', 'c:v', 'mid'.padEnd(300, '.')));
    await db.transaction(async (tx) => tx.set('t', 'a', 'c:v', 'new'.padEnd(300, '.')));
    const r = await db.collectRecentGarbage();
    expect(r.versionsRemoved).toBe(0); // the watermark is the old snapshot: 'old' is what it sees
    expect((await old.getString('t', 'a', 'c:v'))?.startsWith('old')).toBe(true);
    old.release();
    // The row stayed dirty (newer versions were above the watermark): the next pass collects.
    expect((await db.collectRecentGarbage()).versionsRemoved).toBe(2);
    expect(await cells('a')).toBe(2);
  });

  it('a row that fails does not stop the pass: the others are collected, it stays dirty, and the pass reports it', async () => {
    const rows = 100; // r0 is handed over first, with more than a pool's width of rows after it
    for (let v = 0; v < 3; v++) {
      await db.transaction(async (tx) => {
        for (let i = 0; i < rows; i++) tx.set('t', `r${i}`, 'c:v', `${v}-${i}`.padEnd(300, '.'));
      });
    }
    const real = store.mutateRow.bind(store);
    const failing = vi.spyOn(store, 'mutateRow').mockImplementation(async (t, key, m, options) => {
      if (Buffer.from(key).toString() === 'r0') throw new Error('disk on fire');
      return real(t, key, m, options);
    });
    const e = await db.collectRecentGarbage().catch((error: unknown) => error);
    failing.mockRestore();
    expect(e).toMatchObject({
      code: 'GC_INCOMPLETE',
      details: { kind: 'recent', failedRows: 1, stopped: false, table: 't', row: new Uint8Array(Buffer.from('r0')) },
    });
    expect(((e as Error).cause as Error).message).toBe('disk on fire');
    for (let i = 0; i < rows; i++) expect(await cells(`r${i}`), `r${i}`).toBe(i === 0 ? 6 : 2);
    expect(await db.collectRecentGarbage()).toMatchObject({ versionsRemoved: 2, rowsRewritten: 1 });
    expect(await cells('r0')).toBe(2);
  });

  it("leaves other processes' versions and incompletely committed transactions to the full pass", async () => {
    const other = await Percolator.open({ store, oracle: db.oracle }); // another process of the deployment
    // Secondary commits exist only in two-phase commits (a shared deployment's protocol).
    const mine = await Percolator.open({ store, oracle: db.oracle, gcIntervalMs: HOUR, commitProtocol: 'two-phase' });
    try {
      await other.transaction(async (tx) => tx.set('t', 'a', 'c:v', 'theirs'.padEnd(300, '.')));
      // A transaction of ours whose secondary commit fails (left for readers to roll forward).
      const real = store.checkAndMutateRow.bind(store);
      let commits = 0;
      const spy = vi.spyOn(store, 'checkAndMutateRow').mockImplementation(async (table, key, req) => {
        const isCommit = (req.trueMutations ?? []).some((m) => 'setCell' in m && m.setCell.familyName === 'write');
        if (isCommit && Buffer.from(key).toString() === 'b' && commits++ === 0) throw new Error('lost secondary commit');
        return real(table, key, req);
      });
      await mine.transaction(async (tx) => {
        tx.set('t', 'a', 'c:v', 'ours1'.padEnd(300, '.'));
        tx.set('t', 'b', 'c:v', 'ours1'.padEnd(300, '.'));
      });
      spy.mockRestore();
      await mine.transaction(async (tx) => {
        tx.set('t', 'a', 'c:v', 'ours2'.padEnd(300, '.'));
        tx.set('t', 'b', 'c:v', 'ours2'.padEnd(300, '.')); // rolls the failed secondary forward first
      });
      const before = [await cells('a'), await cells('b')];
      const r = await mine.collectRecentGarbage();
      expect(r.versionsRemoved).toBe(0); // 'theirs' is foreign, 'ours1' was incomplete
      expect([await cells('a'), await cells('b')]).toEqual(before);
      await mine.collectGarbage();
      expect([await cells('a'), await cells('b')]).toEqual([2, 2]);
      const s = await mine.snapshot();
      expect((await s.getString('t', 'b', 'c:v'))?.startsWith('ours2')).toBe(true);
      s.release();
    } finally {
      await mine.close();
      await other.close();
    }
  });
});

describe('background GC', () => {
  it('runs targeted passes between full ones and keeps a hot row short', async () => {
    const db = await Percolator.open({ store: 'memory:', gcIntervalMs: 10 });
    try {
      await db.createTable('t');
      const kinds = new Set<string>();
      let i = 0;
      await vi.waitFor(
        async () => {
          await db.transaction(async (tx) => tx.set('t', 'hot', 'c:v', `${i++}`.padEnd(300, '.')));
          if (db.lastGc?.result !== null && db.lastGc?.result !== undefined && db.lastGc.result.versionsRemoved > 0)
            kinds.add(db.lastGc.kind);
          expect(kinds.has('recent')).toBe(true);
        },
        { timeout: 10_000, interval: 5 },
      );
      const r = await db.store.readRow('t', Buffer.from('hot'), { familyNameRegexFilter: 'write' });
      expect(r?.cells.length ?? 0).toBeLessThan(i);
    } finally {
      await db.close();
    }
  });
});

describe('Percolator recentGcWindows', () => {
  /** Commits a:c twice with `between` other cells in between; returns what one pass removed. */
  async function removedAfter(windows: { cells?: number; transactions?: number } | undefined, between: number): Promise<number> {
    const store = await openStore('memory:');
    const db = await Percolator.open({ store, gcIntervalMs: HOUR, ...(windows === undefined ? {} : { recentGcWindows: windows }) });
    try {
      await db.createTable('t');
      await db.transaction(async (tx) => tx.set('t', 'a', 'c:v', 'first'));
      for (let i = 0; i < between; i++) await db.transaction(async (tx) => tx.set('t', `r${i}`, 'c:v', 'x'));
      await db.transaction(async (tx) => tx.set('t', 'a', 'c:v', 'second'));
      return (await db.collectRecentGarbage()).versionsRemoved;
    } finally {
      await db.close();
      await store.close();
    }
  }

  it('a version is collected only while its cell and its transaction are remembered', async () => {
    expect(await removedAfter(undefined, 3)).toBe(1);
    expect(await removedAfter({ cells: 2 }, 3)).toBe(0); // a:c forgotten: its second commit counts as a first
    expect(await removedAfter({ transactions: 2 }, 3)).toBe(0); // the first transaction forgotten
    expect(await removedAfter({ cells: 10, transactions: 10 }, 3)).toBe(1);
  });

  it.each<[string, unknown]>([
    ['a number', 5],
    ['null', null],
    ['an unknown count', { rows: 5 }],
    ['a count of 0', { cells: 0 }],
    ['a fractional count', { transactions: 1.5 }],
  ])('%s is INVALID_CONFIG', async (_what, windows) => {
    const store = await openStore('memory:');
    try {
      const e = await Percolator.open({ store, recentGcWindows: windows as { cells?: number } }).catch((x: unknown) => x);
      expect((e as { code?: string }).code).toBe('INVALID_CONFIG');
    } finally {
      await store.close();
    }
  });
});
