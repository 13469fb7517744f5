/**
 * `percolator demo` as a newcomer runs it (compiled JS under dist/; `npm test` builds first): it
 * never deletes what is not a store — a `--data` directory holding other files, or a store some
 * process has open, is a one-line typed error with everything left in place — nor a store holding
 * tables that are not the web index's (NOT_A_WEB_INDEX, unless --force; and `search`'s hint over
 * such a store names a new directory), nor creates one among other files (`--keep`); a status port
 * in use fails it before it touches --data, and its default is none of `serve`'s; its closing hint
 * and search's are commands that run as printed where they were printed (`npx percolator …` in a
 * checkout, `node …/main.js …` elsewhere), or with --serve the search page; search reaches a
 * directory a `percolator serve` holds with --store, as the lock's error says;
 * and it finds its corpus when run from a directory that has no node_modules of its own.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { Percolator } from '../src/txn/percolator.js';
import { type CliResult, runCli, runProcess, spawnCli, spawnServe } from './support/cli-process.js';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const mainJs = join(repoRoot, 'dist/cli/main.js');
// The tests run concurrently (each is a few CLI processes in directories of its own): the
// directories go when all are done, not after each test, which would remove those of the others.
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'cli-demo-'));
  dirs.push(d);
  return d;
}

function run(cwd: string, ...args: string[]): Promise<CliResult> {
  return runCli(mainJs, args, { cwd, timeoutMs: 60_000 });
}

function demo(cwd: string, ...args: string[]): Promise<CliResult> {
  return run(cwd, 'demo', '--json', ...args);
}

/** A store holding a user's own Percolator table `accounts` (alice = 100), and what `tables` adds. */
async function userStore(dir: string, ...tables: string[]): Promise<void> {
  const db = await Percolator.open({ store: `file:${dir}` });
  try {
    for (const t of ['accounts', ...tables]) await db.createTable(t);
    await db.transaction(async (tx) => tx.set('accounts', 'alice', 'bal:v', '100'));
  } finally {
    await db.close();
  }
}

async function storeTables(dir: string): Promise<string[]> {
  const db = await Percolator.open({ store: `file:${dir}` });
  try {
    return (await db.store.listTables()).filter((t) => !t.startsWith('_percolator_'));
  } finally {
    await db.close();
  }
}

it.concurrent('refuses a --data directory holding files the store did not write, and leaves them', async () => {
  const data = tempDir();
  writeFileSync(join(data, 'notes.txt'), 'mine');
  const r = await demo(tempDir(), '--corpus', 'synthetic', '--docs', '20', '--data', data);
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/^percolator: NOT_A_STORE: .*notes\.txt.*nothing was removed/);
  expect(r.stdout).toBe('');
  expect(readdirSync(data)).toEqual(['notes.txt']);
  expect(readFileSync(join(data, 'notes.txt'), 'utf8')).toBe('mine');
});

it.concurrent('with --keep, opens a store or creates one where nothing is, never among other files', async () => {
  const data = tempDir();
  writeFileSync(join(data, 'notes.txt'), 'mine');
  const r = await demo(tempDir(), '--corpus', 'synthetic', '--docs', '20', '--keep', '--data', data);
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/^percolator: NOT_A_STORE: .*notes\.txt.*nothing was created/);
  expect(readdirSync(data)).toEqual(['notes.txt']);
});

it.concurrent('starts clean over a store it made before, and finds a corpus from a directory without node_modules', async () => {
  const cwd = tempDir();
  const data = join(tempDir(), 'data');
  const first = await demo(cwd, '--docs', '30', '--data', data);
  expect(first.stderr).toBe('');
  expect(first.code).toBe(0);
  const a = JSON.parse(first.stdout) as { documents: number; corpus: string };
  expect(a).toMatchObject({ corpus: 'local', documents: 30 });
  // Again over the same directory: wiped, not added to.
  const second = await demo(cwd, '--docs', '20', '--data', data);
  expect(second.code).toBe(0);
  expect((JSON.parse(second.stdout) as { documents: number }).documents).toBe(20);
});

