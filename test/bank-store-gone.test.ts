/**
 * `check bank` against a `percolator serve` that stops in the middle of the check (kill -9) ends
 * within a bounded time with one typed line, STORE_OUT_OF_REACH, and exit 1 — it used to run on
 * past its `--seconds` restarting workers that printed stacks, for minutes (compiled JS under
 * dist/; `npm test` builds first). A worker that fails with a typed error reports its message,
 * not its stack.
 */
import { it } from 'vitest';
import type { WorkerConfig, WorkerMessage } from '../src/check/bank-protocol.js';
import { escapeRegExp, killServeMidCheck, runWorkerToItsEnd } from './support/store-gone.js';

// The two tests run side by side: separate processes, nothing shared.
it.concurrent(
  'check bank ends promptly with STORE_OUT_OF_REACH, one line and exit 1, when its server is killed mid-check',
  async ({ expect }) => {
    // Mid-check: the workers run and transfers were made (the first progress line says how many).
    // 0.5 s of outage, then the workers killed and the rest closed: far below the minute the run had left.
    const run = await killServeMidCheck(['bank', '--seconds', '60', '--workers', '1', '--outage-ms', '500'], {
      progress: /^\d+ s: [1-9]\d* transfers/m,
      boundMs: 8_000,
      serveStore: 'memory',
    });
    expect(run.code, `${run.msAfterKill} ms after the kill; stderr: ${run.stderr}`).toBe(1);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^percolator: STORE_OUT_OF_REACH: check bank: the store ${escapeRegExp(run.clientUrl)} has been out of reach for \\d+\\.\\d s \\(`,
      ),
    );
    // Progress lines and the error: no stack, no "worker failed to start".
    expect(lines.filter((l) => !/^\d+ s: /.test(l))).toHaveLength(1);
    expect(run.stdout).toBe('');
  },
  90_000,
);

it.concurrent('a worker that fails with a typed error reports its message without a stack', async ({ expect }) => {
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
  const { code, messages, stderr } = await runWorkerToItsEnd<WorkerMessage>('bank-worker.js', cfg);
  expect(code).toBe(1);
  const error = messages.find((m) => m.t === 'bank.error');
  expect(error).toMatchObject({ t: 'bank.error', code: 'INVALID_STORE_URL' });
  expect((error as { message: string }).message).not.toMatch(/\n\s+at /);
  expect(stderr).toMatch(/^bank-worker: INVALID_STORE_URL: [^\n]*\n$/);
});
