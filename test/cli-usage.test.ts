/**
 * Bad option values on the command line (compiled JS under dist/; `npm test` builds first): each
 * is one line on stderr with the stable code INVALID_ARGUMENT and exit 1, not a stack trace — a
 * blank number too, never taken for 0, and a number not in plain decimal (hex, an exponent) —
 * naming the option as given. So
 * are a bad observers module (INVALID_OBSERVERS_MODULE), a port `serve` or `oracle` cannot bind
 * (LISTEN_FAILED, with nothing left on disk) and an output that cannot be written (IO_ERROR).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { type AddressInfo, type Server, createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ONE_SHOT_STORE, openStore } from '../src/store/open-store.js';
import { type CliResult, runCli, runProcess, spawnCli } from './support/cli-process.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');

// Each test spawns the CLI (~0.2 s of start-up each, ~70 of them) and leaves nothing behind that
// another reads (own files under `dir`): they run concurrently.
const run = (...args: string[]): Promise<CliResult> => runCli(mainJs, args);

it.concurrent.each([
  [['bench', 'webindex', '--docs', '-5'], '--docs must be a positive integer, got -5'],
  [['demo', '--docs', '1.5'], '--docs must be a positive integer, got 1.5'],
  [['demo', '--seed', 'abc'], '--seed must be a non-negative integer, got abc'],
  [['bench', 'webindex', '--light-docs', '-1'], '--light-docs must be a non-negative integer, got -1'],
  [['scan', 't', '--store', 'memory:', '--limit', '1.5'], '--limit must be a positive integer, got 1.5'],
  [['serve', '--auth-token', ''], '--auth-token must not be empty'],
  [['serve', '--data', 'x', '--store', 'memory:'], '--data x and --store memory: name two stores: give one'],
  [['oracle', '--mark', 'm', '--store', 'memory:'], '--mark m and --store memory: name two marks: give one'],
  [['demo', '--keep', '--force', '--data', '/dev/null/x'], '--keep keeps the store and --force removes it: give one'],
  // Checked as the option is parsed, before any store is opened (corpus-options.ts, shared).
  [['demo', '--corpus', 'web', '--data', '/dev/null/x'], '--corpus must be local or synthetic, got "web"'],
  [['load', '--corpus', 'web', '--store', 'nosuch:'], '--corpus must be local or synthetic, got "web"'],
  [['demo', '--serve', '--port', '70000'], '--port must be an integer in [0, 65535], got 70000'],
  [['worker', '--observers', 'x.mjs', '--threads', '1.5'], '--threads must be a positive integer, got 1.5'],
  [['check', 'durability', '--writers', '0.5'], '--writers must be a positive integer, got 0.5'],
  [['serve', '--port', '65535'], '--port 65535 leaves no room for the default --http-port (port + 1): give --http-port'],
  [['bench', 'webindex', '--loaders', '2.5'], '--loaders must be a positive integer, got 2.5'],
  [['bench', 'webindex', '--store', 'bigtable://127.0.0.1:1'], '--store must be file:, memory: or serve, got bigtable://127.0.0.1:1'],
  [['bench', 'overhead', '--seconds', 'abc'], '--seconds must be a positive number of seconds, at most 2147483.647, got abc'],
  [['bench', 'store', '--store', 'file:/somewhere'], '--store must be memory: or file:, got file:/somewhere'],
  [['serve', '--port', '99999'], '--port must be an integer in [0, 65535], got 99999'],
  [['oracle', '--port', '-1'], '--port must be an integer in [0, 65535], got -1'],
  [['check', 'bank', '--accounts', '1.5'], '--accounts must be a positive integer, got 1.5'],
  [['wait', '--store', 'memory:', '--timeout', '0'], '--timeout must be a positive number of seconds, at most 2147483.647, got 0'],
  // Past what a timer takes: named as the option was given, in seconds, not as the library's timeoutMs.
  [['wait', '--store', 'memory:', '--timeout', '1e10'], '--timeout must be a positive number of seconds, at most 2147483.647, got 1e10'],
  [['wait', '--store', 'memory:', '--timeout', ''], '--timeout must be a positive number of seconds, at most 2147483.647, got ""'],
  // Blank numbers (an unset shell variable) are not 0. Each also gives a mistake the command finds
  // later, so that a blank taken for 0 fails at once there rather than running the command.
  [['serve', '--port', '', '--auth-token', ''], '--port must be an integer in [0, 65535], got ""'],
  [['serve', '--port', ' ', '--auth-token', ''], '--port must be an integer in [0, 65535], got " "'],
  [['serve', '--http-port', '', '--auth-token', ''], '--http-port must be an integer in [0, 65535] or "off", got ""'],
  [['serve', '--shutdown-grace-ms', ' ', '--auth-token', ''], '--shutdown-grace-ms must be an integer ≥ 0, got " "'],
  [['oracle', '--port', '', '--store', 'nosuch:'], '--port must be an integer in [0, 65535], got ""'],
  [['demo', '--seed', '', '--corpus', 'nosuch'], '--seed must be a non-negative integer, got ""'],
  [['bench', 'peers', '--warmup', '', '--only', 'nosuch'], '--warmup must be a number >= 0, got ""'],
  [['bench', 'webindex', '--gc-interval-ms', '\t', '--store', 'nosuch:'], '--gc-interval-ms must be a non-negative integer, got "\\t"'],
  [['bench', 'latency', '--seed', '', '--store', 'nosuch:'], '--seed must be a non-negative integer, got ""'],
  [['bench', 'latency', '--seed', 'abc', '--store', 'nosuch:'], '--seed must be a non-negative integer, got abc'],
  [['check', 'durability', '--seconds', ''], '--seconds must be a positive number of seconds, at most 2147483.647, got ""'],
  [['wait', '--store', 'memory:', '--tables', 'a,'], '--tables needs comma-separated table names, not "a,"'],
  // --full-disk squeezes a file: store; the default, a scratch directory, is one.
  [['check', 'bank', '--full-disk', '--store', 'memory:'], 'check bank --full-disk squeezes a file: store (got memory:)'],
  [['check', 'notify', '--full-disk', '--store', 'memory:'], 'check notify --full-disk squeezes a file: store (got memory:)'],
  // Plain decimal only: each of these is a number to Number() — hex, an exponent, a sign, padding, -0,
  // an integer past 2^53 — so the command ran with a value nobody typed (or fails later, as above).
  [['serve', '--port', '0x10', '--auth-token', ''], '--port must be an integer in [0, 65535], got 0x10'],
  [['serve', '--port', ' 5 ', '--auth-token', ''], '--port must be an integer in [0, 65535], got " 5 "'],
  [['oracle', '--port', '+1', '--store', 'nosuch:'], '--port must be an integer in [0, 65535], got +1'],
  [['demo', '--docs', '1e3', '--corpus', 'nosuch'], '--docs must be a positive integer, got 1e3'],
  [['demo', '--docs', '5.0', '--corpus', 'nosuch'], '--docs must be a positive integer, got 5.0'],
  [['demo', '--docs', '99999999999999999999', '--corpus', 'nosuch'], '--docs must be a positive integer, got 99999999999999999999'],
  [['demo', '--seed', '-0', '--corpus', 'nosuch'], '--seed must be a non-negative integer, got -0'],
  [['wait', '--store', 'memory:', '--timeout', '0x10'], '--timeout must be a positive number of seconds, at most 2147483.647, got 0x10'],
  [['wait', '--store', 'memory:', '--timeout', '1e1'], '--timeout must be a positive number of seconds, at most 2147483.647, got 1e1'],
  [
    ['wait', '--store', 'memory:', '--timeout', 'Infinity'],
    '--timeout must be a positive number of seconds, at most 2147483.647, got Infinity',
  ],
  [['serve', '--max-message-bytes', '1e6', '--auth-token', ''], '--max-message-bytes must be an integer ≥ 1024, got 1e6'],
  [['serve', '--shutdown-grace-ms', '0x0', '--auth-token', ''], '--shutdown-grace-ms must be an integer ≥ 0, got 0x0'],
  [['serve', '--row-cache-mib', '-1'], '--row-cache-mib must be an integer of MiB in [0, 1048576], got -1'],
  [['serve', '--block-cache-mib', '4096'], '--block-cache-mib must be an integer of MiB in [0, 4095], got 4096'],
  [['serve', '--block-cache-mib', '1.5'], '--block-cache-mib must be an integer of MiB in [0, 4095], got 1.5'],
  [
    ['serve', '--store', 'memory:', '--block-cache-mib', '8'],
    "--block-cache-mib sizes LevelDB's cache, which only a file: store has (got memory:)",
  ],
  [
    ['worker', '--app', 'webindex', '--store', 'bigtable://127.0.0.1:1/p/i', '--row-cache-mib', '8'],
    "--row-cache-mib sizes an embedded store's cache (file:, memory:); bigtable://127.0.0.1:1/p/i is not one: size the server's",
  ],
  [['bench', 'peers', '--warmup', '0x1', '--only', 'nosuch'], '--warmup must be a number >= 0, got 0x1'],
  [
    ['bench', 'soak', '--row-cache-mib', '4'],
    "--row-cache-mib and --block-cache-mib size the server's caches: give them with --store serve",
  ],
  // A list of numbers reads each the same way; a count takes no fraction.
  [['bench', 'latency', '--rates', '50,0x10', '--docs', '1', '--store', 'memory:'], '--rates must be a positive number, got 0x10'],
  [['bench', 'latency', '--min-samples', '2.5', '--store', 'nosuch:'], '--min-samples must be a positive integer, got 2.5'],
  [['bench', 'webindex', '--window', '1.5', '--store', 'nosuch:'], '--window must be a positive integer, got 1.5'],
  // Ranges only the benchmark knows: checked before it runs, one line as the rest (a stack until 2026-12-02).
  [['bench', 'latency', '--docs', '1'], '--docs must be at least 8, got 1'],
  [['bench', 'peers', '--accounts', '1'], '--accounts must be at least 2, got 1'],
  // Seconds that become a timer: past ~24.8 days Node fires it after 1 ms.
  [['bench', 'clumping', '--seconds', '9999999999'], '--seconds must be a positive number of seconds, at most 2147483.647, got 9999999999'],
])('%j is a typed one-line error', async (args, message) => {
  const r = await run(...args);
  expect(r.code).toBe(1);
  expect(r.stderr).toBe(`percolator: INVALID_ARGUMENT: ${message}\n`);
  expect(r.stdout).toBe('');
});

const dir = mkdtempSync(join(tmpdir(), 'cli-usage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it.concurrent.each([
  ['throws when loaded', 'throw new Error("boom at load");\n', /failed to load: Error: boom at load \(at .*bad0\.mjs:1:7\)$/],
  // Node's SyntaxError from import() does not say where it is (nodejs/node#49441): the line does.
  ['is not JavaScript', 'this is not javascript\n', /failed to load: SyntaxError: Unexpected identifier 'is' \(at .*bad1\.mjs:1:6\)$/],
  [
    'throws in register',
    'export default () => { throw new Error("boom in register"); };\n',
    /registering its observers failed: boom in register \(at .*bad2\.mjs:1:30\)$/,
  ],
])('worker: an observers module that %s is one line, INVALID_OBSERVERS_MODULE', async (_what, source, message) => {
  const file = join(dir, `bad${['throws when loaded', 'is not JavaScript', 'throws in register'].indexOf(_what)}.mjs`);
  writeFileSync(file, source);
  const r = await run('worker', '--observers', file, '--store', 'memory:');
  expect(r.code).toBe(1);
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^percolator: INVALID_OBSERVERS_MODULE: /);
  expect(lines[0]).toMatch(message);
});

it.concurrent('worker: a syntax error in a module the observers module imports is one line naming its file, line and column', async () => {
  writeFileSync(join(dir, 'helper.mjs'), 'export const words = (s) => s.split(/\\s+/);\nexport const broken = () => { return 1 +; };\n');
  const file = join(dir, 'imports-broken.mjs');
  writeFileSync(file, "import { words } from './helper.mjs';\nexport default (w) => {};\n");
  const r = await run('worker', '--observers', file, '--store', 'memory:');
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(
    /^percolator: INVALID_OBSERVERS_MODULE: .*imports-broken\.mjs failed to load: SyntaxError: Unexpected token ';' \(at .*helper\.mjs:2:41\)\n$/,
  );
});

/** Runs `percolator worker` on `file`, sends SIGTERM the moment it says it runs, and returns how it ended. */
async function termAsSoonAsRunning(file: string, ...args: string[]): Promise<{ code: number | null; stderr: string }> {
  const p = spawnCli(mainJs, ['worker', '--observers', file, '--store', 'memory:', ...args]);
  await p.waitForStderr((stderr) => stderr.includes(`running observers of ${file}`), 'it said it runs');
  p.child.kill('SIGTERM');
  return { code: await p.exited, stderr: p.stderr() };
}

