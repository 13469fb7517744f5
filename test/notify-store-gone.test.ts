/**
 * `check notify` against a `percolator serve` that stops in the middle of the check (kill -9)
 * ends within a bounded time with one typed line, STORE_OUT_OF_REACH, and exit 1 — it used to
 * wait out its quiescence deadline and the oracle's retries, ending more than a minute later with
 * ORACLE_UNAVAILABLE (compiled JS under dist/; `npm test` builds first). A worker that fails with
 * a typed error reports its message, not its stack.
 */
import { it } from 'vitest';
import type { NotifyWorkerConfig, NotifyWorkerMessage } from '../src/check/notify-protocol.js';
import { escapeRegExp, killServeMidCheck, runWorkerToItsEnd } from './support/store-gone.js';

// The two tests run side by side: separate processes, nothing shared.
it.concurrent(
  'check notify ends promptly with STORE_OUT_OF_REACH, one line and exit 1, when its server is killed mid-check',
  async ({ expect }) => {
    // Mid-check: the worker runs and changes were written (the first progress line says how many).
    // 0.5 s of outage, then the workers killed and the rest closed: far below the minute the run had left.
    const run = await killServeMidCheck(['notify', '--seconds', '60', '--workers', '1', '--outage-ms', '500'], {
      progress: /^\d+ s: [1-9]\d* changes/m,
      boundMs: 8_000,
      serveStore: 'data',
    });
    expect(run.code, `${run.msAfterKill} ms after the kill; stderr: ${run.stderr}`).toBe(1);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^percolator: STORE_OUT_OF_REACH: check notify: the store ${escapeRegExp(run.clientUrl)} has been out of reach for \\d+\\.\\d s \\(`,
      ),
    );
    // Progress lines (the writers may have stopped on the outage first) and the error: no stack.
    expect(lines.filter((l) => !/^(\d+ s: |writers stopped after \d+ changes)/.test(l))).toHaveLength(1);
    expect(run.stdout).toBe('');
  },
  90_000,
);

it.concurrent('a notify worker that fails with a typed error reports its message without a stack', async ({ expect }) => {
  const cfg: NotifyWorkerConfig = {
    incarnation: 1,
    storeUrl: 'bigtable://',
    oracleHost: '127.0.0.1',
    oraclePort: 1,
    threads: 1,
    scanners: 1,
    leaseMs: 1000,
    lockTtlMs: 3000,
    crash: null,
    observerDelayMs: 0,
    fullDisk: false,
  };
  const { code, messages, stderr } = await runWorkerToItsEnd<NotifyWorkerMessage>('notify-worker.js', cfg);
  expect(code).toBe(1);
  const error = messages.find((m) => m.t === 'notify.error');
  expect(error).toMatchObject({ t: 'notify.error', code: 'INVALID_STORE_URL' });
  expect((error as { message: string }).message).not.toMatch(/\n\s+at /);
  expect(stderr).toMatch(/^notify-worker: INVALID_STORE_URL: [^\n]*\n$/);
});
