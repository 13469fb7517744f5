/**
 * A worker without a `log` option tells a store out of reach in one line per event (the code and
 * message), and an observer's own bug with its stack.
 */
import { inspect } from 'node:util';
import { afterEach, expect, it, vi } from 'vitest';
import { openStore } from '../store/open-store.js';
import { unreachableAt } from '../store/unreachable-store.fixture.js';
import { Percolator } from '../txn/percolator.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of closing.splice(0).reverse()) await c();
});

/** What the worker wrote to console.error, each call's arguments formatted as console.error would join them. */
function captureConsoleError(): string[] {
  const calls: string[] = [];
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    calls.push(args.map((a) => (typeof a === 'string' ? a : inspect(a))).join(' '));
  });
  return calls;
}

async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

it('a store out of reach: one line per restarted loop, CODE: message, no stack', async () => {
  const store = await openStore('memory:');
  let down = false;
  const db = await Percolator.open({ store: unreachableAt(store, ['readRow', 'readRows', 'sampleRowKeys'], () => down), leaseMs: 1000 });
  closing.push(
    () => store.close(),
    () => db.close(),
  );
  await db.createTable('docs');
  const worker = db.worker({ threads: 2 });
  worker.observe('doc:content', 'copy', async (tx, row) => {
    tx.set('docs', row, 'doc:copy', (await tx.getString('docs', row, 'doc:content')) ?? '');
  });
  await worker.start();
  const lines = captureConsoleError();
  down = true;
  for (let i = 0; i < 2; i++) await db.transaction(async (tx) => tx.set('docs', `r${i}`, 'doc:content', `v${i}`));
  await until(() => worker.metrics.restarts >= 2, 'two loops restarted');
  down = false;
  await worker.stop();
  const told = lines.filter((l) => l.includes('IO_ERROR'));
  expect(told.length).toBeGreaterThanOrEqual(2);
  for (const l of told) {
    expect(l).toMatch(
      /^percolator worker: (runner|scanner) stopped by an unexpected error; starting it again in \d+ ms: IO_ERROR: store out of reach \(test\)$/,
    );
  }
});

it("an observer's own bug keeps its stack", async () => {
  const db = await Percolator.open({ store: 'memory:', leaseMs: 1000 });
  closing.push(() => db.close());
  await db.createTable('docs');
  const worker = db.worker({ threads: 1, maxFailures: 1 });
  worker.observe('doc:content', 'buggy', async () => {
    (undefined as unknown as { x: () => void }).x();
  });
  const lines = captureConsoleError();
  await worker.start();
  await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'v'));
  await until(() => worker.metrics.parked >= 1, 'the cell parked');
  await worker.stop();
  expect(lines.some((l) => l.includes('TypeError') && l.includes('worker-log.test.ts'))).toBe(true);
});
