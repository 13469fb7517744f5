/**
 * `percolator set` and `percolator delete` as real processes (compiled JS under dist/; `npm test`
 * builds first): a cell set or deleted from the command line reads back with `get` — text, 0x-hex,
 * and stdin's bytes, all 256 of them — and prints its commit timestamp (--json: the cell in
 * printable form); a missing table is TABLE_NOT_FOUND unless --create-table, a plain store table
 * NOT_A_PERCOLATOR_TABLE, a bad column the library's INVALID_COLUMN, a missing store NOT_A_STORE —
 * none of them creating anything, however the flags go; a store a worker holds is STORE_LOCKED
 * saying to serve it; and end to end, `set` through `percolator serve` notifies a `percolator
 * worker`'s observer, whose output `wait` then `get` see, as `delete` does.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Percolator } from '../src/txn/percolator.js';
import { storeCopies } from './support/store-copies.js';
import { type CliResult, type RunOptions, runCli, spawnCli, spawnServe } from './support/cli-process.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');

/** The store made below, copied for each command that opens it (test/support/store-copies.ts). */
const stores = storeCopies('cli-set');
const copy = stores.copy;

/** Runs `percolator COMMAND --store file:STORE ARGS`. */
function on(store: string, command: string, args: string[], options: RunOptions = {}): Promise<CliResult> {
  return runCli(mainJs, [command, '--store', `file:${store}`, ...args], options);
}

const COMMIT_TS = /^[1-9]\d*\n$/;

beforeAll(async () => {
  const db = await Percolator.open({ store: `file:${stores.dir}` });
  await db.createTable('t');
  await db.createTable('other');
  await db.store.createTable('raw', { families: { f: {} } }); // a plain Bigtable table
  await db.transaction(async (tx) => tx.set('t', 'old', 'c:v', 'there'));
  await db.close();
}, 30_000);

afterAll(() => stores.remove());

it.concurrent('set prints the commit timestamp; get reads the value back, text and 0x-hex alike', async () => {
  const s = copy();
  // A value that is not whole bytes of hex is refused before the store is opened: side by side with the rest.
  const bad = on(s, 'set', ['t', 'row', 'c:v', '0xzz']);
  const first = await on(s, 'set', ['t', 'row', 'c:v', 'hello wörld']);
  expect(first).toMatchObject({ code: 0, stderr: '' });
  expect(first.stdout).toMatch(COMMIT_TS);
  expect(await on(s, 'get', ['t', 'row', 'c:v'])).toMatchObject({ code: 0, stdout: 'hello wörld\n' });
  // Binary row and value in the 0x form get and scan print; text starting with 0x given as hex.
  expect((await on(s, 'set', ['t', '0x00ff', 'c:v', '0x0001FF'])).code).toBe(0);
  expect(await on(s, 'get', ['t', '0x00ff', 'c:v'])).toMatchObject({ code: 0, stdout: '0x0001ff\n' });
  expect((await on(s, 'set', ['t', 'row', 'c:hex', '0x30786666'])).code).toBe(0);
  expect(await on(s, 'get', ['t', 'row', 'c:hex', '--json'])).toMatchObject({
    code: 0,
    stdout: expect.stringContaining('"value":"0x30786666"'),
  });
  expect(await bad).toEqual({
    code: 1,
    stdout: '',
    stderr:
      'percolator: INVALID_ARGUMENT: VALUE "0xzz" starts with 0x but is not whole bytes of hex; for the text itself give its hex form, 0x30787a7a\n',
  });
});

it.concurrent('set - reads the value from stdin, whole and binary-safe: all 256 byte values', async () => {
  const s = copy();
  const bytes = Uint8Array.from({ length: 256 * 3 }, (_, i) => (i * 7) % 256);
  const r = await on(s, 'set', ['t', 'bin', 'c:v', '-', '--json'], { input: bytes });
  expect(r.code, r.stderr).toBe(0);
  const printed = JSON.parse(r.stdout) as { value: string; commitTs: number };
  expect(printed.value).toBe(`0x${Buffer.from(bytes).toString('hex')}`);
  const got = await on(s, 'get', ['t', 'bin', 'c:v']);
  expect(got).toEqual({ code: 0, stderr: '', stdout: `0x${Buffer.from(bytes).toString('hex')}\n` });
  // Empty stdin is the empty value, not an absent cell; "0x2d" is the text "-" itself.
  expect((await on(s, 'set', ['t', 'empty', 'c:v', '-'], { input: new Uint8Array(0) })).code).toBe(0);
  expect(JSON.parse((await on(s, 'get', ['t', 'empty', 'c:v', '--json'])).stdout)).toMatchObject({ value: '' });
  expect((await on(s, 'set', ['t', 'dash', 'c:v', '0x2d'])).code).toBe(0);
  expect(await on(s, 'get', ['t', 'dash', 'c:v'])).toMatchObject({ code: 0, stdout: '-\n' });
});

