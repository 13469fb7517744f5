import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cleanup } from './actions/cleanup.js';
import { commitPrimary } from './actions/commit.js';
import { prewrite } from './actions/prewrite.js';
import { MAX_FAILED_ROWS } from './gc-rows.js';
import { encodeColumn } from './layout.js';
import { DEFAULT_GC_INTERVAL_MS, Percolator, fullPassDue } from './percolator.js';

let db: Percolator;
beforeEach(async () => {
  db = await Percolator.open({ store: 'memory:', leaseMs: 500 });
  await db.createTable('t');
});
afterEach(async () => {
  await db.close();
});

async function writeVersions(n: number, size = 10): Promise<number[]> {
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    await db.transaction(async (tx) => tx.set('t', 'k', 'c:v', `${i}`.padEnd(size, '.')));
    const s = await db.snapshot();
    ts.push(s.startTs);
    s.release();
  }
  return ts;
}

/** A lock template naming `key`'s `c:v` as the primary. */
function templateOf(key: string) {
  return { primaryTable: 't', primaryRow: Buffer.from(key), primaryColumn: 'c:v', wallTimeMs: Date.now(), ttlMs: 60_000, owner: 'w' };
}

async function writeRecords(): Promise<number> {
  const r = await db.store.readRow('t', Buffer.from('k'), { familyNameRegexFilter: 'write|data' });
  return r?.cells.length ?? 0;
}