it.concurrent('worker: a SIGTERM the moment it says it runs stops it gracefully (exit 0, its stop line)', async () => {
  const file = join(dir, 'nothing.mjs');
  writeFileSync(file, 'export default () => {};\n');
  // Until 2026-12-02 the line came before the signal listeners, which take milliseconds to
  // install: about 6 signals in 10 killed the worker outright. Five in a row, all graceful.
  for (let i = 0; i < 5; i++) {
    const r = await termAsSoonAsRunning(file);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/\npercolator worker: stopped after 0 observer commits /);
  }
});

it.concurrent('worker: runs full GC passes every 10 minutes unless told otherwise, and says so', async () => {
  const file = join(dir, 'nothing-gc.mjs');
  writeFileSync(file, 'export default () => {};\n');
  expect((await termAsSoonAsRunning(file)).stderr).toContain('with 4 threads, full GC passes at most every 600 s\n');
  expect((await termAsSoonAsRunning(file, '--full-gc-interval', '0')).stderr).toContain(', full GC passes off\n');
  expect((await termAsSoonAsRunning(file, '--full-gc-interval', '60')).stderr).toContain('every 60 s\n');
  const bad = await run('worker', '--observers', file, '--store', 'memory:', '--full-gc-interval', '-1');
  expect([bad.code, bad.stderr]).toEqual([1, 'percolator: INVALID_ARGUMENT: --full-gc-interval must be a non-negative integer, got -1\n']);
});