/** The closing hint's command line, with a query in place of `<query>`, run by a shell in `cwd`. */
function runHint(cwd: string, hint: string, query: string): Promise<CliResult> {
  const command = hint.replace('"<query>"', query);
  return runProcess('/bin/sh', ['-c', command], { cwd, timeoutMs: 60_000 });
}

function closingHint(stdout: string): string {
  const m = /^Done in [0-9.]+ s\. Search it again: (.*)$/.exec(stdout.trimEnd().split('\n').at(-1) ?? '');
  expect(m).not.toBeNull();
  return (m as RegExpExecArray)[1] as string;
}

it.concurrent('ends with a hint that runs as printed where it was printed: node <main.js> outside the package', async () => {
  const data = join(tempDir(), "my data's dir"); // the shell would split it, and end at the quote
  const cwd = tempDir();
  const r = await run(cwd, 'demo', '--corpus', 'synthetic', '--docs', '20', '--data', data);
  expect(r.code).toBe(0);
  const hint = closingHint(r.stdout);
  // `npx percolator` here would fetch the npm registry's unrelated package of that name.
  expect(hint).toBe(`node ${mainJs} search "<query>" --data '${data.replace("'", "'\\''")}'`);
  const searched = await runHint(cwd, hint, 'zz-no-such-term --json');
  expect(searched.stderr).toBe('');
  expect(searched.code).toBe(0);
  expect(JSON.parse(searched.stdout)).toMatchObject({ total: 0 });
});

it.concurrent('ends with npx percolator inside the package (a checkout), which runs there', async () => {
  const data = join(tempDir(), 'data');
  const r = await run(repoRoot, 'demo', '--corpus', 'synthetic', '--docs', '20', '--data', data);
  expect(r.code).toBe(0);
  const hint = closingHint(r.stdout);
  expect(hint).toBe(`npx percolator search "<query>" --data ${data}`);
  // npx installs the checkout into its cache the first time, which runs `prepare`: that must not
  // rebuild dist/ in place under whatever runs from it (a server, the other test files' children).
  const built = statSync(mainJs).mtimeMs;
  // npx runs the bin file itself, and links it executable only the first time (into its cache):
  // the build must make it so, or a fresh build where an earlier checkout stood is not runnable.
  expect(statSync(mainJs).mode & 0o111).toBe(0o111);
  const searched = await runHint(join(repoRoot, 'src'), `${hint.replace('npx ', 'npx --no -- ')}`, 'zz-no-such-term --json');
  expect(searched.stderr).toBe('');
  expect(searched.code).toBe(0);
  expect(JSON.parse(searched.stdout)).toMatchObject({ total: 0 });
  expect(statSync(mainJs).mtimeMs).toBe(built);
});

it.concurrent("refuses to remove a store holding the user's own tables (NOT_A_WEB_INDEX), and removes it with --force", async () => {
  const data = tempDir();
  await userStore(data, 'pages'); // one of the web index's tables beside the user's does not make it one
  const r = await demo(tempDir(), '--corpus', 'synthetic', '--docs', '20', '--data', data);
  expect(r.code).toBe(1);
  expect(r.stdout).toBe('');
  expect(r.stderr).toBe(
    `percolator: NOT_A_WEB_INDEX: ${data} holds tables that are not the web index's (accounts, pages; a web index has all of pages, docs, anchors, clusters, ckeys, index, exports); the demo starts clean and would remove them — nothing was removed: give another --data directory, or --force to remove them\n`,
  );
  const db = await Percolator.open({ store: `file:${data}` });
  expect(await db.getString('accounts', 'alice', 'bal:v')).toBe('100');
  await db.close();

  const forced = await demo(tempDir(), '--corpus', 'synthetic', '--docs', '20', '--data', data, '--force');
  expect(forced.stderr).toBe('');
  expect(forced.code).toBe(0);
  expect(await storeTables(data)).not.toContain('accounts');
});

