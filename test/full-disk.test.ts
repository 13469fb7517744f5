/**
 * A `file:` store whose disk fills up, then has room again — without root: the child runs under a
 * file-size limit (RLIMIT_FSIZE via util-linux `prlimit`; Node ignores SIGXFSZ), so LevelDB's
 * log append fails part-way (EFBIG, the same torn append a full disk gives), and then raises its
 * own limit.
 *
 * What must hold: the failed write and every later write are IO_ERRORs (the later ones marked
 * `refused`) until writing resumes, reads go on, nothing crashes; once resumed (a new log, the
 * memtable flushed, the deferred writes the failure held written first) the store takes writes
 * and the observers finish without a reopen; and after a reopen every acknowledged write is there
 * and every acknowledged transaction whole. Before the engine refused writes after a failure, the
 * writes acknowledged once the limit was raised landed misaligned in the log and the reopen failed
 * with DATA_CORRUPTED; before it resumed, a failure holding deferred writes (an observer's commit,
 * almost always) failed every later call until the process reopened the store.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Percolator } from '../src/txn/percolator.js';
import { openStore } from '../src/store/open-store.js';
import { runProcess } from './support/cli-process.js';

const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0;
if (!hasPrlimit) console.warn('prlimit (util-linux) is not installed: the full-disk tests skip');

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs `body` (an ES module's code, `dir` in scope) under a 3 MB file-size limit; its stdout's last line as JSON. */
async function underLimit(dir: string, body: string): Promise<Record<string, unknown>> {
  const script = `
    import { execFileSync } from 'node:child_process';
    import { readFileSync } from 'node:fs';
    import { openStore, Percolator } from ${JSON.stringify(resolve('dist/index.js'))};
    const dir = ${JSON.stringify(dir)};
    const raiseLimit = () => execFileSync('prlimit', ['--pid', String(process.pid), '--fsize=unlimited']);
    // Smaller than the table a flush of the memtable writes: LevelDB moves to a new log, then its
    // flush fails, and it takes no write any more (its background error).
    const lowerLimit = () => execFileSync('prlimit', ['--pid', String(process.pid), '--fsize=20000:unlimited']);
    /** The store with table t, written row by row (a000000, …) until a write fails. */
    async function fillUntilFailure() {
      const store = await openStore('file:' + dir);
      await store.createTable('t', { families: { f: {} } });
      const put = (k) => store.mutateRow('t', Buffer.from(k), [{ setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.from(k.repeat(300)) } }]);
      const acked = [];
      for (let i = 0; ; i++) {
        const k = 'a' + String(i).padStart(6, '0');
        try { await put(k); acked.push(k); } catch (first) { return { store, put, acked, first }; }
      }
    }
    ${body}`;
  const out = await runProcess('prlimit', ['--fsize=3000000:unlimited', process.execPath, '--input-type=module', '-e', script], {
    timeoutMs: 120_000,
  });
  expect(out.code, out.stderr).toBe(0);
  const lines = out.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1] as string) as Record<string, unknown>;
}

/** The rows of table `t` in the store at `dir`, reopened, are exactly `keys`; and it takes a write. */
async function expectRows(dir: string, keys: readonly string[]): Promise<void> {
  const store = await openStore(`file:${dir}`);
  try {
    const found: string[] = [];
    for await (const row of store.readRows('t')) found.push(row.key.toString());
    expect(found).toEqual(keys);
    await store.mutateRow('t', Buffer.from('after'), [
      { setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.from('v') } },
    ]);
  } finally {
    await store.close();
  }
}

