/**
 * An observer run whose commit meets an abandoned lock resolves it before retrying.
 *
 * Found by test/webindex-crash.test.ts over `percolator serve`: a killed client left a lock on a
 * cell the web index's document processor writes but never reads. Reads resolve the locks they
 * meet, so nothing in the run did: every attempt's commit was refused (KEY_LOCKED), fifty times,
 * then the worker backed off and tried again — the row never progressed until some reader of that
 * cell happened by. `Percolator.transaction` already resolved such locks between attempts; now an
 * observer run does too.
 */
import { expect, it } from 'vitest';
import { openStore } from '../store/open-store.js';
import { frozenWriter } from '../txn/frozen-writer.fixture.js';
import { Percolator } from '../txn/percolator.js';
import { ObserverFailure } from './run-observer.js';
import { isTxnError, type TxnError } from '../txn/errors.js';
import { atomicRowsOf } from '../store/store.js';

const str = (v: Uint8Array | null) => (v === null ? null : Buffer.from(v).toString());

for (const commitProtocol of ['auto', 'two-phase'] as const) {
  it(`an observer writing a cell it never reads, locked by a dead transaction, commits (${commitProtocol} commits)`, async () => {
    const store = await openStore('memory:');
    const db = await Percolator.open({ store, leaseMs: 500, commitProtocol });
    try {
      await db.createTable('t');
      // A client that stops for good after its primary prewrite: a lock on `out c:v`, owner gone.
      const { writer, reached } = await frozenWriter({ store, oracle: db.oracle, point: 'after-primary-prewrite', leaseMs: 500 });
      void writer.transaction(async (tx) => tx.set('t', 'out', 'c:v', 'abandoned'));
      await reached;
      await writer.close();

      const worker = db.worker({ threads: 2 });
      worker.observe('c:src', 'copy-blind', async (tx, row) => {
        tx.set('t', 'out', 'c:v', `from ${Buffer.from(row).toString()}`); // written, never read
      });
      await worker.start();
      try {
        await db.transaction(async (tx) => tx.set('t', 'in', 'c:src', 'x'));
        await db.waitForQuiescence({ timeoutMs: 10_000 });
        expect(str(await db.get('t', 'out', 'c:v'))).toBe('from in');
        expect(worker.metrics.failures).toBe(0);
      } finally {
        await worker.stop();
      }
    } finally {
      await db.close();
    }
  });
}

it("an observer's own tx.commit() is refused (INVALID_ARGUMENT): its writes commit once, with its ack, or not at all", async () => {
  const db = await Percolator.open({ store: 'memory:' });
  try {
    await db.createTable('t');
    const errors: unknown[] = [];
    const worker = db.worker({ threads: 1, scanners: 1, maxFailures: 3, log: (_m, e) => errors.push(e) });
    let runs = 0;
    worker.observe('c:in', 'commits-itself', async (tx, row, _column, table) => {
      runs++;
      tx.set(table, row, 'c:log', `${(await tx.getString(table, row, 'c:log')) ?? ''}run;`);
      await tx.commit();
    });
    let caught: unknown;
    worker.observe('c:in2', 'catches-it', async (tx, row, _column, table) => {
      tx.set(table, row, 'c:log2', `${(await tx.getString(table, row, 'c:log2')) ?? ''}run;`);
      await tx.commit().catch((e: unknown) => (caught = e));
    });
    await worker.start();
    await db.transaction(async (tx) => {
      tx.set('t', 'a', 'c:in', 'x');
      tx.set('t', 'b', 'c:in2', 'x');
    });
    await db.waitForQuiescence({ timeoutMs: 10_000 }); // 'a' parked after its three failed runs
    expect(runs).toBe(3);
    // Until 2026-12-01 each of the three runs committed its write (without the ack): run;run;run;
    expect(str(await db.get('t', 'a', 'c:log'))).toBe(null);
    expect(errors[0]).toMatchObject({ code: 'OBSERVER_FAILED', cause: { code: 'INVALID_ARGUMENT' } });
    // An observer that goes on after the refusal commits once, with its ack.
    expect(caught).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((caught as Error).message).toMatch(/ is committed by the worker, with its ack, not by the code it runs$/);
    expect(str(await db.get('t', 'b', 'c:log2'))).toBe('run;');
    await worker.stop();
  } finally {
    await db.close();
  }
});

