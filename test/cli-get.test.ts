/**
 * `percolator get` and `percolator scan` as real processes (compiled JS under dist/; `npm test`
 * builds first): get prints the latest committed value of a cell, a cell left behind by a writer
 * that died after its commit point (rolled forward), exits 1 for an absent cell and 2 for bad
 * input (a typed error); scan prints a Percolator table's committed values at a snapshot, or with
 * --raw every stored cell, system columns included, and a plain store table raw either way; both
 * print bytes in one unambiguous form (text, or 0x and hex — text starting with 0x as hex), which
 * get takes back as a row key and scan as a --prefix; a table that is not there named with the tables that are; and,
 * for every command that reads or processes an existing store (get, scan, wait, search, worker), a
 * directory holding no store, or a missing one (a typed error, no database left there);
 * and `serve` over a directory of other files (a typed error, no database left among them).
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore } from '../src/store/open-store.js';
import { frozenWriter } from '../src/txn/frozen-writer.fixture.js';
import { PERCOLATOR_TABLE_SPEC } from '../src/txn/layout.js';
import { Percolator } from '../src/txn/percolator.js';
import { storeCopies } from './support/store-copies.js';
import { type CliResult, runCli } from './support/cli-process.js';
import { EMULATOR_MISSING, emulatorBinary, startEmulator } from './support/emulator.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');

/**
 * The store made below, copied for each command that opens it (test/support/store-copies.ts). Each
 * copy is as beforeAll left the store: its dead writer's lock not yet rolled forward.
 */
const stores = storeCopies('cli-get');
const copy = stores.copy;

function get(...args: string[]): Promise<CliResult> {
  return runCli(mainJs, ['get', '--store', `file:${copy()}`, ...args]);
}

beforeAll(async () => {
  const db = await Percolator.open({ store: `file:${stores.dir}` });
  await db.createTable('t');
  await db.store.createTable('raw', { families: { f: {} } }); // a plain Bigtable table
  const cell = (value: string, ts: number) => ({
    setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: ts, value: Buffer.from(value) },
  });
  await db.store.mutateRow('raw', Buffer.from('r1'), [cell('plain-old', 1000), cell('plain', 2000)]);
  await db.transaction(async (tx) => tx.set('t', 'row', 'c:v', 'first'));
  await db.transaction(async (tx) => tx.set('t', 'row', 'c:v', 'second'));
  await db.transaction(async (tx) => tx.set('t', 'bin', 'c:v', Uint8Array.from([0, 1, 255])));
  // What the printed form has to keep apart: a binary key, text that looks like hex, a column
  // name holding a newline, a long value with an emoji across the cut.
  await db.createTable('u');
  await db.transaction(async (tx) => {
    tx.set('u', Uint8Array.from([0, 1, 255]), 'c:v', 'binary-key');
    tx.set('u', '0xff', 'c:v', '0xbeef');
    tx.set('u', 'nl', 'c:a\nb', 'v');
    tx.set('u', 'emoji', 'c:v', `${'a'.repeat(119)}\u{1f600}tail`);
  });
  // A writer that stops for good after its commit point: its secondary keeps its lock.
  const { writer: frozen, reached } = await frozenWriter({ store: db.store, oracle: db.oracle, point: 'after-primary-commit' });
  void frozen.transaction(async (tx) => {
    tx.set('t', 'p', 'c:v', 'P');
    tx.set('t', 's', 'c:v', 'S');
  });
  await reached;
  const locked = await db.store.readRow('t', Buffer.from('s'), { familyNameRegexFilter: 'lock' });
  expect(locked?.cells.length).toBe(1); // what the reader below has to roll forward
  await frozen.close();
  await db.close();
}, 30_000);

afterAll(() => stores.remove());

it.concurrent('prints the latest committed value; bytes that are not text as hex', async () => {
  expect(await get('t', 'row', 'c:v')).toMatchObject({ code: 0, stdout: 'second\n' });
  expect(await get('t', 'bin', 'c:v')).toMatchObject({ code: 0, stdout: '0x0001ff\n' });
});

it.concurrent('reads a secondary whose writer died after the commit point as committed', async () => {
  expect(await get('t', 's', 'c:v')).toMatchObject({ code: 0, stdout: 'S\n' });
});

it.concurrent('exits 1 for an absent cell; --json says null', async () => {
  expect(await get('t', 'nope', 'c:v')).toMatchObject({ code: 1, stdout: '' });
  const r = await get('t', 'nope', 'c:v', '--json');
  expect(r.code).toBe(1);
  expect(JSON.parse(r.stdout)).toEqual({ table: 't', row: 'nope', column: 'c:v', value: null });
});

