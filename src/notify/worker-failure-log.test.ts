/**
 * A worker tells failed observer runs as they happen — the first of each kind at once, then at
 * most once a minute per kind with a count, and what is left untold when it stops — not only the
 * cells it parks. (A `percolator worker` whose oracle was out of reach said nothing until SIGTERM.)
 */
import { createServer } from 'node:net';
import { afterEach, expect, it, vi } from 'vitest';
import { OracleClient } from '../oracle/client.js';
import { openStore } from '../store/open-store.js';
import { Percolator } from '../txn/percolator.js';
import { FAILURE_LOG_INTERVAL_MS } from './worker.js';

interface Line {
  readonly message: string;
  readonly error: unknown;
}

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of closing.splice(0).reverse()) await c();
});

/** The told failures of a kind: 1 for the first line, N for each "N more" line. */
function told(lines: readonly Line[]): number {
  return lines.reduce((n, l) => n + (/^(\d+) more /.exec(l.message) !== null ? Number(/^(\d+)/.exec(l.message)?.[1]) : 1), 0);
}

it('tells the first failure of each kind at once, then at most once a minute per kind with a count; stop tells the rest', async () => {
  const db = await Percolator.open({ store: 'memory:', leaseMs: 1000 });
  closing.push(() => db.close());
  await db.createTable('docs');
  const logs: Line[] = [];
  const worker = db.worker({ threads: 2, maxFailures: 1_000_000, log: (message, error) => logs.push({ message, error }) });
  const thrown = { BOOM: 0, TypeError: 0 };
  worker.observe(
    'doc:in',
    'boom',
    async (_tx, row) => {
      if (Buffer.from(row).toString() === 't') {
        thrown.TypeError++;
        throw new TypeError('not a number');
      }
      thrown.BOOM++;
      throw Object.assign(new Error('boom'), { code: 'BOOM' });
    },
    { table: 'docs' },
  );
  // The worker's clock, moved on by hand below (Date.now is all it reads for the interval).
  const realNow = Date.now.bind(Date);
  let skewMs = 0;
  vi.spyOn(Date, 'now').mockImplementation(() => realNow() + skewMs);
  await worker.start();
  await db.transaction(async (tx) => {
    for (const r of ['a', 'b', 't']) tx.set('docs', r, 'doc:in', '1');
  });
  const boom = () => logs.filter((l) => l.message.includes('(observer boom threw BOOM)'));
  const typeErrors = () => logs.filter((l) => l.message.includes('(observer boom threw TypeError)'));
  await vi.waitFor(() => expect(thrown.BOOM).toBeGreaterThanOrEqual(6), { timeout: 10_000, interval: 10 });
  // One line per kind so far, told at once, naming the cell, with the observer's error.
  expect(boom()).toHaveLength(1);
  expect(boom()[0]?.message).toMatch(/^observer run failed \(observer boom threw BOOM\) on docs\/[ab]\/doc:in; .*at most once a minute/);
  expect(boom()[0]?.error).toMatchObject({ code: 'OBSERVER_FAILED', cause: { code: 'BOOM' } });
  await vi.waitFor(() => expect(typeErrors()).toHaveLength(1), { timeout: 10_000, interval: 10 });
  expect(typeErrors()[0]?.message).toContain('on docs/t/doc:in');

  // A minute later the next failure of a kind tells how many there were meanwhile.
  skewMs += FAILURE_LOG_INTERVAL_MS + 1_000;
  await vi.waitFor(() => expect(boom()).toHaveLength(2), { timeout: 10_000, interval: 10 });
  expect(boom()[1]?.message).toMatch(
    /^\d+ more observer run\(s\) failed \(observer boom threw BOOM\) in the last 6\d s; the latest on docs\/[ab]\/doc:in$/,
  );
  expect(told(boom().slice(1))).toBeGreaterThanOrEqual(5);
  const before = thrown.BOOM;
  await vi.waitFor(() => expect(thrown.BOOM).toBeGreaterThan(before + 2), { timeout: 10_000, interval: 10 });
  expect(boom()).toHaveLength(2); // within the minute: counted, not told

  await worker.stop();
  // Every failure told exactly once, counted in the lines: none lost, none told twice.
  expect(told(boom())).toBe(thrown.BOOM);
  expect(told(typeErrors())).toBe(thrown.TypeError);
  expect(worker.metrics.failures).toBe(thrown.BOOM + thrown.TypeError);
  expect(worker.metrics.parked).toBe(0);
}, 30_000);

it('a worker whose oracle is out of reach says so at its first failed run, long before anything is parked', async () => {
  const deadPort = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });
  const store = await openStore('memory:');
  closing.push(() => store.close());
  const oracle = new OracleClient({ port: deadPort, timeoutMs: 200, backoffMaxMs: 50, addressSource: 'named by the test' });
  closing.push(() => oracle.close());
  const db = await Percolator.open({ store, oracle, leaseMs: 1000 });
  closing.push(() => db.close());
  const logs: Line[] = [];
  const worker = db.worker({ threads: 1, maxFailures: 1_000_000, log: (message, error) => logs.push({ message, error }) });
  worker.observe('doc:in', 'copy', async (tx, row) => tx.set('docs', row, 'doc:out', '1'), { table: 'docs' });
  await worker.start();
  // Written through a process-local oracle on the same store, after the column was registered.
  const writer = await Percolator.open({ store, leaseMs: 1000 });
  closing.push(() => writer.close());
  await writer.createTable('docs');
  await writer.transaction(async (tx) => tx.set('docs', 'r', 'doc:in', 'v'));
  await vi.waitFor(() => expect(logs.some((l) => l.message.includes('(ORACLE_UNAVAILABLE)'))).toBe(true), {
    timeout: 10_000,
    interval: 20,
  });
  const line = logs.find((l) => l.message.includes('(ORACLE_UNAVAILABLE)'));
  expect(line?.message).toMatch(/^observer run failed \(ORACLE_UNAVAILABLE\) on docs\/r\/doc:in/);
  expect(line?.error).toMatchObject({ code: 'ORACLE_UNAVAILABLE', message: expect.stringContaining('that address is named by the test') });
  expect(worker.metrics.parked).toBe(0);
  await worker.stop();
}, 30_000);