it('an observer that threw: ObserverFailure has the evidence in details, as typed errors do, so a JSON log shows it', async () => {
  const db = await Percolator.open({ store: 'memory:' });
  try {
    await db.createTable('t');
    const errors: unknown[] = [];
    const worker = db.worker({ threads: 1, scanners: 1, maxFailures: 1, log: (_m, e) => errors.push(e) });
    worker.observe('c:in', 'parses', async () => {
      throw new TypeError('not a number');
    });
    await worker.start();
    const row = Uint8Array.of(0xff, 0x01); // not printable: the message gives it in hex, as other errors do
    await db.transaction(async (tx) => tx.set('t', row, 'c:in', 'x'));
    await db.waitForQuiescence({ timeoutMs: 10_000 }); // the cell parked after its one failure
    await worker.stop();
    const failure = errors.find((e) => e instanceof ObserverFailure) as ObserverFailure;
    expect(failure).toMatchObject({
      code: 'OBSERVER_FAILED',
      observer: 'parses',
      table: 't',
      column: 'c:in',
      cause: { name: 'TypeError' },
    });
    const { row: bytes, ...evidence } = failure.details;
    expect(evidence).toEqual({ observer: 'parses', table: 't', column: 'c:in', threw: 'TypeError' });
    expect(Buffer.from(bytes as Uint8Array).toString('hex')).toBe('ff01'); // bytes, as TxnError's details.row
    expect(failure.message).toBe('observer parses failed on t/0xff01/c:in: not a number');
    // What a log writing errors as JSON (code, message, details) shows: the evidence, not `{}`.
    const logged = JSON.parse(JSON.stringify({ code: failure.code, details: failure.details })) as { details: Record<string, unknown> };
    expect(logged.details).toMatchObject({ observer: 'parses', table: 't', column: 'c:in', threw: 'TypeError' });
  } finally {
    await db.close();
  }
});

it('an observer that loses every attempt: RETRIES_EXHAUSTED names the row, its attempts, the last conflict and what to change', async () => {
  const db = await Percolator.open({ store: 'memory:' });
  try {
    await db.createTable('t');
    const errors: unknown[] = [];
    const worker = db.worker({ threads: 1, scanners: 1, maxFailures: 1, log: (_m, e) => errors.push(e) });
    // A hot row: another transaction commits to it during every run, so every run's commit loses.
    worker.observe('c:in', 'sums', async (tx, row, _column, table) => {
      const total = Number((await tx.getString(table, 'total', 'c:n')) ?? '0');
      await db.transaction(async (other) => other.set(table, 'total', 'c:n', String(total + 100)));
      tx.set(table, 'total', 'c:n', String(total + 1));
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('t', 'doc', 'c:in', 'x'));
    await db.waitForQuiescence({ timeoutMs: 30_000 }); // the cell parked after its one failure
    await worker.stop();
    const e = errors.find((x) => isTxnError(x, 'RETRIES_EXHAUSTED')) as TxnError;
    expect(e.details).toMatchObject({ observer: 'sums', table: 't', column: 'c:in', attempts: 50 });
    expect(Buffer.from(e.details.row as Uint8Array).toString()).toBe('doc');
    expect(isTxnError(e.cause) && e.cause.retryable).toBe(true);
    expect(e.message).toContain('observer sums conflicted 50 times on t/doc/c:in; its notification stays, and a later pass runs it again');
    expect(e.message).toContain('fewer worker threads');
  } finally {
    await db.close();
  }
}, 40_000);

it('a store shared between the run and its commit still has the notification cleared (by the worker, after a two-phase commit)', async () => {
  const store = await openStore('memory:');
  const db = await Percolator.open({ store });
  const atomic = atomicRowsOf(store);
  if (atomic === null) throw new Error('memory: is an atomic-rows store');
  let unshare: (() => void) | null = null;
  try {
    await db.createTable('t');
    const worker = db.worker({ threads: 1, scanners: 1 });
    worker.observe('c:in', 'copy', async (tx, row) => {
      tx.set('t', row, 'c:out', (await tx.getString('t', row, 'c:in')) ?? '');
      // The store becomes shared (`percolator serve` starting) right after the worker asks for the
      // one-phase clearing, before the commit chooses its protocol: it commits in two phases.
      const ask = tx.clearNotificationsOnCommit.bind(tx);
      tx.clearNotificationsOnCommit = (...args) => {
        const asked = ask(...args);
        unshare ??= atomic.markShared();
        return asked;
      };
    });
    await worker.start();
    try {
      await db.transaction(async (tx) => tx.set('t', 'r', 'c:in', 'x'));
      await until(() => worker.metrics.cleared >= 1);
      expect(unshare).not.toBeNull();
      expect(str(await db.get('t', 'r', 'c:out'))).toBe('x');
      // Counted cleared once the run has ended: a clearing the commit did not write left the cell.
      expect(await db.pendingNotifications()).toBe(0);
    } finally {
      await worker.stop();
    }
  } finally {
    (unshare as (() => void) | null)?.();
    await db.close();
  }
});

async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in 10 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}