it.concurrent('bad input is a typed one-line error and exit 2, apart from the 1 of an absent cell', async () => {
  const bad = await get('t', 'row', 'no-family');
  expect(bad.code).toBe(2);
  expect(bad.stderr).toMatch(/^percolator: INVALID_COLUMN: /);
  const missing = await get('missing', 'row', 'c:v');
  expect(missing.code).toBe(2);
  // The tables there are, since no command lists them (Percolator's own left out).
  expect(missing.stderr).toBe(`percolator: TABLE_NOT_FOUND: table "missing" does not exist; the store's tables: raw, t, u\n`);
  expect(await scan('missing')).toEqual({
    code: 1,
    stdout: '',
    stderr: `percolator: TABLE_NOT_FOUND: table "missing" does not exist; the store's tables: raw, t, u\n`,
  });
  const raw = await get('raw', 'row', 'f:q');
  expect(raw.code).toBe(2);
  expect(raw.stderr).toMatch(/^percolator: NOT_A_PERCOLATOR_TABLE: table raw is not a Percolator table/);
  // What commander itself rejects, too.
  expect(await get('t', 'row')).toMatchObject({ code: 2, stdout: '' });
  expect(await get('t', 'row', 'c:v', '--bogus')).toMatchObject({ code: 2, stdout: '' });
  // And --help says so.
  const help = await runCli(mainJs, ['get', '--help']);
  expect(help.code).toBe(0);
  expect(help.stdout.replace(/\s+/g, ' ')).toContain('Exit status: 0 the value was printed, 1 the cell is absent');
});

function scan(...args: string[]): Promise<CliResult> {
  return runCli(mainJs, ['scan', '--store', `file:${copy()}`, ...args]);
}

it.concurrent("scan prints a Percolator table's committed values at a snapshot, a dead writer's commit rolled forward", async () => {
  expect(await scan('t')).toMatchObject({
    code: 0,
    stderr: '',
    stdout: ['bin', '  c:v = 0x0001ff', 'p', '  c:v = P', 'row', '  c:v = second', 's', '  c:v = S', ''].join('\n'),
  });
  const json = await scan('t', '--prefix', 'r', '--json');
  expect(json.code).toBe(0);
  expect(
    json.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown),
  ).toEqual([{ key: 'row', columns: { 'c:v': 'second' } }]);
  expect((await scan('t', '--limit', '1')).stdout).toBe('bin\n  c:v = 0x0001ff\n');
});

it.concurrent('scan --raw prints every stored cell of a Percolator table, system columns and versions included', async () => {
  const r = await scan('t', '--raw', '--prefix', 'row');
  expect(r.code).toBe(0);
  const lines = r.stdout.trimEnd().split('\n');
  expect(lines[0]).toBe('row');
  // Two commits: two write records, their short values inline (no data cells).
  expect(lines.slice(1).filter((l) => /^ {2}write:c:v @\d+ = 0x[0-9a-f]+$/.test(l))).toHaveLength(2);
  expect(lines.slice(1).every((l) => /^ {2}(lock|write|data|notify):/.test(l))).toBe(true);
  const json = await scan('t', '--raw', '--prefix', 'row', '--json');
  const row = JSON.parse(json.stdout) as { key: string; cells: { family: string; qualifier: string }[] };
  expect(row.key).toBe('row');
  expect(row.cells.map((c) => `${c.family}:${c.qualifier}`)).toEqual(['write:c:v', 'write:c:v']);
});

it.concurrent('scan prints a plain store table raw, with or without --raw', async () => {
  const raw = ['r1', '  f:q @2000 = plain', '  f:q @1000 = plain-old', ''].join('\n');
  expect(await scan('raw')).toMatchObject({ code: 0, stdout: raw });
  expect(await scan('raw', '--raw')).toMatchObject({ code: 0, stdout: raw });
});

it.concurrent('scan prints text that starts with 0x as hex: a printed 0x… is always bytes', async () => {
  expect(await scan('u', '--limit', '2')).toMatchObject({
    code: 0,
    stderr: '',
    // The text key 0xff, printed as it is, would read as the byte ff; its value 0xbeef as two bytes.
    stdout: ['0x0001ff', '  c:v = binary-key', '0x30786666', '  c:v = 0x307862656566', ''].join('\n'),
  });
});