it.concurrent("refuses a store whose tables have some of the web index's names and not all: the README example's docs table", async () => {
  // README › Using it: a `docs` table in file:./data. Taken name by name for the web index's, it was removed.
  const data = tempDir();
  const db = await Percolator.open({ store: `file:${data}` });
  await db.createTable('docs');
  await db.transaction(async (tx) => tx.set('docs', 'https://example.com/', 'raw:content', 'hello incremental world'));
  await db.close();

  const searched = await run(tempDir(), 'search', 'hello', '--data', data);
  expect(searched.stderr).toMatch(/^percolator: NO_INDEX: .* holds no web index but other tables \(docs\): build one in a new directory/);
  const r = await demo(tempDir(), '--corpus', 'synthetic', '--docs', '5', '--data', data);
  expect(r.code).toBe(1);
  expect(r.stderr).toBe(
    `percolator: NOT_A_WEB_INDEX: ${data} holds tables that are not the web index's (docs; a web index has all of pages, docs, anchors, clusters, ckeys, index, exports); the demo starts clean and would remove them — nothing was removed: give another --data directory, or --force to remove them\n`,
  );
  const after = await Percolator.open({ store: `file:${data}` });
  expect(await after.getString('docs', 'https://example.com/', 'raw:content')).toBe('hello incremental world');
  await after.close();
  // A web index the demo made is still started over: test 'starts clean over a store it made before'.
});

it.concurrent("search's NO_INDEX hint names a new directory over a store of other tables, the same one over an empty store", async () => {
  const mine = tempDir();
  await userStore(mine);
  const r = await run(tempDir(), 'search', 'foo', '--data', mine);
  expect(r.code).toBe(1);
  expect(r.stderr).toBe(
    `percolator: NO_INDEX: ${mine} holds no web index but other tables (accounts): build one in a new directory, \`node ${mainJs} demo --data <new directory>\` (the demo starts clean, so it refuses this one)\n`,
  );
  // Following that hint over the same directory would be refused rather than remove the table.
  expect((await demo(tempDir(), '--corpus', 'synthetic', '--docs', '5', '--data', mine)).stderr).toMatch(/^percolator: NOT_A_WEB_INDEX: /);

  const empty = tempDir();
  await (await Percolator.open({ store: `file:${empty}` })).close(); // a store with Percolator's own tables only
  const e = await run(tempDir(), 'search', 'foo', '--data', empty);
  expect(e.stderr).toBe(`percolator: NO_INDEX: ${empty} holds no web index: run \`node ${mainJs} demo --data ${empty}\` first\n`);
  // And that hint works: the demo accepts a store of Percolator's own tables.
  expect((await demo(tempDir(), '--corpus', 'synthetic', '--docs', '5', '--data', empty)).code).toBe(0);
});

it.concurrent("the status page's default port is none of serve's defaults", async () => {
  // Help is wrapped to the terminal's width: read it as one line.
  const help = async (command: string) => (await run(tempDir(), command, '--help')).stdout.replace(/\s+/g, ' ');
  const [demoHelp, serveHelp] = await Promise.all([help('demo'), help('serve')]);
  const demoPort = Number(/--port <port> .*?\(default: (\d+)\)/.exec(demoHelp)?.[1]);
  const grpc = Number(/--port <port> .*?\(default: (\d+)\)/.exec(serveHelp)?.[1]);
  expect(serveHelp).toMatch(/--http-port <port> [^(]*\(default: port \+ 1\)/);
  expect(serveHelp).toMatch(/--oracle-port <port> [^(]*\(default: port \+ 2\)/);
  expect(grpc).toBe(8086);
  expect(demoPort).toBeGreaterThan(0);
  expect([grpc, grpc + 1, grpc + 2]).not.toContain(demoPort);
});

it.concurrent('--serve on a port in use is one line, LISTEN_FAILED, before the store is removed or created', async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const port = (holder.address() as AddressInfo).port;
  try {
    const missing = join(tempDir(), 'data');
    const existing = tempDir();
    await userStore(existing);
    for (const data of [missing, existing]) {
      const r = await demo(tempDir(), '--corpus', 'synthetic', '--docs', '5', '--serve', '--port', String(port), '--data', data, '--force');
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        new RegExp(`^percolator: LISTEN_FAILED: cannot listen on 127\\.0\\.0\\.1:${port} \\(HTTP\\): .*EADDRINUSE[^\\n]*\\n$`),
      );
    }
    expect(existsSync(missing)).toBe(false);
    expect(await storeTables(existing)).toEqual(['accounts']);
  } finally {
    await new Promise<void>((resolve) => holder.close(() => resolve()));
  }
});