it.concurrent('--json prints the cell in printable form and the commit timestamp', async () => {
  const s = copy();
  const r = await on(s, 'set', ['t', '0x0001ff', 'c:v', '0xff', '--json']);
  expect(r.code, r.stderr).toBe(0);
  const printed = JSON.parse(r.stdout) as Record<string, unknown>;
  expect(printed).toEqual({ table: 't', row: '0x0001ff', column: 'c:v', value: '0xff', commitTs: expect.any(Number) });
  expect(Object.keys(printed)).toEqual(['table', 'row', 'column', 'value', 'commitTs']);
  const text = await on(s, 'set', ['t', 'r', 'c:v', 'plain', '--json']);
  expect(JSON.parse(text.stdout)).toMatchObject({ row: 'r', value: 'plain' });
  expect((JSON.parse(text.stdout) as { commitTs: number }).commitTs).toBeGreaterThan(printed.commitTs as number);
});

it.concurrent('delete removes the cell (get: absent) and prints its commit; --json says value null', async () => {
  const s = copy();
  const r = await on(s, 'delete', ['t', 'old', 'c:v']);
  expect(r).toMatchObject({ code: 0, stderr: '' });
  expect(r.stdout).toMatch(COMMIT_TS);
  expect(await on(s, 'get', ['t', 'old', 'c:v'])).toMatchObject({ code: 1, stdout: '' });
  // Set again, then deleted by its 0x form.
  expect((await on(s, 'set', ['t', 'old', 'c:v', 'back'])).code).toBe(0);
  const json = await on(s, 'delete', ['t', '0x6f6c64', 'c:v', '--json']);
  expect(json.code, json.stderr).toBe(0);
  expect(JSON.parse(json.stdout)).toEqual({ table: 't', row: 'old', column: 'c:v', value: null, commitTs: expect.any(Number) });
  expect(await on(s, 'get', ['t', 'old', 'c:v'])).toMatchObject({ code: 1, stdout: '' });
  // A missing table is one for delete too, and it has no --create-table: nothing to create a table for.
  expect(await on(s, 'delete', ['nope', 'r', 'c:v'])).toEqual({
    code: 1,
    stdout: '',
    stderr: `percolator: TABLE_NOT_FOUND: table "nope" does not exist; the store's tables: other, raw, t\n`,
  });
  expect((await on(s, 'delete', ['nope', 'r', 'c:v', '--create-table'])).code).toBe(1);
});

