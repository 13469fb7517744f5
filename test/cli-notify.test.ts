/**
 * `percolator notify` as real processes (compiled JS under dist/; `npm test` builds first). End to
 * end, the case a user met: data written with `set` before any worker carries no notification, so
 * a worker started afterwards never processes it and `wait` is quiescent at once; `notify` then
 * notifies its rows — `--row` and `--prefix` selecting exactly theirs, without either every row
 * holding the column — and after `wait` the observer's output is there for each. A column no
 * observer is registered for is NOT_OBSERVED, naming the observed ones, and writes nothing; the
 * usual errors come as for `set` (INVALID_COLUMN before opening, NOT_A_STORE creating nothing,
 * NOT_A_PERCOLATOR_TABLE). Each CLI process costs ~0.3 s of CPU: few are run.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore } from '../src/store/open-store.js';
import { Percolator } from '../src/txn/percolator.js';
import { storeCopies } from './support/store-copies.js';
import { type CliResult, runCli, spawnCli, spawnServe } from './support/cli-process.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');

/** The store made below, copied for each command that opens it (test/support/store-copies.ts). */
const stores = storeCopies('cli-notify');
const copy = stores.copy;

/** Runs `percolator notify --store file:STORE ARGS`. */
function notify(store: string, ...args: string[]): Promise<CliResult> {
  return runCli(mainJs, ['notify', '--store', `file:${store}`, ...args]);
}

/** Every notify cell of `table` in the store at `url`, as `row family:qualifier`. */
async function notifyCells(url: string, table: string): Promise<string[]> {
  const store = await openStore(url);
  try {
    const cells: string[] = [];
    for await (const r of store.readRows(table, { filter: { familyNameRegexFilter: 'notify' } }))
      for (const c of r.cells) cells.push(`${Buffer.from(r.key).toString()} ${c.family}:${Buffer.from(c.qualifier).toString('hex')}`);
    return cells;
  } finally {
    await store.close();
  }
}

beforeAll(async () => {
  const db = await Percolator.open({ store: `file:${stores.dir}` });
  await db.createTable('docs');
  await db.store.createTable('raw', { families: { f: {} } }); // a plain Bigtable table
  await db.transaction(async (tx) => {
    tx.set('docs', 'a1', 'raw:content', 'one');
    tx.set('docs', 'x1', 'raw:other', 'unobserved');
  });
  // A worker started and stopped: what registers raw:content's observer (docs/observers.md).
  const worker = db.worker({ threads: 1 });
  worker.observe('raw:content', 'noop', async () => {}, { table: 'docs' });
  await worker.start();
  await worker.stop();
  await db.close();
}, 30_000);

afterAll(() => stores.remove());

it.concurrent('a column with no registered observer is NOT_OBSERVED, naming those that have one; nothing is written', async () => {
  const s = copy();
  // x1 holds a committed value of raw:other: without the check it would be notified.
  expect(await notify(s, 'docs', 'raw:other')).toEqual({
    code: 1,
    stdout: '',
    stderr:
      'percolator: NOT_OBSERVED: no observer of raw:other is registered for table docs (its observed columns: raw:content): no worker would process the notifications, and wait would not count them; start a worker running one (percolator worker --observers FILE; its start registers it), then notify\n',
  });
  expect(await notifyCells(`file:${s}`, 'docs')).toEqual([]);
});

it.concurrent(
  'argument errors as set gives them: INVALID_COLUMN before opening, NOT_A_STORE creating nothing, NOT_A_PERCOLATOR_TABLE',
  async () => {
    const s = copy();
    const none = join(stores.scratch, 'never-made');
    const [badColumn, noStore, plain] = await Promise.all([
      notify(none, 'docs', 'no-family'),
      notify(none, 'docs', 'raw:content'),
      notify(s, 'raw', 'f:q'),
    ]);
    expect(badColumn).toEqual({
      code: 1,
      stdout: '',
      stderr: 'percolator: INVALID_COLUMN: invalid column "no-family": use family:qualifier with family [_a-zA-Z0-9][-_.a-zA-Z0-9]*\n',
    });
    expect(noStore).toEqual({ code: 1, stdout: '', stderr: `percolator: NOT_A_STORE: no store at ${none} (nothing was created)\n` });
    expect(existsSync(none)).toBe(false);
    expect(plain).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'percolator: NOT_A_PERCOLATOR_TABLE: table raw is not a Percolator table: it lacks the system families lock, write, data, notify\n',
    });
  },
);

