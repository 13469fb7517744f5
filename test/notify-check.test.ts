/**
 * `percolator check notify --crash`: observers in real worker processes, SIGKILLed at random
 * moments and inside their own commits, still process the last change of every row and never
 * commit one change twice (memory: and file: stores), plus negative controls proving the
 * verifier reports missed and duplicate commits instead of passing by construction.
 *
 * Needs dist/ (the workers run compiled JS): `npm test` builds first.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type NotifyResult, type RowRecord, runNotifyCheck, verifyNotifyLogs } from '../src/check/notify.js';
import { ObservedColumns } from '../src/notify/observed-columns.js';
import { openStore } from '../src/store/open-store.js';
import { Percolator } from '../src/txn/percolator.js';
import { startServer } from '../src/server/server.js';

const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0;
if (!hasPrlimit) console.warn('prlimit (util-linux) is not installed: the full-disk notify check test skips');

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function expectPassed(r: NotifyResult): void {
  expect(r.errors).toEqual([]);
  expect(r.examples).toEqual([]);
  expect(r.changes).toBeGreaterThan(0);
  expect(r.processed).toBeGreaterThan(0);
  expect(r.missed).toBe(0);
  expect(r.duplicateCommits).toBe(0);
  expect(r.unknownEntries).toBe(0);
  expect(r.outOfOrder).toBe(0);
  expect(r.finalMismatches).toBe(0);
  expect(r.crashes).toBeGreaterThanOrEqual(3);
  expect(r.quiescent).toBe(true);
  expect(r.notificationsLeft).toBe(0);
  // Every change is either the processed last change of its row, processed on its own, or collapsed.
  expect(r.collapsed).toBeLessThanOrEqual(r.changes - r.rowsChanged);
  expect(r.ok).toBe(true);
}

/**
 * Kills at twice the default rate, self-kills armed sooner: at least as many kills, in and out of
 * observer commits, as the default pace gave these tests in runs about 1.6 times as long. The kills
 * are these tests' power; the extra seconds only added more changes of the same 50 rows.
 */
const FAST_KILLS = { killIntervalMs: 750, selfKillArmMs: [250, 2000] } as const;