describe('collectGarbage', () => {
  it('keeps only the version visible at the watermark and newer ones', async () => {
    await writeVersions(5);
    expect(await writeRecords()).toBe(5);
    const r = await db.collectGarbage();
    expect(r.versionsRemoved).toBe(4);
    expect(await writeRecords()).toBe(1);
    const s = await db.snapshot();
    expect((await s.getString('t', 'k', 'c:v'))?.startsWith('4')).toBe(true);
    s.release();
  });

  it('collects many rows in one pass (rewritten concurrently) and reports a failed rewrite', async () => {
    const rows = 200;
    for (let v = 0; v < 3; v++) {
      await db.transaction(async (tx) => {
        for (let i = 0; i < rows; i++) tx.set('t', `r${i}`, 'c:v', `${v}-${i}`.padEnd(300, '.'));
      });
    }
    // Many rewrites in flight at once, none waiting for its own fsync.
    const real = db.store.mutateRow.bind(db.store);
    let inFlight = 0;
    let maxInFlight = 0;
    const durabilities = new Set<string | undefined>();
    const spy = vi.spyOn(db.store, 'mutateRow').mockImplementation(async (t, key, m, options) => {
      durabilities.add(options?.durability);
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      try {
        await real(t, key, m, options);
      } finally {
        inFlight--;
      }
    });
    const r = await db.collectGarbage();
    spy.mockRestore();
    expect(maxInFlight).toBeGreaterThan(1);
    expect([...durabilities]).toEqual(['deferred']);
    expect(r.rowsRewritten).toBe(rows);
    expect(r.versionsRemoved).toBe(2 * rows);
    const s = await db.snapshot();
    for (let i = 0; i < rows; i += 37) expect((await s.getString('t', `r${i}`, 'c:v'))?.startsWith(`2-${i}.`)).toBe(true);
    s.release();
    let stored = 0;
    for await (const row of db.store.readRows('t', { filter: { familyNameRegexFilter: 'write|data' } })) stored += row.cells.length;
    expect(stored).toBe(2 * rows); // one write record and one data cell per row

    await db.transaction(async (tx) => {
      for (let i = 0; i < rows; i++) tx.set('t', `r${i}`, 'c:v', 'x'.repeat(300));
    });
    const failing = vi.spyOn(db.store, 'mutateRow').mockImplementation(async (_t, key) => {
      if (Buffer.from(key).toString() === 'r150') throw new Error('disk on fire');
    });
    await expect(db.collectGarbage()).rejects.toThrow('disk on fire');
    failing.mockRestore();
  });

  describe('a row that fails does not stop the pass', () => {
    async function manyRows(rows: number): Promise<void> {
      for (let v = 0; v < 2; v++) {
        await db.transaction(async (tx) => {
          for (let i = 0; i < rows; i++) tx.set('t', `r${i}`, 'c:v', `${v}-${i}`.padEnd(300, '.'));
        });
      }
    }
    const versionsOf = async (row: string): Promise<number> =>
      (await db.store.readRow('t', Buffer.from(row), { familyNameRegexFilter: 'write' }))?.cells.length ?? 0;

    it('its deletion: the rows after it are collected, and the pass rejects with GC_INCOMPLETE naming it', async () => {
      const rows = 200; // r150 comes in the middle of the scan (r0, r1, r10, r100…), with more than a pool's width after it
      await manyRows(rows);
      const real = db.store.mutateRow.bind(db.store);
      const failing = vi.spyOn(db.store, 'mutateRow').mockImplementation(async (t, key, m, options) => {
        if (Buffer.from(key).toString() === 'r150') throw new Error('disk on fire');
        return real(t, key, m, options);
      });
      const e = await db.collectGarbage().catch((error: unknown) => error);
      failing.mockRestore();
      expect(e).toMatchObject({
        code: 'GC_INCOMPLETE',
        details: { kind: 'full', failedRows: 1, stopped: false, table: 't', row: new Uint8Array(Buffer.from('r150')) },
      });
      expect((e as Error).message).toContain('t/r150: disk on fire');
      expect(((e as Error).cause as Error).message).toBe('disk on fire');
      expect((e as { details: { result: unknown } }).details.result).toMatchObject({ versionsRemoved: rows - 1, rowsRewritten: rows - 1 });
      for (let i = 0; i < rows; i++) expect(await versionsOf(`r${i}`), `r${i}`).toBe(i === 150 ? 2 : 1);
      // Its versions wait for the next pass.
      expect(await db.collectGarbage()).toMatchObject({ versionsRemoved: 1, rowsRewritten: 1 });
      const s = await db.snapshot();
      expect((await s.getString('t', 'r150', 'c:v'))?.startsWith('1-150.')).toBe(true);
      s.release();
    });

    it('a lock it cannot resolve: the pass collects below that lock, as below a live one, and reports the row', async () => {
      await writeVersions(2);
      const s0 = await db.snapshot();
      const lockTs = s0.startTs;
      s0.release();
      // A lock record no one can decode (CORRUPTED_RECORD at every resolution).
      await db.store.mutateRow('t', Buffer.from('bad'), [
        { setCell: { familyName: 'lock', columnQualifier: encodeColumn('c:v'), timestampMicros: lockTs, value: Buffer.from('garbage') } },
      ]);
      for (const v of ['late0', 'late1']) await db.transaction(async (tx) => tx.set('t', 'k', 'c:v', v));
      const e = await db.collectGarbage().catch((error: unknown) => error);
      expect(e).toMatchObject({ code: 'GC_INCOMPLETE', details: { failedRows: 1, table: 't', row: new Uint8Array(Buffer.from('bad')) } });
      expect((e as Error).cause).toMatchObject({ code: 'CORRUPTED_RECORD' });
      // The two versions below the lock: the newer is what a reader at its start ts would see.
      expect((e as { details: { result: unknown } }).details.result).toMatchObject({ effectiveWatermark: lockTs, versionsRemoved: 1 });
      expect(await writeRecords()).toBe(3);
      const s = await db.snapshot();
      expect(await s.getString('t', 'k', 'c:v')).toBe('late1');
      s.release();
    });

    it('but it stops after MAX_FAILED_ROWS of them (a store refusing every write), and says so', async () => {
      await manyRows(300);
      let calls = 0;
      const failing = vi.spyOn(db.store, 'mutateRow').mockImplementation(async () => {
        calls++;
        throw new Error('read-only');
      });
      const e = await db.collectGarbage().catch((error: unknown) => error);
      failing.mockRestore();
      expect(e).toMatchObject({ code: 'GC_INCOMPLETE', details: { stopped: true } });
      const failed = (e as { details: { failedRows: number } }).details.failedRows;
      expect(failed).toBeGreaterThanOrEqual(MAX_FAILED_ROWS);
      expect(calls).toBe(failed);
      expect(calls).toBeLessThan(300);
    });
  });

  it('never collects a version a registered snapshot can still read', async () => {
    const [, second] = await writeVersions(2, 400); // long values live in `data`
    const old = await db.snapshot(second);
    await writeVersions(3, 400);
    const r = await db.collectGarbage();
    expect(r.effectiveWatermark).toBeLessThanOrEqual(second as number);
    expect((await old.getString('t', 'k', 'c:v'))?.startsWith('1')).toBe(true);
    old.release();
    await db.collectGarbage();
    const now = await db.snapshot();
    expect((await now.getString('t', 'k', 'c:v'))?.startsWith('2')).toBe(true);
    now.release();
    expect(await writeRecords()).toBe(2); // one write record + its data cell
  });

  it('refuses a snapshot below the watermark (SNAPSHOT_TOO_OLD): its versions may be gone', async () => {
    const [first] = await writeVersions(3, 400);
    const r = await db.collectGarbage();
    expect(r.watermark).toBeGreaterThan(first as number);
    await expect(db.snapshot(first)).rejects.toMatchObject({ code: 'SNAPSHOT_TOO_OLD', details: { startTs: first } });
    // At the watermark itself is fine, and a refused snapshot holds no registration back.
    const ok = await db.snapshot(r.watermark);
    ok.release();
    const again = await db.collectGarbage();
    expect(again.watermark).toBeGreaterThanOrEqual(r.watermark);
  });

  it('resolves abandoned locks below the watermark before collecting', async () => {
    await writeVersions(2);
    // A transaction of a dead worker that committed its primary but not its secondary on `k`.
    const s0 = await db.snapshot();
    const start = s0.startTs;
    s0.release();
    const p = {
      table: 't',
      row: Buffer.from('p'),
      cells: [{ column: 'c:v', q: encodeColumn('c:v'), kind: 'put' as const, value: Buffer.from('primary'), notify: false }],
    };
    const k = {
      table: 't',
      row: Buffer.from('k'),
      cells: [{ column: 'c:v', q: encodeColumn('c:v'), kind: 'put' as const, value: Buffer.from('secondary'), notify: false }],
    };
    const template = {
      primaryTable: 't',
      primaryRow: p.row,
      primaryColumn: 'c:v',
      wallTimeMs: Date.now(),
      ttlMs: 60_000,
      owner: 'dead-worker',
    };
    await prewrite(db.store, p, start, template);
    await prewrite(db.store, k, start, template);
    await commitPrimary(db.store, p, 0, start, await db.oracle.getTimestamp());
    const r = await db.collectGarbage();
    expect(r.locksResolved).toBe(1);
    const locks = await db.store.readRow('t', Buffer.from('k'), { familyNameRegexFilter: 'lock' });
    expect(locks).toBeNull();
    const s = await db.snapshot();
    expect(await s.getString('t', 'k', 'c:v')).toBe('secondary');
    s.release();
  });
  it('collects rollback records below the watermark, in a row no commit ever reached too, but not one at the watermark', async () => {
    await writeVersions(2); // `k` holds commits, `p` and `q` nothing yet
    const row = (key: string) => ({
      table: 't',
      row: Buffer.from(key),
      cells: [{ column: 'c:v', q: encodeColumn('c:v'), kind: 'put' as const, value: Buffer.from(key), notify: false }],
    });
    const abandoned = async (start: number) => {
      // A transaction of a worker gone long ago: its locks are rolled back by the next pass.
      const template = { primaryTable: 't', primaryRow: Buffer.from('p'), primaryColumn: 'c:v', wallTimeMs: 0, ttlMs: 1, owner: 'gone' };
      await prewrite(db.store, row('p'), start, template);
      await prewrite(db.store, row('k'), start, template);
    };
    const s0 = await db.snapshot();
    s0.release();
    await abandoned(s0.startTs);
    const write = async (key: string) =>
      (await db.store.readRow('t', Buffer.from(key), { familyNameRegexFilter: 'write|lock|data' }))?.cells.map((c) => c.family) ?? [];
    // The pass resolves the locks (rollback records on `p` and `k`), then collects the records:
    // `p` held nothing else and is gone, `k` keeps its newest commit.
    const r = await db.collectGarbage();
    expect(r.locksResolved).toBe(2);
    expect(await write('p')).toEqual([]);
    expect(await write('k')).toEqual(['write']);
    expect(r.versionsRemoved).toBe(1 + 2); // the older commit of `k`, and the two rollback records

    // A running transaction at the watermark keeps the rollback record at its own start: without
    // it, its primary prewrite arriving late would lock and commit over rolled-back secondaries.
    const running = await db.begin();
    const { startTs } = running;
    await cleanup(db.store, 't', Buffer.from('q'), encodeColumn('c:v'), startTs); // a reader rolled back its primary early
    expect((await db.collectGarbage()).watermark).toBe(startTs);
    expect(await write('q')).toEqual(['write']);
    await expect(prewrite(db.store, row('q'), startTs, { ...templateOf('q'), owner: db.owner })).rejects.toMatchObject({
      code: 'TXN_ABORTED',
    });
    running.release();
    await db.collectGarbage();
    expect(await write('q')).toEqual([]);
  });

  it('applies deletions read from a stale scan to the current row: newer versions and locks keep their data', async () => {
    // Phase 2 computes a row's deletions from its scan (an engine snapshot taken when the table's
    // scan began, possibly minutes old) and applies them later to the row as it is then. Hold the
    // pass between the two and move the row on meanwhile: a newer long version commits and another
    // transaction locks a long value. Both sit above the watermark the pass read, so its
    // deletions (below the kept version's commit and start timestamps) must leave them alone.
    const gc = await Percolator.open({ store: 'memory:', leaseMs: 500, gcIntervalMs: 0 });
    try {
      await gc.createTable('t');
      const long = (tag: string) => tag.padEnd(400, '.');
      for (let i = 0; i < 3; i++) await gc.transaction(async (tx) => tx.set('t', 'k', 'c:v', long(`v${i}`)));
      const real = gc.store.mutateRow.bind(gc.store);
      let reached!: () => void;
      const atDeletion = new Promise<void>((r) => (reached = r));
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      const spy = vi.spyOn(gc.store, 'mutateRow').mockImplementation(async (table, key, mutations, options) => {
        if (table === 't') {
          reached();
          await gate;
        }
        return real(table, key, mutations, options);
      });
      const pass = gc.collectGarbage();
      await atDeletion; // the pass has read v0..v2 and holds its deletions for row k

      await gc.transaction(async (tx) => tx.set('t', 'k', 'c:v', long('v3')));
      const locker = await gc.begin();
      const w = {
        table: 't',
        row: Buffer.from('k'),
        cells: [{ column: 'c:w', q: encodeColumn('c:w'), kind: 'put' as const, value: Buffer.from(long('w')), notify: false }],
      };
      const template = {
        primaryTable: 't',
        primaryRow: w.row,
        primaryColumn: 'c:w',
        wallTimeMs: Date.now(),
        ttlMs: 60_000,
        owner: gc.owner,
      };
      await prewrite(gc.store, w, locker.startTs, template);

      open();
      const r = await pass;
      spy.mockRestore();
      expect(r.versionsRemoved).toBe(2); // v0 and v1; v2 was the version visible at the watermark
      await commitPrimary(gc.store, w, 0, locker.startTs, await gc.oracle.getTimestamp());
      locker.release();
      const s = await gc.snapshot();
      expect(await s.getString('t', 'k', 'c:v')).toBe(long('v3'));
      expect(await s.getString('t', 'k', 'c:w')).toBe(long('w'));
      s.release();
      // What the pass left (v2) goes with the next one; v3 and w stay readable.
      await gc.collectGarbage();
      const after = await gc.snapshot();
      expect(await after.getString('t', 'k', 'c:v')).toBe(long('v3'));
      expect(await after.getString('t', 'k', 'c:w')).toBe(long('w'));
      after.release();
    } finally {
      await gc.close();
    }
  });
});