// Each test is a child process on a directory of its own, mostly waiting on the disk and the
// engine's retry timer: they run side by side (the one file-size limit is each child's own), and
// so more slowly each: the timeout allows for that.
describe.skipIf(!hasPrlimit).concurrent('a full disk', { timeout: 120_000 }, () => {
  it.concurrent(
    'store writes: the failed one and later ones are IO_ERRORs until writing resumes, reads go on, and a reopen has every acknowledged write',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'full-disk-store-'));
      dirs.push(dir);
      const r = await underLimit(
        dir,
        `
      const { store, put, acked, first } = await fillUntilFailure();
      raiseLimit(); // the disk has room again
      const later = [];
      for (let j = 0; j < 5; j++) {
        try { await put('b' + j); acked.push('b' + j); later.push('acknowledged'); } catch (e) { later.push(e.code + (e.details?.refused === true ? ' refused' : '')); }
      }
      const read = (await store.readRow('t', Buffer.from(acked[0])))?.key.toString() ?? null;
      const resumed = await store.resumeWrites();
      const afterResume = [];
      for (let j = 0; j < 5; j++) {
        try { await put('c' + j); acked.push('c' + j); afterResume.push('acknowledged'); } catch (e) { afterResume.push(e.code); }
      }
      let closeError = null;
      await store.close().catch((e) => { closeError = e.code; });
      console.log(JSON.stringify({ acked, first: first.code, firstMessage: first.message, later, read, resumed, afterResume, closeError }));`,
      );
      expect(r.first).toBe('IO_ERROR');
      expect(r.firstMessage).toMatch(/File too large/);
      expect(r.later).toEqual(Array(5).fill('IO_ERROR refused'));
      const acked = r.acked as string[];
      expect(r.read).toBe(acked[0]);
      expect(acked.length).toBeGreaterThan(100);
      expect(r.resumed).toBeNull();
      expect(r.afterResume).toEqual(Array(5).fill('acknowledged'));
      expect(r.closeError).toBeNull();

      await expectRows(dir, acked); // every acknowledged write, none of the failed ones; and it writes again
    },
  );

  it.concurrent(
    'transactions and observers: writing resumes once there is room, the observers finish, and a reopen finds every acknowledged transaction whole',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'full-disk-txn-'));
      dirs.push(dir);
      const r = await underLimit(
        dir,
        `
      const db = await Percolator.open({ store: 'file:' + dir });
      await db.createTable('t');
      const worker = db.worker({ threads: 4 });
      worker.observe('raw:v', 'copy', async (tx, row) => {
        tx.set('t', row, 'derived:v', (await tx.getString('t', row, 'raw:v')) ?? '');
      });
      const logged = [];
      const log = console.error;
      console.error = (...a) => logged.push(a.join(' ')); // the worker's loops report the failed store while they back off
      await worker.start();
      const acked = [];
      const codes = new Set();
      let failures = 0;
      let n = 0;
      const big = 'x'.repeat(2000);
      await Promise.all(Array.from({ length: 8 }, async () => {
        while (failures < 20) {
          const k = 'k' + n++;
          try {
            await db.transaction(async (tx) => { tx.set('t', k, 'raw:v', big + k); tx.set('t', k + '/pair', 'raw:w', k); });
            acked.push(k);
          } catch (e) { failures++; codes.add(e.code); }
        }
      }));
      let refusedLater = null;
      try { await db.transaction(async (tx) => tx.set('t', 'refused', 'raw:w', 'x')); refusedLater = 'acknowledged'; } catch (e) { refusedLater = e.code; }
      raiseLimit();
      let quiescence = null;
      try {
        await db.waitForQuiescence({ timeoutMs: 60_000 }); // resumes writing first
        quiescence = 'quiescent';
      } catch (e) {
        quiescence = e.code + ': ' + e.message;
      }
      let later = null;
      try { await db.transaction(async (tx) => tx.set('t', 'later', 'raw:w', 'x')); later = 'acknowledged'; } catch (e) { later = e.code; }
      const notDerived = [];
      for (const k of acked) if ((await db.getString('t', k, 'derived:v')) !== big + k) notDerived.push(k);
      await worker.stop().catch(() => undefined);
      let closeError = null;
      await db.close().catch((e) => { closeError = e.code; });
      console.error = log;
      console.log(JSON.stringify({ acked, codes: [...codes], refusedLater, later, quiescence, notDerived, closeError, attempted: n }));`,
      );
      expect(r.codes).toEqual(['IO_ERROR']);
      expect(r.refusedLater).toBe('IO_ERROR');
      expect(r.quiescence).toBe('quiescent');
      expect(r.later).toBe('acknowledged');
      expect(r.notDerived).toEqual([]); // the observers finished without a reopen
      expect(r.closeError).toBeNull();
      const acked = r.acked as string[];
      expect(acked.length).toBeGreaterThan(50);

      const db = await Percolator.open({ store: `file:${dir}` });
      try {
        const ackedSet = new Set(acked);
        for (let i = 0; i < (r.attempted as number); i++) {
          const k = `k${i}`;
          const v = await db.getString('t', k, 'raw:v');
          const pair = await db.getString('t', `${k}/pair`, 'raw:w');
          expect(v === null, `${k}: torn`).toBe(pair === null);
          if (ackedSet.has(k)) expect(pair, `${k}: acknowledged, lost`).toBe(k);
        }
        const worker = db.worker({ threads: 4 });
        worker.observe('raw:v', 'copy', async (tx, row) => {
          tx.set('t', row, 'derived:v', (await tx.getString('t', row, 'raw:v')) ?? '');
        });
        await worker.start();
        await db.waitForQuiescence({ timeoutMs: 60_000 });
        await worker.stop();
        for (const k of acked) expect(await db.getString('t', k, 'derived:v')).toBe(`${'x'.repeat(2000)}${k}`);
        expect(await db.getString('t', 'later', 'raw:w')).toBe('x');
      } finally {
        await db.close();
      }
    },
  );

  it.concurrent(
    'deferred writes a failed write held stay visible to point reads, keep scans of their range waiting, and are written first when writing resumes',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'full-disk-deferred-'));
      dirs.push(dir);
      const r = await underLimit(
        dir,
        `
      const store = await openStore('file:' + dir);
      await store.createTable('t', { families: { f: {} } });
      await store.createTable('u', { families: { f: {} } });
      const value = Buffer.alloc(3000, 7);
      const m = (v) => [{ setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: v } }];
      await store.mutateRow('u', Buffer.from('other'), m(Buffer.from('o')));
      const deferred = [];
      const durable = [];
      let first = null;
      for (let i = 0; first === null; i++) {
        // In one group: a deferred write (acknowledged at once) and a durable one.
        const d = 'd' + String(i).padStart(6, '0');
        const a = 'a' + String(i).padStart(6, '0');
        await store.mutateRow('t', Buffer.from(d), m(value), { durability: 'deferred' });
        deferred.push(d);
        try { await store.mutateRow('t', Buffer.from(a), m(value)); durable.push(a); } catch (e) { first = e; }
      }
      const last = deferred[deferred.length - 1];
      const pointRead = (await store.readRow('t', Buffer.from(last)))?.key.toString() ?? null;
      const scan = async (table) => { const keys = []; for await (const row of store.readRows(table)) keys.push(row.key.toString()); return keys; };
      let stalledScan = null;
      try { await scan('t'); stalledScan = 'answered'; } catch (e) { stalledScan = e.code + (e.details?.refused === true ? ' refused' : ''); }
      const otherScan = await scan('u'); // holds no unwritten deferred write
      raiseLimit();
      const resumed = await store.resumeWrites();
      const scanned = await scan('t');
      await store.close();
      console.log(JSON.stringify({ deferred, durable, pointRead, last, stalledScan, otherScan, resumed, scanned }));`,
      );
      expect(r.pointRead).toBe(r.last);
      expect(r.stalledScan).toBe('IO_ERROR refused');
      expect(r.otherScan).toEqual(['other']);
      expect(r.resumed).toBeNull();
      const deferred = r.deferred as string[];
      const durable = r.durable as string[];
      expect(r.scanned).toEqual([...durable, ...deferred]); // 'a…' sorts before 'd…'

      // every deferred write (acknowledged) and every acknowledged durable one; not the failed durable one
      await expectRows(dir, [...durable, ...deferred]);
    },
  );

  it.concurrent('resumes by itself once there is room: nobody needs to call resumeWrites', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'full-disk-auto-'));
    dirs.push(dir);
    const r = await underLimit(
      dir,
      `
      const { store, put, acked } = await fillUntilFailure();
      raiseLimit();
      const start = Date.now();
      // The engine retries on a timer (first after 1 s): wait for the condition, bounded.
      while (store.writeFailure() !== null && Date.now() - start < 30_000) await new Promise((res) => setTimeout(res, 20));
      const waitedMs = Date.now() - start;
      let later = null;
      try { await put('b'); acked.push('b'); later = 'acknowledged'; } catch (e) { later = e.code; }
      await store.close();
      console.log(JSON.stringify({ acked, waitedMs, later }));`,
    );
    expect(r.later).toBe('acknowledged');
    expect(r.waitedMs).toBeLessThan(30_000);
    await expectRows(dir, r.acked as string[]);
  });

  it.concurrent(
    'a resume LevelDB cannot complete (its flush fails, so does the reopen) leaves no handle until one opens once there is room; nothing is lost',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'full-disk-stuck-'));
      dirs.push(dir);
      const r = await underLimit(
        dir,
        `
      const { store, put, acked } = await fillUntilFailure();
      lowerLimit();
      const stuck = await store.resumeWrites();
      let read = null;
      try { for await (const row of store.readRows('t')) break; read = 'answered'; } catch (e) { read = e.code + (e.details?.reopening === true ? ' reopening' : ''); }
      raiseLimit();
      const resumed = await store.resumeWrites();
      let later = null;
      try { await put('c'); acked.push('c'); later = 'acknowledged'; } catch (e) { later = e.code; }
      const readAfter = (await store.readRow('t', Buffer.from(acked[0])))?.key.toString() ?? null;
      await store.close();
      console.log(JSON.stringify({ acked, stuck: stuck?.code ?? null, read, resumed, later, readAfter }));`,
      );
      expect(r.stuck).toBe('IO_ERROR');
      expect(r.read).toBe('IO_ERROR reopening'); // no LevelDB handle (point reads the row cache holds still answer)
      expect(r.resumed).toBeNull();
      expect(r.later).toBe('acknowledged');
      const acked = r.acked as string[];
      expect(r.readAfter).toBe(acked[0]);
      await expectRows(dir, acked);
    },
  );

  it.concurrent('a reopen waits for the scans open when it starts, which see every row; then writing resumes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'full-disk-scan-'));
    dirs.push(dir);
    const r = await underLimit(
      dir,
      `
      const { store, put, acked } = await fillUntilFailure();
      const rows = store.readRows('t')[Symbol.asyncIterator]();
      const scanned = [(await rows.next()).value.key.toString()];
      lowerLimit();
      const resuming = store.resumeWrites();
      // Until LevelDB has logged its failed flush (bounded): then the reopen waits for this scan.
      const start = Date.now();
      while (!readFileSync(dir + '/LOG', 'utf8').includes('File too large') && Date.now() - start < 30_000) await new Promise((res) => setTimeout(res, 10));
      raiseLimit();
      for (let next = await rows.next(); !next.done; next = await rows.next()) scanned.push(next.value.key.toString());
      const resumed = await resuming;
      let later = null;
      try { await put('c'); acked.push('c'); later = 'acknowledged'; } catch (e) { later = e.code; }
      await store.close();
      console.log(JSON.stringify({ acked, scanned, resumed, later }));`,
    );
    expect(r.resumed).toBeNull();
    expect(r.later).toBe('acknowledged');
    const acked = r.acked as string[];
    expect(r.scanned).toEqual(acked.slice(0, -1)); // every row acknowledged before the scan
    await expectRows(dir, acked);
  });
});