it.concurrent('scan prints a column name in the printable form too: one holding a newline cannot forge an output line', async () => {
  expect(await scan('u', '--prefix', 'nl')).toMatchObject({ code: 0, stderr: '', stdout: 'nl\n  0x633a610a62 = v\n' }); // c:a\nb
  const json = await scan('u', '--prefix', 'nl', '--json');
  expect(JSON.parse(json.stdout)).toEqual({ key: 'nl', columns: { '0x633a610a62': 'v' } });
  // As --raw prints the same name, the qualifier of its write cell.
  const raw = await scan('u', '--raw', '--prefix', 'nl');
  expect(raw.stdout.trimEnd().split('\n').slice(1)).toEqual([expect.stringMatching(/^ {2}write:0x633a610a62 @\d+ = 0x[0-9a-f]+$/)]);
});

it.concurrent('scan cuts a long value on a code point boundary, not through an emoji', async () => {
  // 120 UTF-16 units would end on the first half of the emoji's surrogate pair.
  expect(await scan('u', '--prefix', 'emoji')).toMatchObject({ code: 0, stderr: '', stdout: `emoji\n  c:v = ${'a'.repeat(119)}\n` });
});

it.concurrent('get takes a row key in the 0x… form scan prints, so every printed key reads back', async () => {
  expect(await get('u', '0x0001ff', 'c:v')).toMatchObject({ code: 0, stdout: 'binary-key\n' });
  expect(await get('u', '0x30786666', 'c:v')).toMatchObject({ code: 0, stdout: '0x307862656566\n' });
  expect(await get('u', 'emoji', 'c:v')).toMatchObject({ code: 0, stdout: `${'a'.repeat(119)}\u{1f600}tail\n` }); // get does not cut
  // 0xff is the byte ff, not the text key "0xff" (whose printed form is 0x30786666).
  expect(await get('u', '0xff', 'c:v')).toMatchObject({ code: 1, stdout: '' });
  const json = await get('u', '0x0001FF', 'c:v', '--json');
  expect(json.code).toBe(0);
  expect(JSON.parse(json.stdout)).toEqual({ table: 'u', row: '0x0001ff', column: 'c:v', value: 'binary-key' });
  const bad = await get('u', '0xyz', 'c:v');
  expect(bad).toMatchObject({ code: 2, stdout: '' });
  expect(bad.stderr).toBe(
    'percolator: INVALID_ARGUMENT: ROW "0xyz" starts with 0x but is not whole bytes of hex; for the text itself give its hex form, 0x3078797a\n',
  );
});

it.concurrent('scan takes a --prefix in the 0x… form it prints, as get takes a row: a key printed in hex can be scanned from', async () => {
  expect(await scan('u', '--prefix', '0x00')).toEqual({ code: 0, stderr: '', stdout: '0x0001ff\n  c:v = binary-key\n' });
  // The text key 0xff, by its printed form's first bytes (the text "0x").
  expect(await scan('u', '--prefix', '0x3078')).toEqual({ code: 0, stderr: '', stdout: '0x30786666\n  c:v = 0x307862656566\n' });
  expect(JSON.parse((await scan('u', '--prefix', '0x0001FF', '--json')).stdout)).toEqual({
    key: '0x0001ff',
    columns: { 'c:v': 'binary-key' },
  });
  const raw = await scan('u', '--raw', '--prefix', '0x0001');
  expect(raw.stdout.trimEnd().split('\n')[0]).toBe('0x0001ff');
  expect(raw.stdout.trimEnd().split('\n').slice(1)).toEqual([expect.stringMatching(/^ {2}write:c:v @\d+ = 0x[0-9a-f]+$/)]);
  // Text is still text.
  expect((await scan('u', '--prefix', 'em')).stdout).toBe(`emoji\n  c:v = ${'a'.repeat(119)}\n`);
  // An empty prefix, in either form, is the whole table, as none is.
  const all = await scan('u');
  expect(await scan('u', '--prefix', '')).toEqual(all);
  expect((await scan('u', '--raw', '--prefix', '0x')).stdout.split('\n').filter((l) => !l.startsWith(' '))).toEqual(
    (await scan('u', '--raw')).stdout.split('\n').filter((l) => !l.startsWith(' ')),
  );
  expect(await scan('u', '--prefix', '0xzz')).toEqual({
    code: 1,
    stdout: '',
    stderr:
      'percolator: INVALID_ARGUMENT: --prefix "0xzz" starts with 0x but is not whole bytes of hex; for the text itself give its hex form, 0x30787a7a\n',
  });
  const help = await runCli(mainJs, ['scan', '--help']);
  expect(help.stdout.replace(/\s+/g, ' ')).toContain('--prefix <p> only rows whose key starts with this: text (UTF-8), or 0x and hex');
});