describe('check notify --crash', () => {
  it('memory: no change missed, none committed twice, across SIGKILLs', async () => {
    const r = await runNotifyCheck({ seconds: 5, crash: true, store: 'memory:', ...FAST_KILLS });
    expectPassed(r);
  }, 120_000);

  it('file: no change missed, none committed twice, across SIGKILLs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'notify-check-test-'));
    dirs.push(dir);
    const r = await runNotifyCheck({ seconds: 5, crash: true, store: `file:${dir}`, ...FAST_KILLS });
    expectPassed(r);
  }, 120_000);

  it("bigtable:// against percolator serve: workers and supervisor on the server's oracle, across SIGKILLs", async () => {
    const server = await startServer({ storeUrl: 'memory:', port: 0, httpPort: null, oraclePort: 0, log: () => undefined });
    try {
      const handedOut = () => server.oracle?.oracle.stats().handedOut ?? 0;
      const before = handedOut();
      const r = await runNotifyCheck({
        seconds: 4,
        crash: true,
        ...FAST_KILLS,
        store: `bigtable://127.0.0.1:${server.port}?oracle=127.0.0.1:${server.oraclePort}`,
      });
      expectPassed(r);
      // One oracle per deployment: an oracle of the check's own would write the server's mark row.
      expect(handedOut() - before).toBeGreaterThanOrEqual(r.changes + r.processed);
    } finally {
      await server.close();
    }
  }, 120_000);

  it.skipIf(!hasPrlimit)(
    'file: on a disk that fills and empties (full-disk), no change missed, none committed twice, across SIGKILLs',
    async () => {
      // The supervisor (this process) squeezes its own file-size limit while its writers run: the
      // store refuses writes and resumes; a change whose transaction failed is not recorded, and one
      // whose outcome was unknown is settled by reading the row once writing resumed.
      // No store given: with fullDisk the check takes a file: store in a temporary directory (as
      // check bank does) and removes it once it passed; until 2026-12-03 it refused memory:.
      const r = await runNotifyCheck({ seconds: 4, crash: true, fullDisk: true, ...FAST_KILLS });
      expectPassed(r);
      expect(r.store).toMatch(/^file:.*percolator-notify-/);
      expect(existsSync(r.store.slice('file:'.length))).toBe(false);
      expect(r.squeezes).toBeGreaterThan(0);
      expect(r.writeFailures).toBeGreaterThan(0); // the squeezes did fail writes
    },
    120_000,
  );

  it("refuses a store holding a user's table (STORE_IN_USE), and leaves its parked notifications as they were", async () => {
    // A user's table whose observed column has notifications no worker of the check runs. Until
    // 2026-12-03 the check ran beside it (and then had to wait for its own table only).
    const dir = mkdtempSync(join(tmpdir(), 'notify-check-other-table-'));
    dirs.push(dir);
    const store = await openStore(`file:${dir}`);
    const registry = new ObservedColumns(store);
    await registry.open(0);
    await registry.register('user_t', 'c:x', 'user-thrower');
    await registry.close();
    const db = await Percolator.open({ store });
    await db.createTable('user_t');
    await db.transaction(async (tx) => {
      for (let i = 0; i < 20; i++) tx.set('user_t', `parked${i}`, 'c:x', 'v');
    });
    expect(await db.pendingNotifications()).toBe(20);
    await db.close();
    await store.close();
    const e = await runNotifyCheck({ seconds: 1.5, crash: false, store: `file:${dir}`, workers: 1, rows: 5 }).catch((x: unknown) => x);
    expect((e as { code?: string }).code).toBe('STORE_IN_USE');
    expect((e as Error).message).toContain('user_t');
    const after = await openStore(`file:${dir}`);
    const again = await Percolator.open({ store: after });
    expect(await again.pendingNotifications()).toBe(20);
    expect((await after.listTables()).filter((t) => !t.startsWith('_percolator_'))).toEqual(['user_t']);
    await again.close();
    await after.close();
  }, 60_000);

  it('negative control, end to end: changes written without notifying (registry contract broken) are reported missed', async () => {
    const r = await runNotifyCheck({ seconds: 1.5, crash: false, store: 'memory:', workers: 2, rows: 10, sabotageUnnotifiedChanges: 3 });
    expect(r.crashes).toBe(0);
    expect(r.missed).toBe(3);
    expect(r.duplicateCommits).toBe(0);
    expect(r.examples.filter((e) => e.includes('not processed'))).toHaveLength(3);
    expect(r.ok).toBe(false);
  }, 60_000);
});

describe('verifyNotifyLogs (negative controls)', () => {
  const row = (changes: string[], log: string[], final: string | null = changes.at(-1) ?? null): RowRecord => ({
    row: 'r',
    changes,
    final,
    log,
  });

  it('passes a correct history, collapsed changes included', () => {
    const v = verifyNotifyLogs([row(['c1', 'c2', 'c3', 'c4'], ['c1', 'c3', 'c4']), row([], [])]);
    expect(v).toMatchObject({
      changes: 4,
      processed: 3,
      missed: 0,
      duplicateCommits: 0,
      collapsed: 1,
      unknownEntries: 0,
      outOfOrder: 0,
      finalMismatches: 0,
    });
    expect(v.examples).toEqual([]);
  });

  it('counts a change committed twice by the observer', () => {
    const v = verifyNotifyLogs([row(['c1', 'c2'], ['c1', 'c2', 'c2'])]);
    expect(v.duplicateCommits).toBe(1);
    expect(v.missed).toBe(0);
    expect(v.examples[0]).toContain('committed twice');
  });

  it('counts a row whose last change was never processed', () => {
    const v = verifyNotifyLogs([row(['c1', 'c2', 'c3'], ['c1', 'c2']), row(['c9'], [])]);
    expect(v.missed).toBe(2);
    expect(v.collapsed).toBe(0);
  });

  it('counts stale, foreign and out-of-order entries, and a final value that is not the last change', () => {
    const v = verifyNotifyLogs([row(['c1', 'c2', 'c3'], ['c2', 'c1', 'x', 'c3'], 'c2')]);
    expect(v.outOfOrder).toBe(1);
    expect(v.unknownEntries).toBe(1);
    expect(v.finalMismatches).toBe(1);
    expect(v.missed).toBe(0);
  });
});