it.concurrent(
  'with --serve, the closing hint is the search page (a search command would find the store locked)',
  async () => {
    const data = join(tempDir(), 'data');
    const demo = spawnCli(mainJs, ['demo', '--corpus', 'synthetic', '--docs', '20', '--serve', '--port', '0', '--data', data], {
      cwd: tempDir(),
    });
    try {
      const stdout = await demo.waitForStdout((out) => out.includes('(Ctrl-C to stop)'), 'serving');
      const last = stdout.split('\n').find((l) => l.includes('(Ctrl-C to stop)')) ?? '';
      const m =
        /^Done in [0-9.]+ s\. Search it at (http:\/\/127\.0\.0\.1:\d+\/)search {2}· {2}status page: (\S+) {2}\(Ctrl-C to stop\)$/.exec(
          last,
        );
      expect(m, last).not.toBeNull();
      expect(m?.[2]).toBe(m?.[1]);
      expect(stdout).not.toMatch(/percolator search/);
      const page = await fetch(`${m?.[1]}api/search?q=topic0`);
      expect(page.status).toBe(200);
      // The search page offers the example queries the summary printed, so a newcomer has one to click.
      const examples = [...stdout.matchAll(/^ {2}"(.+)" — /gm)].map((x) => x[1] as string);
      expect(examples.length).toBeGreaterThan(0);
      const html = await (await fetch(`${m?.[1]}search`)).text();
      for (const q of examples) expect(html).toContain(`href="search?q=${encodeURIComponent(q)}"`);
    } finally {
      demo.child.kill('SIGTERM');
    }
    expect(await demo.exited).toBe(0);
  },
  60_000,
);

it.concurrent(
  "while percolator serve holds a demo's directory, search reaches the index with --store, as the lock's hint says",
  async () => {
    const data = tempDir();
    expect((await demo(tempDir(), '--corpus', 'synthetic', '--docs', '60', '--data', data)).code).toBe(0);
    const query = ['topic1', '--json', '--limit', '50'];
    const direct = await run(tempDir(), 'search', ...query, '--data', data);
    expect(direct.code).toBe(0);
    const hits = (r: CliResult) => (JSON.parse(r.stdout) as { hits: { url: string }[] }).hits.map((h) => h.url);
    expect(hits(direct).length).toBeGreaterThan(0);

    const serve = spawnServe(mainJs, ['--data', data, '--http-port', '0']);
    try {
      const url = await serve.clientUrl;
      const locked = await run(tempDir(), 'search', ...query, '--data', data);
      expect(locked.code).toBe(1);
      expect(locked.stderr).toMatch(/STORE_LOCKED: .*reach the store through the server, --store bigtable:/);
      const served = await run(tempDir(), 'search', ...query, '--store', url);
      expect(served.stderr).toBe('');
      expect(hits(served)).toEqual(hits(direct));
      const both = await run(tempDir(), 'search', ...query, '--store', url, '--data', data);
      expect(both.code).toBe(1);
      expect(both.stderr).toContain("option '--store <url>' cannot be used with option '--data <dir>'");
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
    const none = await run(tempDir(), 'search', 'topic1', '--store', 'memory:');
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(
      /^percolator: NO_INDEX: the store at memory: holds no web index: build one with `.*demo --data DIR`, then serve/,
    );
  },
);