describe('a deleted cell', () => {
  for (const pass of ['full', 'targeted'] as const) {
    it(`leaves nothing once the watermark passes its delete (${pass} pass), and nothing a snapshot before it reads goes first`, async () => {
      const p = await Percolator.open({ store: 'memory:', leaseMs: 500, gcIntervalMs: 3_600_000 }); // commits tracked, no tick
      try {
        await p.createTable('t');
        const long = 'x'.repeat(400); // kept in `data`
        await p.transaction(async (tx) => {
          tx.set('t', 'gone', 'c:v', long);
          tx.set('t', 'gone', 'c:w', 'short');
          tx.set('t', 'kept', 'c:v', 'y');
        });
        const before = await p.snapshot();
        await p.transaction(async (tx) => {
          tx.delete('t', 'gone', 'c:v');
          tx.delete('t', 'gone', 'c:w');
        });
        const collect = () => (pass === 'full' ? p.collectGarbage() : p.collectRecentGarbage());
        const cells = async (row: string) => (await p.store.readRow('t', Buffer.from(row)))?.cells.length ?? 0;
        expect((await collect()).versionsRemoved).toBe(0); // `before` holds the watermark below the deletes
        expect(await before.getString('t', 'gone', 'c:v')).toBe(long);
        expect(await cells('gone')).toBe(5); // two puts (one with its data cell), two deletes
        before.release();
        expect((await collect()).versionsRemoved).toBe(4);
        expect(await p.store.readRow('t', Buffer.from('gone'))).toBeNull();
        expect([await p.getString('t', 'gone', 'c:v'), await p.getString('t', 'kept', 'c:v')]).toEqual([null, 'y']);
        // The column can be written again, and reads as written.
        await p.transaction(async (tx) => tx.set('t', 'gone', 'c:v', 'again'));
        expect(await p.getString('t', 'gone', 'c:v')).toBe('again');
      } finally {
        await p.close();
      }
    });
  }
});

