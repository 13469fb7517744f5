/**
 * `check bank` against a `percolator serve` that stops in the middle of the check (kill -9) ends
 * within a bounded time with one typed line, STORE_OUT_OF_REACH, and exit 1 — it used to run on
 * past its `--seconds` restarting workers that printed stacks, for minutes (compiled JS under
 * dist/; `npm test` builds first). A worker that fails with a typed error reports its message,
 * not its stack.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { WorkerConfig, WorkerMessage } from '../src/check/bank-protocol.js';
import { spawnCli } from './support/cli-process.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const mainJs = join(root, 'dist/cli/main.js');

it('check bank ends promptly with STORE_OUT_OF_REACH, one line and exit 1, when its server is killed mid-check', async () => {
  const serve = spawnCli(mainJs, ['serve', '--store', 'memory:', '--port', '0', '--http-port', 'off']);
  try {
    const listening = await serve.waitForStdout((out) => out.includes('\n'), 'it listens');
    const { clientUrl } = JSON.parse(listening.split('\n')[0] as string) as { clientUrl: string };
    const check = spawnCli(mainJs, ['check', 'bank', '--store', clientUrl, '--seconds', '60', '--workers', '1', '--outage-ms', '1000']);
    try {
      // Mid-check: the workers run and transfers were made (the first progress line says how many).
      await Promise.race([
        until(
          () => /^\d+ s: [1-9]\d* transfers/m.test(check.stderr()),
          () => `a transfer; stderr: ${check.stderr()}`,
          60_000,
        ),
        check.exited.then((c) => {
          throw new Error(`check bank exited (${c}) before its server was killed: ${check.stderr()}`);
        }),
      ]);
      serve.child.kill('SIGKILL');
      const killedAt = performance.now();
      // 1 s of outage, then the workers killed and the rest closed: far below the minute the run had left.
      let bound: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        check.exited,
        new Promise<'still running'>((resolve) => {
          bound = setTimeout(() => resolve('still running'), 8_000);
        }),
      ]);
      clearTimeout(bound);
      expect(code, `${Math.round(performance.now() - killedAt)} ms after the kill; stderr: ${check.stderr()}`).toBe(1);
      const lines = check.stderr().trimEnd().split('\n');
      expect(lines.at(-1)).toMatch(
        new RegExp(
          `^percolator: STORE_OUT_OF_REACH: check bank: the store ${escape(clientUrl)} has been out of reach for \\d+\\.\\d s \\(`,
        ),
      );
      // Progress lines and the error: no stack, no "worker failed to start".
      expect(lines.filter((l) => !/^\d+ s: /.test(l))).toHaveLength(1);
      expect(check.stdout()).toBe('');
    } finally {
      check.child.kill('SIGKILL');
    }
  } finally {
    serve.child.kill('SIGKILL');
  }
}, 90_000);

it('a worker that fails with a typed error reports its message without a stack', async () => {
  const cfg: WorkerConfig = {
    table: 'bank_check',
    accounts: 2,
    incarnation: 1,
    storeUrl: 'bigtable://',
    oracleHost: '127.0.0.1',
    oraclePort: 1,
    concurrency: 1,
    crash: null,
    leaseMs: 500,
    lockTtlMs: 3000,
    lockWaitMs: 2000,
    tailLength: 16,
    gcIntervalMs: 0,
    maxAmount: 100,
    standby: false,
  };
  const child = fork(join(root, 'dist/check/bank-worker.js'), [JSON.stringify(cfg)], {
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const messages: WorkerMessage[] = [];
  child.on('message', (m: WorkerMessage) => messages.push(m));
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  expect(code).toBe(1);
  const error = messages.find((m) => m.t === 'bank.error');
  expect(error).toMatchObject({ t: 'bank.error', code: 'INVALID_STORE_URL' });
  expect((error as { message: string }).message).not.toMatch(/\n\s+at /);
  expect(stderr).toMatch(/^bank-worker: INVALID_STORE_URL: [^\n]*\n$/);
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Resolves once `cond()` holds; throws with `what()` after `ms`. */
async function until(cond: () => boolean, what: () => string, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