/**
 * A failed fdatasync (EIO, injected by an LD_PRELOAD shim): unlike a lack of room, the failed
 * record may be whole in the page cache, so the store must not write on in place — a reopen would
 * replay it, and a write its caller was told failed would appear after the fact.
 */
const SHIM_SOURCE = `
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
static int failing(void) { const char *f = getenv("FAIL_SYNC_FILE"); return f != NULL && access(f, F_OK) == 0; }
int fdatasync(int fd) { if (failing()) { errno = EIO; return -1; } int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync"); return real(fd); }
int fsync(int fd) { if (failing()) { errno = EIO; return -1; } int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync"); return real(fd); }
`;
const hasCc = spawnSync('cc', ['--version']).status === 0;
if (!hasCc) console.warn('no C compiler (cc): the failed-fsync test skips');

describe.skipIf(!hasCc).concurrent('a failed fsync', () => {
  it.concurrent(
    'refuses writes for good in this process (no resume in place), reads go on, and a restart has every acknowledged write',
    async () => {
      const work = mkdtempSync(join(tmpdir(), 'fail-sync-'));
      dirs.push(work);
      writeFileSync(join(work, 'shim.c'), SHIM_SOURCE);
      const cc = spawnSync('cc', ['-shared', '-fPIC', '-o', join(work, 'shim.so'), join(work, 'shim.c'), '-ldl'], { encoding: 'utf8' });
      expect(cc.status, cc.stderr).toBe(0);
      const dir = join(work, 'store');
      const trigger = join(work, 'fail-now');
      const script = `
      import { rmSync, writeFileSync } from 'node:fs';
      import { openStore } from ${JSON.stringify(resolve('dist/index.js'))};
      const store = await openStore('file:' + ${JSON.stringify(dir)});
      await store.createTable('t', { families: { f: {} } });
      const put = (k) => store.mutateRow('t', Buffer.from(k), [{ setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.from(k) } }]);
      const acked = [];
      for (let i = 0; i < 50; i++) { await put('a' + i); acked.push('a' + i); }
      writeFileSync(${JSON.stringify(trigger)}, ''); // the device fails every fsync from now on
      let failed = null;
      try { await put('failed'); } catch (e) { failed = e; }
      rmSync(${JSON.stringify(trigger)}); // and works again
      const resumed = await store.resumeWrites();
      let later = null;
      try { await put('later'); later = 'acknowledged'; } catch (e) { later = e.code; }
      const read = (await store.readRow('t', Buffer.from('a0')))?.key.toString() ?? null;
      await store.close().catch(() => undefined);
      console.log(JSON.stringify({ acked, failed: failed && { code: failed.code, message: failed.message }, resumed: resumed && { resumable: resumed.details.resumable, message: resumed.message }, later, read }));`;
      const out = await runProcess(process.execPath, ['--input-type=module', '-e', script], {
        timeoutMs: 60_000,
        env: { ...process.env, LD_PRELOAD: join(work, 'shim.so'), FAIL_SYNC_FILE: trigger },
      });
      expect(out.code, out.stderr).toBe(0);
      const lines = out.stdout.trim().split('\n');
      const r = JSON.parse(lines[lines.length - 1] as string) as {
        acked: string[];
        failed: { code: string; message: string } | null;
        resumed: { resumable: boolean; message: string } | null;
        later: string;
        read: string | null;
      };
      expect(r.failed).toMatchObject({ code: 'IO_ERROR' });
      expect(r.failed?.message).toMatch(/Input\/output error/);
      expect(r.resumed).toMatchObject({ resumable: false });
      expect(r.resumed?.message).toMatch(/restart the process/);
      expect(r.later).toBe('IO_ERROR');
      expect(r.read).toBe('a0');
      // After a restart: every acknowledged write. The failed one may be there or not (its record
      // reached the page cache before the fsync failed) — the ambiguity the refusal keeps out of
      // the process that reported the failure.
      const store = await openStore(`file:${dir}`);
      try {
        const found: string[] = [];
        for await (const row of store.readRows('t')) found.push(row.key.toString());
        expect(found.filter((k) => k !== 'failed')).toEqual([...r.acked].sort());
      } finally {
        await store.close();
      }
    },
  );
});