it.concurrent('worker: takes the cache flags on an embedded store (memory:, file:) and runs', async () => {
  const file = join(dir, 'nothing-cache.mjs');
  writeFileSync(file, 'export default () => {};\n');
  const small = await termAsSoonAsRunning(file, '--row-cache-mib', '0');
  expect(small.code, small.stderr).toBe(0);
  const store = `file:${join(dir, 'cache-store')}`;
  const made = await run('set', 't', 'r', 'f:q', 'v', '--store', store, '--create-table');
  expect(made.code, made.stderr).toBe(0);
  // The last --store given wins: the worker opens the file: store with both caches sized.
  const sized = await termAsSoonAsRunning(file, '--store', store, '--row-cache-mib', '4', '--block-cache-mib', '2');
  expect(sized.code, sized.stderr).toBe(0);
  expect(sized.stderr).toMatch(/\npercolator worker: stopped after 0 observer commits /);
});

// Node 22.18+ strips types itself (process.features.typescript): there the module loads and runs.
const stripsTypes = Boolean((process.features as { typescript?: unknown }).typescript);

(stripsTypes ? it.concurrent : it.skip)('worker: an observers module in TypeScript runs as is where Node strips types', async () => {
  const file = join(dir, 'observers-stripped.ts');
  writeFileSync(file, 'export default (w: unknown): void => {};\n');
  const r = await termAsSoonAsRunning(file);
  expect(r.code, r.stderr).toBe(0);
});

