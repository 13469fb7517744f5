/**
 * Clients of a `percolator serve` whose oracle is not on PORT+2 (`--port 0`, `--oracle-port P`):
 * `bigtable://HOST:PORT?oracle=HOST2:PORT2` names it, for the library and for every CLI command
 * taking --store; without it the unreachable-oracle error says the address was PORT+2, the
 * default, and how to name another — and `percolator worker` says so at its first failed run.
 *
 * The CLI parts need dist/ (`npx tsc -p tsconfig.build.json`; `npm test` builds first).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { PercolatorServer } from '../src/server/server.js';
import { Percolator } from '../src/txn/percolator.js';
import { serveWithNothingOnPortPlus2 } from './support/free-port-plus-2.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');

let server: PercolatorServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'serve-oracle-url-'));
  // Random ports, as `serve --port 0` picks them; the test needs nothing on PORT+2.
  server = await serveWithNothingOnPortPlus2(0);
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const plainUrl = () => `bigtable://127.0.0.1:${server.port}`;
const namedUrl = () => `bigtable://127.0.0.1:${server.port}?oracle=127.0.0.1:${server.oraclePort}`;

it('the library: without ?oracle= the error says the address is PORT+2, the default; with it transactions and observers run', async () => {
  const guessed = await Percolator.open({ store: plainUrl() });
  try {
    const t0 = Date.now();
    const e = await guessed.transaction(async () => undefined).catch((err: unknown) => err);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(e).toMatchObject({
      code: 'ORACLE_UNAVAILABLE',
      details: { port: server.port + 2, addressSource: expect.stringContaining(`PORT+2 of ${plainUrl()}, the default`) },
    });
    expect((e as Error).message).toContain(`the oracle at 127.0.0.1:${server.port + 2} is unreachable (` /* attempts, last error */);
    expect((e as Error).message).toContain(
      `; that address is PORT+2 of ${plainUrl()}, the default; set ?oracle=HOST:PORT if the server's oracle listens elsewhere`,
    );
  } finally {
    await guessed.close();
  }

  // Named: the server's oracle, and its lock service on the gRPC port (named too, here, as it may be).
  const db = await Percolator.open({ store: `${namedUrl()}&lockService=127.0.0.1:${server.port}` });
  try {
    await db.createTable('lib');
    const worker = db.worker({ threads: 1 });
    worker.observe('c:in', 'copy', async (tx, row) => tx.set('lib', row, 'c:out', `seen ${await tx.getString('lib', row, 'c:in')}`), {
      table: 'lib',
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('lib', 'r', 'c:in', 'v'));
    await db.waitForQuiescence({ tables: ['lib'], timeoutMs: 20_000 });
    expect(await db.getString('lib', 'r', 'c:out')).toBe('seen v');
    expect(server.oracle?.stats().timestamps).toBeGreaterThan(0); // the server's oracle, no other
    await worker.stop();
  } finally {
    await db.close();
  }
}, 60_000);

interface Cli {
  readonly child: ChildProcess;
  readonly stderr: () => string;
  readonly stdout: () => string;
  readonly exited: Promise<number | null>;
}

function cli(args: string[]): Cli {
  const child = spawn(process.execPath, [mainJs, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return {
    child,
    stderr: () => stderr,
    stdout: () => stdout,
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
}

it('the CLI: `worker --store bigtable://…?oracle=…` runs observers against serve --port 0; without ?oracle= it says why at its first failure', async () => {
  const observers = join(dir, 'observers.mjs');
  writeFileSync(
    observers,
    `export default function (worker) {
  worker.observe('c:in', 'copy', async (tx, row) => tx.set('cli', row, 'c:out', 'seen ' + (await tx.getString('cli', row, 'c:in'))), { table: 'cli' });
}
`,
  );
  const admin = await Percolator.open({ store: namedUrl() });
  try {
    await admin.createTable('cli');
  } finally {
    await admin.close();
  }

  // Oracle not named: the worker's first failed run is told at once, with where the address came from.
  const guessing = cli(['worker', '--observers', observers, '--store', plainUrl(), '--threads', '1']);
  await vi.waitFor(() => expect(guessing.stderr()).toContain('running observers'), { timeout: 40_000, interval: 50 });
  const writer = await Percolator.open({ store: namedUrl() }); // opened after the worker registered its column
  try {
    await writer.transaction(async (tx) => tx.set('cli', 'r', 'c:in', 'hello'));
  } finally {
    await writer.close();
  }
  await vi.waitFor(() => expect(guessing.stderr()).toContain('observer run failed (ORACLE_UNAVAILABLE) on cli/r/c:in'), {
    timeout: 30_000,
    interval: 100,
  });
  expect(guessing.stderr()).toContain(`PORT+2 of ${plainUrl()}, the default; set ?oracle=HOST:PORT`);
  guessing.child.kill('SIGTERM');
  expect(await guessing.exited).toBe(0);
  expect(guessing.stderr()).toMatch(/stopped after 0 observer commits \(0 skipped, [1-9]\d* failures/);

  // Named: the same row is processed, and `wait` with the same URL sees the system quiescent. Both
  // start at once (two process start-ups overlap): the notification the failed runs left is
  // pending until the worker's run clears it, so `wait` cannot end before the worker has run.
  const worker = cli(['worker', '--observers', observers, '--store', namedUrl(), '--threads', '1']);
  const wait = cli(['wait', '--store', namedUrl(), '--timeout', '30']);
  await vi.waitFor(() => expect(worker.stderr()).toContain('running observers'), { timeout: 40_000, interval: 50 });
  expect(await wait.exited, wait.stderr()).toBe(0);
  expect(wait.stdout()).toBe('quiescent\n');
  const reader = await Percolator.open({ store: namedUrl() });
  try {
    expect(await reader.getString('cli', 'r', 'c:out')).toBe('seen hello');
  } finally {
    await reader.close();
  }
  worker.child.kill('SIGTERM');
  expect(await worker.exited).toBe(0);
  expect(worker.stderr()).toMatch(
    /stopped after 1 observer commits \(0 skipped, 0 failures, 0 parked, 0 loops restarted, \d+ conflicts retried\)\n/,
  );
  expect(worker.stderr()).not.toContain('ORACLE_UNAVAILABLE');
}, 180_000);