it.concurrent(
  'a missing table is TABLE_NOT_FOUND naming the tables there are; --create-table creates it as a Percolator table',
  async () => {
    const s = copy();
    expect(await on(s, 'set', ['docs', 'r', 'c:v', 'v'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `percolator: TABLE_NOT_FOUND: table "docs" does not exist; the store's tables: other, raw, t; set --create-table creates it\n`,
    });
    // Nothing was created: still not there.
    expect((await on(s, 'get', ['docs', 'r', 'c:v'])).stderr).toMatch(/^percolator: TABLE_NOT_FOUND: /);
    const created = await on(s, 'set', ['docs', 'r', 'c:v', 'v', '--create-table']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toBe('percolator set: created table docs\n');
    expect(created.stdout).toMatch(COMMIT_TS);
    expect(await on(s, 'get', ['docs', 'r', 'c:v'])).toMatchObject({ code: 0, stdout: 'v\n' }); // get checks it is a Percolator table
    // There already: --create-table changes nothing and says nothing.
    expect(await on(s, 'set', ['docs', 'r', 'c:v', 'w', '--create-table'])).toMatchObject({ code: 0, stderr: '' });
    expect(await on(s, 'get', ['docs', 'r', 'c:v'])).toMatchObject({ code: 0, stdout: 'w\n' });
  },
);

it.concurrent(
  'a table that is not a Percolator table is NOT_A_PERCOLATOR_TABLE, with or without --create-table; nothing written',
  async () => {
    const s = copy();
    for (const args of [
      ['set', 'raw', 'r', 'f:q', 'v'],
      ['set', 'raw', 'r', 'f:q', 'v', '--create-table'],
      ['delete', 'raw', 'r', 'f:q'],
    ]) {
      const r = await on(s, args[0] as string, args.slice(1));
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^percolator: NOT_A_PERCOLATOR_TABLE: table raw is not a Percolator table[^\n]*\n$/);
    }
    expect(await on(s, 'scan', ['raw'])).toEqual({ code: 0, stderr: '', stdout: '' });
  },
);

it.concurrent("a bad column is the library's INVALID_COLUMN, and an empty row its EMPTY_ROW_KEY — before anything is created", async () => {
  const s = copy();
  const none = join(stores.scratch, 'never-made');
  // Side by side: none of them opens the store, let alone takes its lock.
  const [noFamily, noName, del, emptyRow, freshTable, freshRow, freshStore] = await Promise.all([
    on(s, 'set', ['t', 'r', 'no-family', 'v']),
    on(s, 'set', ['t', 'r', ':q', 'v']),
    on(s, 'delete', ['t', 'r', 'no-family']),
    on(s, 'set', ['t', '', 'c:v', 'v']),
    // With --create-table, neither the table nor the store is made for a write that cannot be.
    on(s, 'set', ['fresh', 'r', 'bad', 'v', '--create-table']),
    on(s, 'set', ['fresh', '0x', 'c:v', 'v', '--create-table']),
    on(none, 'set', ['t', 'r', 'bad', 'v', '--create-table']),
  ]);
  const invalid = (column: string) =>
    `percolator: INVALID_COLUMN: invalid column ${JSON.stringify(column)}: use family:qualifier with family [_a-zA-Z0-9][-_.a-zA-Z0-9]*\n`;
  expect(noFamily).toEqual({ code: 1, stdout: '', stderr: invalid('no-family') });
  expect(noName).toEqual({ code: 1, stdout: '', stderr: invalid(':q') });
  expect(del).toEqual({ code: 1, stdout: '', stderr: invalid('no-family') });
  expect(emptyRow).toEqual({ code: 1, stdout: '', stderr: 'percolator: EMPTY_ROW_KEY: empty row key in table t\n' });
  expect(freshTable).toEqual({ code: 1, stdout: '', stderr: invalid('bad') });
  expect(freshRow).toEqual({ code: 1, stdout: '', stderr: 'percolator: EMPTY_ROW_KEY: empty row key in table fresh\n' });
  expect(freshStore).toEqual({ code: 1, stdout: '', stderr: invalid('bad') });
  expect((await on(s, 'get', ['fresh', 'r', 'c:v'])).stderr).toMatch(/^percolator: TABLE_NOT_FOUND: /);
  expect(existsSync(none)).toBe(false);
});

it.concurrent(
  'a missing store is NOT_A_STORE and nothing is created; set --create-table creates it in a missing or empty directory only',
  async () => {
    const base = mkdtempSync(join(stores.scratch, 'nostore-'));
    const empty = join(base, 'empty');
    const missing = join(base, 'typo');
    const foreign = join(base, 'project');
    mkdirSync(empty);
    mkdirSync(foreign);
    writeFileSync(join(foreign, 'package.json'), '{}');
    const runs = await Promise.all(
      [empty, missing].flatMap((store) => [
        on(store, 'set', ['t', 'r', 'c:v', 'v']).then((r) => ({ store, r, hint: '; set --create-table creates the store and the table' })),
        on(store, 'delete', ['t', 'r', 'c:v']).then((r) => ({ store, r, hint: '' })),
      ]),
    );
    for (const { store, r, hint } of runs) {
      expect(r).toEqual({ code: 1, stdout: '', stderr: `percolator: NOT_A_STORE: no store at ${store} (nothing was created)${hint}\n` });
    }
    expect(readdirSync(empty)).toEqual([]);
    expect(existsSync(missing)).toBe(false);
    // Among files that are not a store, not even --create-table makes one.
    expect(await on(foreign, 'set', ['t', 'r', 'c:v', 'v', '--create-table'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `percolator: NOT_A_STORE: ${foreign} holds files and no store (package.json); nothing was created\n`,
    });
    expect(readdirSync(foreign)).toEqual(['package.json']);
    // Where there is nothing, --create-table makes the store and the table, and says both.
    const [a, b] = await Promise.all([
      on(missing, 'set', ['t', 'r', 'c:v', 'v', '--create-table']),
      on(empty, 'set', ['t', 'r', 'c:v', 'v', '--create-table']),
    ]);
    expect(a).toMatchObject({ code: 0, stderr: `percolator set: created a store at ${missing}\npercolator set: created table t\n` });
    expect(b).toMatchObject({ code: 0, stderr: `percolator set: created a store at ${empty}\npercolator set: created table t\n` });
    expect(await on(missing, 'get', ['t', 'r', 'c:v'])).toMatchObject({ code: 0, stdout: 'v\n' });
  },
);

it.concurrent(
  'over a file: store a worker holds, set is STORE_LOCKED saying to serve the store',
  async () => {
    const s = copy();
    const observers = join(mkdtempSync(join(stores.scratch, 'obs-')), 'observers.mjs');
    writeFileSync(observers, 'export default (w) => { w.observe("c:in", "noop", async () => {}); };\n');
    const worker = spawnCli(mainJs, ['worker', '--observers', observers, '--store', `file:${s}`, '--threads', '1']);
    try {
      await worker.waitForStderr((e) => e.includes('running observers'), 'the worker runs');
      const r = await on(s, 'set', ['t', 'r', 'c:in', 'v']);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        new RegExp(
          `^percolator: STORE_LOCKED: the store at ${s} is open in another process or engine \\(held by process ${worker.child.pid}: `,
        ),
      );
      expect(r.stderr).toContain(
        '; a percolator worker on a file: store holds it, so nothing else can write to it or wait on it: serve the store (percolator serve --data DIR) and give its clientUrl, bigtable://HOST:PORT, to the worker, the writers and wait)\n',
      );
      expect(r.stderr.split('\n')).toHaveLength(2); // one line
    } finally {
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    }
  },
  60_000,
);

it.concurrent(
  "end to end: set through percolator serve notifies a percolator worker's observer; wait, then get sees its output; so does delete",
  async () => {
    const observers = join(mkdtempSync(join(stores.scratch, 'obs-')), 'observers.mjs');
    writeFileSync(
      observers,
      `export default function (worker) {
  worker.observe('doc:in', 'shout', async (tx, row, column, table) => {
    const v = await tx.getString(table, row, 'doc:in');
    tx.set(table, row, 'doc:out', v === null ? '(deleted)' : v.toUpperCase() + '!');
  });
}
`,
    );
    const serve = spawnServe(mainJs, ['--store', 'memory:']);
    try {
      const clientUrl = await serve.clientUrl;
      const cli = (...args: string[]) => runCli(mainJs, [...args, '--store', clientUrl]);
      const worker = spawnCli(mainJs, ['worker', '--observers', observers, '--store', clientUrl, '--threads', '2']);
      try {
        // Writers learn which columns are observed when they open: the worker registers its column first.
        await worker.waitForStderr((e) => e.includes('running observers'), 'the worker runs');
        const set = await cli('set', 'docs', 'r1', 'doc:in', 'hello', '--create-table');
        expect(set, set.stderr).toMatchObject({ code: 0, stderr: 'percolator set: created table docs\n' });
        expect(set.stdout).toMatch(COMMIT_TS);
        expect(await cli('wait', '--timeout', '30')).toMatchObject({ code: 0, stdout: 'quiescent\n' });
        expect(await cli('get', 'docs', 'r1', 'doc:out')).toMatchObject({ code: 0, stdout: 'HELLO!\n' });
        // A delete notifies the observer as well.
        expect(await cli('delete', 'docs', 'r1', 'doc:in')).toMatchObject({ code: 0, stderr: '' });
        expect(await cli('wait', '--timeout', '30')).toMatchObject({ code: 0, stdout: 'quiescent\n' });
        expect(await cli('get', 'docs', 'r1', 'doc:out')).toMatchObject({ code: 0, stdout: '(deleted)\n' });
      } finally {
        worker.child.kill('SIGTERM');
        await worker.exited;
      }
      expect(worker.stderr()).toMatch(/stopped after 2 observer commits \(0 skipped, 0 failures/);
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
  },
  120_000,
);