(stripsTypes ? it.skip : it.concurrent)('worker: an observers module in TypeScript is one line that says to compile it', async () => {
  const file = join(dir, 'observers.ts');
  writeFileSync(file, 'export default (w: unknown): void => {};\n');
  const r = await run('worker', '--observers', file, '--store', 'memory:');
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(
    /^percolator: INVALID_OBSERVERS_MODULE: .*observers\.ts failed to load: .*: compile it to JavaScript \(tsc\) and give the \.js file\n$/,
  );
});

it.concurrent('worker: an observer name used twice is a typed one-line error', async () => {
  const file = join(dir, 'twice.mjs');
  writeFileSync(file, 'export default (w) => { const f = async () => {}; w.observe("a:b", "n", f); w.observe("a:c", "n", f); };\n');
  const r = await run('worker', '--observers', file, '--store', 'memory:');
  expect(r.code).toBe(1);
  expect(r.stderr).toBe('percolator: INVALID_ARGUMENT: an observer named n is already registered\n');
});

describe('serve and oracle on a port in use', () => {
  let holder: Server;
  let port: number;
  beforeAll(async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    port = (holder.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => holder.close(() => resolve())));

  // Another port of the three would fail too if it happened to be in use: each is off but the one under test.
  it.concurrent.each([
    ['gRPC', (p: number) => ['--port', String(p), '--http-port', 'off', '--oracle-port', 'off']],
    ['oracle', (p: number) => ['--port', '0', '--http-port', 'off', '--oracle-port', String(p)]],
    ['HTTP', (p: number) => ['--port', '0', '--http-port', String(p), '--oracle-port', 'off']],
  ])('fails as one line, LISTEN_FAILED, when its %s port is taken: no log line of grpc-js before it', async (role, ports) => {
    const r = await run('serve', '--store', 'memory:', ...ports(port));
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(new RegExp(`^percolator: LISTEN_FAILED: cannot listen on 127\\.0\\.0\\.1:${port} \\(${role}\\): .*EADDRINUSE`)),
    ]);
  });

  it.concurrent(
    'oracle: fails as serve does, one line LISTEN_FAILED and exit 1, and writes no --mark file, lock or directory',
    async () => {
      const at = mkdtempSync(join(dir, 'oracle-mark-'));
      const r = await run('oracle', '--port', String(port), '--mark', join(at, 'sub', 'oracle.mark'));
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        new RegExp(`^percolator: LISTEN_FAILED: cannot listen on 127\\.0\\.0\\.1:${port} \\(oracle\\): .*EADDRINUSE[^\\n]*\\n$`),
      );
      expect(readdirSync(at)).toEqual([]);
    },
  );

  // gRPC fails before anything is served; the oracle after the store was opened and its mark saved in it.
  it.concurrent.each([
    ['gRPC', (p: number) => ['--port', String(p), '--http-port', 'off', '--oracle-port', 'off']],
    ['oracle', (p: number) => ['--port', '0', '--http-port', 'off', '--oracle-port', String(p)]],
  ])('serve --data NEWDIR whose %s port is taken leaves no store and no directory behind', async (role, ports) => {
    const at = mkdtempSync(join(dir, 'serve-new-'));
    const r = await run('serve', '--data', join(at, 'a', 'store'), ...ports(port));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^percolator: LISTEN_FAILED: cannot listen on 127\\.0\\.0\\.1:${port} \\(${role}\\): `));
    expect(readdirSync(at)).toEqual([]);
  });

  it.concurrent('serve --data on an existing store whose port is taken leaves that store as it was', async () => {
    const data = mkdtempSync(join(dir, 'serve-existing-'));
    const s = await openStore(`file:${data}`);
    await s.createTable('kept', { families: { f: {} } });
    await s.mutateRow('kept', Buffer.from('r'), [
      { setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: -1, value: Buffer.from('v') } },
    ]);
    await s.close();
    const r = await run('serve', '--data', data, '--port', '0', '--http-port', 'off', '--oracle-port', String(port));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^percolator: LISTEN_FAILED: /);
    const again = await openStore(`file:${data}`, ONE_SHOT_STORE);
    try {
      expect(Buffer.from((await again.readRow('kept', Buffer.from('r')))?.cells[0]?.value ?? []).toString()).toBe('v');
    } finally {
      await again.close();
    }
  });

  it.concurrent('oracle --store file:NEWDIR on a port in use leaves no store and no directory behind', async () => {
    const at = mkdtempSync(join(dir, 'oracle-store-'));
    const r = await run('oracle', '--port', String(port), '--store', `file:${join(at, 'store')}`);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^percolator: LISTEN_FAILED: cannot listen on 127\\.0\\.0\\.1:${port} \\(oracle\\): `));
    expect(readdirSync(at)).toEqual([]);
  });
});

