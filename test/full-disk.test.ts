/**
 * A `file:` store whose disk fills up, then has room again — without root: the child runs under a
 * file-size limit (RLIMIT_FSIZE via util-linux `prlimit`; Node ignores SIGXFSZ), so LevelDB's
 * log append fails part-way (EFBIG, the same torn append a full disk gives), and then raises its
 * own limit.
 *
 * What must hold: the failed write and every later write are IO_ERRORs (the later ones marked
 * `refused`), reads go on, waiting for quiescence fails at once with that error, nothing
 * crashes; after a reopen every acknowledged write is there and
 * every acknowledged transaction whole, and the observers finish what was committed. Before the
 * engine refused writes after a failure, the writes acknowledged once the limit was raised landed
 * misaligned in the log and the reopen failed with DATA_CORRUPTED.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Percolator } from '../src/txn/percolator.js';
import { openStore } from '../src/store/open-store.js';

const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0;
if (!hasPrlimit) console.warn('prlimit (util-linux) is not installed: the full-disk tests skip');

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs `body` (an ES module's code, `dir` in scope) under a 3 MB file-size limit; its stdout's last line as JSON. */
function underLimit(dir: string, body: string): Record<string, unknown> {
  const script = `
    import { execFileSync } from 'node:child_process';
    import { openStore, Percolator } from ${JSON.stringify(resolve('dist/index.js'))};
    const dir = ${JSON.stringify(dir)};
    const raiseLimit = () => execFileSync('prlimit', ['--pid', String(process.pid), '--fsize=unlimited']);
    ${body}`;
  const out = spawnSync('prlimit', ['--fsize=3000000:unlimited', process.execPath, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(out.status, out.stderr).toBe(0);
  const lines = out.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1] as string) as Record<string, unknown>;
}

describe.skipIf(!hasPrlimit)('a full disk', () => {
  it('store writes: the failed one and all later ones are IO_ERRORs, reads go on, and a reopen has every acknowledged write', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'full-disk-store-'));
    dirs.push(dir);
    const r = underLimit(
      dir,
      `
      const store = await openStore('file:' + dir);
      await store.createTable('t', { families: { f: {} } });
      const value = Buffer.alloc(3000, 7);
      const put = (k) => store.mutateRow('t', Buffer.from(k), [{ setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value } }]);
      const acked = [];
      let first = null;
      for (let i = 0; first === null; i++) {
        const k = 'a' + String(i).padStart(6, '0');
        try { await put(k); acked.push(k); } catch (e) { first = e; }
      }
      raiseLimit(); // the disk has room again
      const later = [];
      for (let j = 0; j < 5; j++) {
        try { await put('b' + j); acked.push('b' + j); later.push('acknowledged'); } catch (e) { later.push(e.code + (e.details?.refused === true ? ' refused' : '')); }
      }
      const read = (await store.readRow('t', Buffer.from(acked[0])))?.key.toString() ?? null;
      let closeError = null;
      await store.close().catch((e) => { closeError = e.code; });
      console.log(JSON.stringify({ acked, first: first.code, firstMessage: first.message, later, read, closeError }));`,
    );
    expect(r.first).toBe('IO_ERROR');
    expect(r.firstMessage).toMatch(/File too large/);
    expect(r.later).toEqual(Array(5).fill('IO_ERROR refused'));
    const acked = r.acked as string[];
    expect(r.read).toBe(acked[0]);
    expect(acked.length).toBeGreaterThan(100);

    const store = await openStore(`file:${dir}`);
    try {
      const found: string[] = [];
      for await (const row of store.readRows('t')) found.push(row.key.toString());
      expect(found).toEqual(acked); // every acknowledged write, and none of the failed ones
      // and the reopened store writes again
      await store.mutateRow('t', Buffer.from('after'), [
        { setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.from('v') } },
      ]);
    } finally {
      await store.close();
    }
  });

  it('transactions and observers: every acknowledged transaction is whole after a reopen, none torn, and the observers finish', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'full-disk-txn-'));
    dirs.push(dir);
    const r = underLimit(
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
      raiseLimit();
      let quiescence = null;
      try {
        await db.waitForQuiescence({ timeoutMs: 30_000 });
        quiescence = 'quiescent';
      } catch (e) {
        quiescence = e.code; // the first failure's, or the refusal's
      }
      let later = null;
      try { await db.transaction(async (tx) => tx.set('t', 'later', 'raw:w', 'x')); later = 'acknowledged'; } catch (e) { later = e.code; }
      await worker.stop().catch(() => undefined);
      await db.close().catch(() => undefined);
      console.error = log;
      console.log(JSON.stringify({ acked, codes: [...codes], later, quiescence, attempted: n }));`,
    );
    expect(r.codes).toEqual(['IO_ERROR']);
    expect(r.later).toBe('IO_ERROR');
    // at once, not after the timeout: no observer can commit until the store is reopened
    expect(r.quiescence).toBe('IO_ERROR');
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
    } finally {
      await db.close();
    }
  });
});