describe('background GC', () => {
  it('runs by itself after commits, keeps what running snapshots read, and stops with close', async () => {
    const bg = await Percolator.open({ store: 'memory:', leaseMs: 500, gcIntervalMs: 20 });
    try {
      await bg.createTable('t');
      for (let i = 0; i < 5; i++) await bg.transaction(async (tx) => tx.set('t', 'k', 'c:v', `old${i}`));
      const reader = await bg.snapshot();
      for (let i = 0; i < 5; i++) await bg.transaction(async (tx) => tx.set('t', 'k', 'c:v', `new${i}`));
      const records = async (): Promise<number> =>
        (await bg.store.readRow('t', Buffer.from('k'), { familyNameRegexFilter: 'write' }))?.cells.length ?? 0;
      expect(await records()).toBe(10);
      // The open snapshot holds the watermark: old4 (what it reads) and every newer version stay.
      await vi.waitFor(async () => expect(bg.lastGc?.result?.versionsRemoved).toBe(4), { timeout: 5_000, interval: 10 });
      expect(await records()).toBe(6);
      expect(await reader.getString('t', 'k', 'c:v')).toBe('old4');
      reader.release();
      await bg.transaction(async (tx) => tx.set('t', 'k', 'c:v', 'last'));
      await vi.waitFor(async () => expect(await records()).toBe(1), { timeout: 5_000, interval: 10 });
      expect(bg.lastGc?.error).toBeNull();
    } finally {
      await bg.close();
    }
  });

  it('a background pass that fails is told to `log` and kept in lastGc; the next one collects', async () => {
    const lines: string[] = [];
    const bg = await Percolator.open({ store: 'memory:', leaseMs: 500, gcIntervalMs: 20, log: (line) => lines.push(line) });
    try {
      await bg.createTable('t');
      const real = bg.store.mutateRow.bind(bg.store);
      let fail = true;
      const failing = vi.spyOn(bg.store, 'mutateRow').mockImplementation(async (t, key, m, options) => {
        if (fail) throw new Error('disk on fire');
        return real(t, key, m, options);
      });
      for (let i = 0; i < 3; i++) await bg.transaction(async (tx) => tx.set('t', 'k', 'c:v', `v${i}`));
      await vi.waitFor(() => expect(lines.length).toBeGreaterThan(0), { timeout: 5_000, interval: 10 });
      expect(lines[0]).toMatch(/^recent GC pass failed: .*t\/k: disk on fire/);
      expect(bg.lastGc?.error).toMatchObject({ code: 'GC_INCOMPLETE' });
      const failed = bg.gcTotals.recent.failed;
      expect(failed).toBeGreaterThan(0);
      expect(bg.gcTotals.recent.versionsRemoved).toBe(0);
      fail = false;
      await vi.waitFor(() => expect(bg.lastGc?.result?.versionsRemoved).toBe(2), { timeout: 5_000, interval: 10 });
      failing.mockRestore();
      // Every pass is counted, failed or not; only the ones that succeeded count versions.
      const { passes, failed: failedNow, versionsRemoved, ms } = bg.gcTotals.recent;
      expect(failedNow).toBe(failed);
      expect(passes).toBeGreaterThan(failed);
      expect(versionsRemoved).toBe(2);
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(bg.gcTotals.full.passes).toBe(0);
    } finally {
      await bg.close();
    }
  });

  it('by default runs targeted passes only: versions of other processes wait for a full pass', async () => {
    const db = await Percolator.open({ store: 'memory:', leaseMs: 500 });
    const other = await Percolator.open({ store: db.store, oracle: db.oracle, leaseMs: 500, gcIntervalMs: 0 });
    try {
      expect([db.gcIntervalMs, db.fullGcIntervalMs]).toEqual([DEFAULT_GC_INTERVAL_MS, 0]);
      await db.createTable('t');
      for (let i = 0; i < 3; i++) await other.transaction(async (tx) => tx.set('t', 'theirs', 'c:v', `${i}`));
      for (let i = 0; i < 3; i++) await db.transaction(async (tx) => tx.set('t', 'ours', 'c:v', `${i}`));
      const records = async (row: string): Promise<number> =>
        (await db.store.readRow('t', Buffer.from(row), { familyNameRegexFilter: 'write' }))?.cells.length ?? 0;
      await vi.waitFor(async () => expect(await records('ours')).toBe(1), { timeout: 5_000, interval: 20 });
      expect(db.lastGc?.kind).toBe('recent');
      expect(await records('theirs')).toBe(3);
      expect(other.lastGc).toBeNull();
      expect((await db.collectGarbage()).versionsRemoved).toBe(2);
      expect(await records('theirs')).toBe(1);
    } finally {
      await other.close();
      await db.close();
    }
  });

  it('runs full passes in the background with fullGcIntervalMs', async () => {
    const db = await Percolator.open({ store: 'memory:', leaseMs: 500, gcIntervalMs: 10, fullGcIntervalMs: 30 });
    const other = await Percolator.open({ store: db.store, oracle: db.oracle, leaseMs: 500, gcIntervalMs: 0 });
    try {
      await db.createTable('t');
      for (let i = 0; i < 3; i++) await other.transaction(async (tx) => tx.set('t', 'theirs', 'c:v', `${i}`));
      const records = async (): Promise<number> =>
        (await db.store.readRow('t', Buffer.from('theirs'), { familyNameRegexFilter: 'write' }))?.cells.length ?? 0;
      // A full pass needs a commit of this process to wake it.
      await vi.waitFor(
        async () => {
          await db.transaction(async (tx) => tx.set('t', 'ours', 'c:v', 'x'));
          expect(await records()).toBe(1);
        },
        { timeout: 5_000, interval: 20 },
      );
      expect(db.lastGc?.error).toBeNull();
      expect(db.gcTotals.full.passes).toBeGreaterThan(0);
      expect(db.gcTotals.full.versionsRemoved).toBeGreaterThanOrEqual(2); // theirs: 2 older versions
    } finally {
      await other.close();
      await db.close();
    }
  });

  it('goes on with targeted passes while a full pass runs (over serve one can take minutes)', async () => {
    const db = await Percolator.open({ store: 'memory:', leaseMs: 500, gcIntervalMs: 10, fullGcIntervalMs: 30 });
    let release = (): void => undefined;
    const held = new Promise<void>((r) => (release = r));
    const fullPass = db.collectGarbage.bind(db);
    let fullStarted = 0;
    const hold = vi.spyOn(db, 'collectGarbage').mockImplementation(async () => {
      fullStarted++;
      await held;
      return fullPass();
    });
    try {
      await db.createTable('t');
      const records = async (row: string): Promise<number> =>
        (await db.store.readRow('t', Buffer.from(row), { familyNameRegexFilter: 'write' }))?.cells.length ?? 0;
      await vi.waitFor(
        async () => {
          await db.transaction(async (tx) => tx.set('t', 'first', 'c:v', 'x'));
          expect(fullStarted).toBe(1);
        },
        { timeout: 5_000, interval: 20 },
      );
      for (let i = 0; i < 3; i++) await db.transaction(async (tx) => tx.set('t', 'during', 'c:v', `${i}`));
      await vi.waitFor(async () => expect(await records('during')).toBe(1), { timeout: 5_000, interval: 20 });
      expect(db.gcTotals.full.passes).toBe(0); // still held
      expect(db.gcTotals.recent.versionsRemoved).toBeGreaterThanOrEqual(2);
      release();
      await vi.waitFor(() => expect(db.gcTotals.full.passes).toBe(1), { timeout: 5_000, interval: 20 });
      expect(fullStarted).toBe(1); // one full pass at a time
    } finally {
      release();
      hold.mockRestore();
      await db.close();
    }
  });

  it('runs a full pass every interval, and at once when the targeted set forgot something', () => {
    const t = 1_000_000;
    expect(fullPassDue(t + 599_999, t, 600_000, false)).toBe(false);
    expect(fullPassDue(t + 600_000, t, 600_000, false)).toBe(true);
    // Spaced 20× the last pass instead, a full pass could not keep up with a churning index.
    expect(fullPassDue(t + 1, t, 600_000, true)).toBe(true);
    expect(fullPassDue(t + 600_000, t, 0, true)).toBe(false); // full passes off
  });

  it('is off entirely with gcIntervalMs 0', async () => {
    const off = await Percolator.open({ store: 'memory:', leaseMs: 500, gcIntervalMs: 0, fullGcIntervalMs: 10 });
    try {
      await off.createTable('t');
      for (let i = 0; i < 3; i++) await off.transaction(async (tx) => tx.set('t', 'k', 'c:v', `${i}`));
      // Proof of absence needs a bound: a manual pass finds all the work still there.
      expect(off.lastGc).toBeNull();
      expect([off.gcIntervalMs, off.fullGcIntervalMs]).toEqual([0, 0]);
      expect((await off.collectGarbage()).versionsRemoved).toBe(2);
    } finally {
      await off.close();
    }
  });
});