it.skipIf(!existsSync('/dev/full')).concurrent('an output that cannot be written (a full disk) is a one-line IO_ERROR', async () => {
  const r = await runProcess('sh', [
    '-c',
    `"${process.execPath}" "${mainJs}" demo --docs 3 --data "${join(dir, 'demo')}" --json > /dev/full`,
  ]);
  expect(r.stderr).toMatch(/^percolator: IO_ERROR: cannot write the output: ENOSPC/);
  expect(r.code).toBe(1);
});

it.concurrent(
  'wait --tables: a table the store does not have is TABLE_NOT_FOUND naming those it has, one that is no Percolator table NOT_A_PERCOLATOR_TABLE; the tables given are waited for',
  async () => {
    const store = join(dir, 'wait-tables');
    // The first on a memory: store, the other making the file: one the rest read (one at a time: each locks it).
    const [none, made] = await Promise.all([
      run('wait', '--store', 'memory:', '--tables', 'nosuch', '--timeout', '5'),
      run('demo', '--docs', '5', '--corpus', 'synthetic', '--data', store, '--keep'),
    ]);
    expect(none).toEqual({
      code: 1,
      stdout: '',
      stderr: `percolator: TABLE_NOT_FOUND: table "nosuch" does not exist; the store holds no table but Percolator's own\n`,
    });
    expect(made.code).toBe(0);
    const s = await openStore(`file:${store}`, ONE_SHOT_STORE);
    try {
      await s.createTable('plain', { families: { f: {} } }); // a store table, not a Percolator one
    } finally {
      await s.close();
    }
    const missing = await run('wait', '--store', `file:${store}`, '--tables', 'docs,nosuch', '--timeout', '5');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /^percolator: TABLE_NOT_FOUND: table "nosuch" does not exist; the store's tables: (\w+, )*docs, (\w+, )*plain(, \w+)*\n$/,
    );
    expect(await run('wait', '--store', `file:${store}`, '--tables', 'plain', '--timeout', '5')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'percolator: NOT_A_PERCOLATOR_TABLE: table plain is not a Percolator table: it lacks the system families lock, write, data, notify\n',
    });
    const r = await run('wait', '--store', `file:${store}`, '--tables', 'docs,pages', '--timeout', '30');
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('quiescent\n');
    expect(r.code).toBe(0);
  },
);

it.concurrent('a number option takes a fraction written in plain decimal where it is seconds', async () => {
  const timeouts = ['0.5', '.5', '2.'];
  const results = await Promise.all(timeouts.map((timeout) => run('wait', '--store', 'memory:', '--timeout', timeout)));
  timeouts.forEach((timeout, i) => expect(results[i], timeout).toEqual({ code: 0, stdout: 'quiescent\n', stderr: '' }));
});

it.concurrent('--version prints the package version', async () => {
  const r = await run('--version');
  expect(r.code).toBe(0);
  expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
});
