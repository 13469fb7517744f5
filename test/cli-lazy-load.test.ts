/**
 * What a `percolator` command line loads (compiled JS under dist/; `npm test` builds first): the
 * file of the command it names and what that command needs to parse its arguments, not the other
 * commands nor the layers its action uses — loading every command's layers (gRPC, LevelDB, the web
 * index, the benchmarks) made each invocation, help and usage errors included, take ~0.8 s instead
 * of ~0.2 s. And a `memory:` store is opened without the other backends. The program runs with a
 * hook recording every module it imports (support/record-modules.mjs).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Percolator } from '../src/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const mainJs = join(root, 'dist/cli/main.js');
const recorder = pathToFileURL(join(root, 'test/support/record-modules.mjs')).href;
let dir: string;
let runs = 0;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'percolator-cli-lazy-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the command line; its exit code, stderr and the modules it loaded (dist/… and package names). */
function loaded(...args: string[]): { code: number | null; stderr: string; modules: string[] } {
  const file = join(dir, `modules-${runs++}.txt`);
  const r = spawnSync(process.execPath, ['--import', recorder, mainJs, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, RECORD_MODULES: file },
  });
  const urls = new Set(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== ''),
  );
  const modules = [...urls].flatMap((url) => {
    const ours = /\/dist\/(.+)$/.exec(url);
    if (ours !== null && !url.includes('/node_modules/')) return [`dist/${ours[1]}`];
    const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    return pkg === null ? [] : [pkg[1]];
  });
  return { code: r.status, stderr: r.stderr, modules };
}

const commandFilesOf = (modules: string[]) =>
  modules.filter((m) => m.startsWith('dist/cli/commands/') && m !== 'dist/cli/commands/index.js');

/** What no command needs to parse its arguments or to report a usage error. */
const HEAVY = [
  '@grpc/grpc-js',
  '@grpc/proto-loader',
  'classic-level',
  'prom-client',
  'pg',
  're2',
  'dist/txn/percolator.js',
  'dist/store/engine-store.js',
  'dist/server/server.js',
  'dist/apps/webindex/run.js',
];

it('the top-level help loads every command file (the recording sees what the program loads)', () => {
  const r = loaded('--help');
  expect(r.code).toBe(0);
  expect(commandFilesOf(r.modules)).toEqual(
    expect.arrayContaining(['dist/cli/commands/get.js', 'dist/cli/commands/demo.js', 'dist/cli/commands/check-bank.js']),
  );
  expect(commandFilesOf(r.modules).length).toBeGreaterThanOrEqual(20);
});

it.each([
  [['get', '--help'], 0, 'get.js'],
  [['get'], 2, 'get.js'],
  [['scan', 't', '--store', 'memory:', '--limit', '1.5'], 1, 'scan.js'],
  [['set', '--help'], 0, 'set.js'],
  // Its arguments are checked (the library's column check among them) before anything is opened.
  [['set', 't', 'r', 'c:v', '0xzz', '--store', 'memory:'], 1, 'set.js'],
  [['set', 't', 'r', 'no-family', 'v', '--store', 'memory:'], 1, 'set.js'],
  [['delete', 't', 'r'], 1, 'delete.js'],
  // --row with --prefix, and a bad column, are refused before anything is opened.
  [['notify', 't', 'c:v', '--row', 'a', '--prefix', 'b', '--store', 'memory:'], 1, 'notify.js'],
  [['notify', 't', 'no-family', '--store', 'memory:'], 1, 'notify.js'],
  [['wait', '--timeout', 'abc'], 1, 'wait.js'],
  [['search', 'x', '--limit', '0'], 1, 'search.js'],
  [['worker', '--observers', 'x.mjs', '--threads', '1.5'], 1, 'worker.js'],
  [['oracle', '--port', 'x'], 1, 'oracle.js'],
  [['serve', '--port', '99999'], 1, 'serve.js'],
  [['demo', '--docs', '1.5'], 1, 'demo.js'],
  [['check', 'bank', '--seconds', 'x'], 1, 'check-bank.js'],
  [['bench', 'overhead', '--help'], 0, 'bench-overhead.js'],
  [['bench', 'oracle', '--clients', '0'], 1, 'oracle.js'],
  // Their help shows defaults that lived in the pipeline's modules (bench-defaults.ts, apps/webindex/defaults.ts).
  [['bench', 'webindex', '--help'], 0, 'bench-webindex.js'],
  [['bench', 'latency', '--help'], 0, 'bench-latency.js'],
])('%j loads only its own command file and none of the layers its action uses', (args, code, file) => {
  const r = loaded(...args);
  expect(r.code, r.stderr).toBe(code);
  expect(commandFilesOf(r.modules)).toEqual([`dist/cli/commands/${file}`]);
  expect(r.modules.filter((m) => HEAVY.includes(m))).toEqual([]);
});

it('get on a memory: store loads neither LevelDB nor the bigtable:// client', () => {
  const r = loaded('get', '--store', 'memory:', 't', 'r', 'c:v');
  expect(r.stderr).toMatch(/^percolator: TABLE_NOT_FOUND: /); // it opened the store and looked
  expect(r.code).toBe(2);
  expect(r.modules).toContain('dist/store/memory/memory-engine.js');
  expect(commandFilesOf(r.modules)).toEqual(['dist/cli/commands/get.js']);
  expect(
    r.modules.filter((m) => ['classic-level', 'dist/store/embedded/level-engine.js', 'dist/store/bigtable/bigtable-store.js'].includes(m)),
  ).toEqual([]);
});

it('get on a file: store opens the transaction layer without gRPC (the lock service client is a bigtable:// deployment’s)', async () => {
  const data = join(dir, 'store');
  const db = await Percolator.open({ store: `file:${data}` });
  try {
    await db.createTable('t');
  } finally {
    await db.close();
  }
  const r = loaded('get', '--store', `file:${data}`, 't', 'r', 'c:v');
  expect(r.code, r.stderr).toBe(1); // the cell is absent: it opened the table transactionally and read
  expect(r.modules).toContain('dist/txn/percolator.js');
  expect(r.modules).toContain('classic-level');
  expect(r.modules.filter((m) => ['@grpc/grpc-js', '@grpc/proto-loader', 'dist/server/lock-client.js'].includes(m))).toEqual([]);
});

it('serve builds its gRPC services without @grpc/proto-loader (its descriptors of every message took ~0.2 s of each start)', async () => {
  // Its gRPC port taken, so that the start fails at the bind, after the services are built.
  const { createServer } = await import('node:net');
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  try {
    const port = (taken.address() as { port: number }).port;
    const r = loaded('serve', '--store', 'memory:', '--port', String(port), '--http-port', 'off', '--oracle-port', 'off');
    expect(r.stderr).toMatch(/^percolator: LISTEN_FAILED: .*\(gRPC\)/);
    expect(r.modules).toContain('dist/server/protos.js');
    expect(r.modules).toContain('dist/server/batch-protocol.js');
    expect(r.modules).not.toContain('@grpc/proto-loader');
  } finally {
    taken.close();
  }
});