it.concurrent('a directory without a store is a typed error for every reading command, and gets no database', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'percolator-cli-empty-'));
  const observers = join(mkdtempSync(join(tmpdir(), 'percolator-cli-observers-')), 'observers.mjs');
  writeFileSync(observers, 'export default (w) => { w.observe("c:v", "n", async () => {}); };\n');
  try {
    // Side by side: none may create anything, which the last check sees (and a store one made would fail the others).
    const runs = [empty, join(empty, 'typo')].flatMap((store) =>
      [
        ['get', 't', 'row', 'c:v', '--store', `file:${store}`],
        ['scan', 't', '--store', `file:${store}`],
        ['wait', '--store', `file:${store}`, '--timeout', '5'],
        // A worker processes what others wrote: over a mistyped directory it polled a new, empty store forever.
        ['worker', '--observers', observers, '--store', `file:${store}`],
      ].map(async (args) => ({ store, args, r: await runCli(mainJs, args) })),
    );
    const [s, ...results] = await Promise.all([runCli(mainJs, ['search', 'x', '--data', empty]), ...runs]);
    for (const { store, args, r } of results) {
      expect(r.code, args.join(' ')).toBe(args[0] === 'get' ? 2 : 1);
      // The worker also says how a store it can work on is made (and reached by its writers).
      const how =
        args[0] === 'worker'
          ? '; a worker processes what others write to a store: create and serve it with percolator serve --data DIR, and give the worker its clientUrl'
          : '';
      expect(r.stderr).toBe(`percolator: NOT_A_STORE: no store at ${store} (nothing was created)${how}\n`);
    }
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(/^percolator: NO_INDEX: no index at /);
    expect(readdirSync(empty)).toEqual([]);
  } finally {
    rmSync(empty, { recursive: true, force: true });
    rmSync(dirname(observers), { recursive: true, force: true });
  }
});

it.concurrent('serve does not start a store among files that are not one: NOT_A_STORE, exit 1, the files as they were', async () => {
  const project = mkdtempSync(join(tmpdir(), 'percolator-cli-foreign-'));
  try {
    writeFileSync(join(project, 'package.json'), '{}');
    const r = await runCli(mainJs, ['serve', '--data', project, '--port', '0']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`percolator: NOT_A_STORE: ${project} holds files and no store (package.json); nothing was created\n`);
    expect(readdirSync(project)).toEqual(['package.json']);
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
});

const emulator = emulatorBinary();
it.skipIf(emulator === null).concurrent(
  `scan of a Percolator table on a store with no oracle (Google's emulator) says --raw reads it${emulator === null ? ` (${EMULATOR_MISSING})` : ''}`,
  async () => {
    const emu = await startEmulator(emulator as string);
    try {
      const url = emu.url();
      const store = await openStore(url);
      try {
        await store.createTable('pt', PERCOLATOR_TABLE_SPEC);
      } finally {
        await store.close();
      }
      const committed = await runCli(mainJs, ['scan', 'pt', '--store', url]);
      expect(committed.code).toBe(1);
      expect(committed.stderr).toMatch(/^percolator: INVALID_CONFIG: .*; or scan --raw, which reads the stored cells without an oracle\n$/);
      const raw = await runCli(mainJs, ['scan', 'pt', '--raw', '--store', url]);
      expect({ code: raw.code, stderr: raw.stderr }).toEqual({ code: 0, stderr: '' });
    } finally {
      await emu.stop();
    }
  },
  60_000,
);

it.concurrent('wait that times out says what is pending, then what to do: wait longer, or start a worker', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'percolator-cli-wait-'));
  try {
    const { ObservedColumns } = await import('../src/notify/observed-columns.js');
    const store = await openStore(`file:${dir}`);
    const registry = new ObservedColumns(store);
    await registry.open(0);
    await registry.register('docs', 'doc:in', 'indexer');
    await registry.close();
    const db = await Percolator.open({ store });
    await db.createTable('docs');
    await db.transaction(async (tx) => tx.set('docs', 'r1', 'doc:in', 'v'));
    await db.close();
    await store.close();
    const r = await runCli(mainJs, ['wait', '--store', `file:${dir}`, '--timeout', '0.5']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^percolator: QUIESCENCE_TIMEOUT: not quiescent after 500 ms: 1 notifications pending: docs\/doc:in 1 \(observer indexer\)/,
    );
    expect(r.stderr).toMatch(
      /; 1 when the wait began\. The backlog did not shrink while the wait went on: if no worker runs for these columns, start one \(percolator worker --observers FILE --store URL\); if one does, wait again, or longer \(--timeout S, 0\.5 s now\)\n$/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