it.concurrent(
  'end to end: data set before any worker is never processed; notify (a row, a prefix, then the table) has the observer process it',
  async () => {
    const observers = join(mkdtempSync(join(stores.scratch, 'obs-')), 'observers.mjs');
    writeFileSync(
      observers,
      `export default function (worker) {
  worker.observe('raw:content', 'upper', async (tx, row, column, table) => {
    tx.set(table, row, 'raw:upper', (await tx.getString(table, row, 'raw:content')).toUpperCase());
  });
}
`,
    );
    const serve = spawnServe(mainJs, ['--store', 'memory:']);
    let db: Percolator | null = null;
    try {
      const clientUrl = await serve.clientUrl;
      const cli = (...args: string[]) => runCli(mainJs, [...args, '--store', clientUrl]);
      // Written before any worker registered the observer: as the user did, then more rows from
      // the library — two under another prefix, and one without the column.
      expect(await cli('set', 'docs', 'a1', 'raw:content', 'first', '--create-table')).toMatchObject({ code: 0 });
      db = await Percolator.open({ store: clientUrl });
      await db.transaction(async (tx) => {
        for (const k of ['a2', 'a3', 'b1', 'c1']) tx.set('docs', k, 'raw:content', `text of ${k}`);
        tx.set('docs', 'x1', 'raw:other', 'no content');
      });
      const upper = async (): Promise<Record<string, string>> => {
        const snap = await (db as Percolator).snapshot();
        const out: Record<string, string> = {};
        for await (const r of snap.scan('docs', {}, { columns: ['raw:upper'] }))
          out[Buffer.from(r.row).toString()] = Buffer.from(r.columns.get('raw:upper') as Uint8Array).toString();
        snap.release();
        return out;
      };
      const worker = spawnCli(mainJs, ['worker', '--observers', observers, '--store', clientUrl, '--threads', '2']);
      try {
        await worker.waitForStderr((e) => e.includes('running observers'), 'the worker runs');
        // Nothing pending, nothing processed: what the user saw.
        expect(await cli('wait', '--timeout', '30')).toMatchObject({ code: 0, stdout: 'quiescent\n' });
        expect(await cli('get', 'docs', 'a1', 'raw:upper')).toMatchObject({ code: 1, stdout: '' });
        expect(await upper()).toEqual({});

        // One row (given in hex), and the rows under a prefix: those only.
        const [row, prefix] = await Promise.all([
          cli('notify', 'docs', 'raw:content', '--row', '0x6231'),
          cli('notify', 'docs', 'raw:content', '--prefix', 'a', '--json'),
        ]);
        expect(row).toEqual({ code: 0, stdout: 'notified 1 row\n', stderr: '' });
        expect(prefix).toEqual({ code: 0, stdout: '{"table":"docs","column":"raw:content","rows":3}\n', stderr: '' });
        expect(await cli('wait', '--timeout', '30')).toMatchObject({ code: 0, stdout: 'quiescent\n' });
        expect(await upper()).toEqual({ a1: 'FIRST', a2: 'TEXT OF A2', a3: 'TEXT OF A3', b1: 'TEXT OF B1' });

        // A row without a value of the column, a prefix with none: nothing to notify, and why.
        expect(await cli('notify', 'docs', 'raw:content', '--row', 'x1')).toEqual({
          code: 0,
          stdout: 'notified 0 rows: row x1 of docs holds no committed value of raw:content\n',
          stderr: '',
        });
        expect(await cli('notify', 'docs', 'raw:content', '--prefix', 'zz')).toEqual({
          code: 0,
          stdout: 'notified 0 rows: no row of docs under zz holds a committed value of raw:content\n',
          stderr: '',
        });

        // The whole table: every row holding raw:content (x1 does not), c1 processed now.
        expect(await cli('notify', 'docs', 'raw:content')).toEqual({ code: 0, stdout: 'notified 5 rows\n', stderr: '' });
        expect(await cli('wait', '--timeout', '30')).toMatchObject({ code: 0, stdout: 'quiescent\n' });
        expect(await cli('get', 'docs', 'c1', 'raw:upper')).toMatchObject({ code: 0, stdout: 'TEXT OF C1\n' });
        expect(await upper()).toEqual({ a1: 'FIRST', a2: 'TEXT OF A2', a3: 'TEXT OF A3', b1: 'TEXT OF B1', c1: 'TEXT OF C1' });
      } finally {
        worker.child.kill('SIGTERM');
        await worker.exited;
      }
      expect(worker.stderr()).toMatch(/ 0 failures/);
    } finally {
      await db?.close();
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
  },
  120_000,
);
