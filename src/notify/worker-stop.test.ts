/**
 * Stopping a worker whose observer never settles (Worker.stop's grace period, found in session 52:
 * stop() and Percolator.close() waited forever for such a run). The run is abandoned after the
 * grace period: it never commits, its notification stays for another worker or the next start,
 * and observers get a signal when the stop begins so that they can end early.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Percolator } from '../txn/percolator.js';
import { TxnError } from '../txn/errors.js';
import type { Transaction } from '../txn/transaction.js';
import type { ObserverContext } from './observer.js';

let db: Percolator;
beforeEach(async () => {
  db = await Percolator.open({ store: 'memory:', leaseMs: 1000 });
  await db.createTable('docs');
});
afterEach(async () => {
  await db.close({ graceMs: 0 });
});

const str = (v: Uint8Array | null) => (v === null ? null : Buffer.from(v).toString());

/** A promise plus its resolver, for waiting on conditions the observers signal. */
function signal<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A log that resolves `ended` with the error of the first abandoned run to end. */
function abandonLog(): { log: (m: string, e?: unknown) => void; ended: Promise<unknown>; messages: string[] } {
  const messages: string[] = [];
  const ended = signal<unknown>();
  return {
    messages,
    ended: ended.promise,
    log: (m, e) => {
      messages.push(m);
      if (m.startsWith('a run abandoned by stop() ended')) ended.resolve(e);
    },
  };
}

/**
 * An observer that buffers a write, then waits for `release` (never, unless the test says so):
 * resumed, it returns normally, so the runtime would write its ack and commit — unless abandoned.
 */
function stuckObserver(started: { resolve: (startTs: number) => void }, release: Promise<void>) {
  return async (tx: Transaction, row: Uint8Array) => {
    tx.set('docs', row, 'doc:out', 'stuck');
    started.resolve(tx.startTs);
    await release;
  };
}

describe('stop() with an observer that never settles', () => {
  for (const commitProtocol of ['auto', 'two-phase'] as const) {
    it(`resolves after the grace period; the run never commits, and another worker runs the change exactly once (${commitProtocol} commits)`, async () => {
      const on =
        commitProtocol === 'auto' ? db : await Percolator.open({ store: db.store, oracle: db.oracle, leaseMs: 1000, commitProtocol });
      try {
        const started = signal<number>();
        const release = signal();
        const { log, ended, messages } = abandonLog();
        const stuck = on.worker({ threads: 2, scanners: 1, log });
        stuck.observe('doc:in', 'copy', stuckObserver(started, release.promise));
        await stuck.start();
        await on.transaction(async (tx) => tx.set('docs', 'a', 'doc:in', 'v1'));
        const stuckTs = await started.promise;
        expect(await on.oracle.getWatermark()).toBeLessThanOrEqual(stuckTs); // the run holds GC back

        const t0 = performance.now();
        const result = await stuck.stop({ graceMs: 100 });
        const tookMs = performance.now() - t0;
        expect(result).toEqual({ abandoned: 1 });
        expect(tookMs).toBeGreaterThanOrEqual(90); // it did wait for the run
        expect(tookMs).toBeLessThan(5_000);
        expect(stuck.metrics.abandoned).toBe(1);
        expect(stuck.busy).toBe(0);
        expect(messages.some((m) => m.startsWith('stop: 1 row(s) still running after 100 ms abandoned'))).toBe(true);
        expect(await on.pendingNotifications()).toBe(1);
        expect(await on.oracle.getWatermark()).toBeGreaterThan(stuckTs); // no more

        let runs = 0;
        const second = on.worker({ threads: 2, scanners: 1 });
        second.observe('doc:in', 'copy', async (tx, row) => {
          runs++;
          tx.set('docs', row, 'doc:out', `second saw ${(await tx.getString('docs', row, 'doc:in')) ?? ''}`);
        });
        await second.start();
        await on.waitForQuiescence({ timeoutMs: 10_000 });
        expect(runs).toBe(1);
        expect(second.metrics.commits).toBe(1);
        expect(str(await on.get('docs', 'a', 'doc:out'))).toBe('second saw v1');

        // The abandoned observer resumes and returns normally: its write and ack are refused.
        release.resolve();
        const error = await ended;
        expect(error).toMatchObject({ code: 'OBSERVER_ABANDONED', observer: 'copy', table: 'docs', column: 'doc:in' });
        const { row, ...evidence } = (error as { details: Record<string, unknown> }).details;
        expect([evidence, Buffer.from(row as Uint8Array).toString()]).toEqual([{ observer: 'copy', table: 'docs', column: 'doc:in' }, 'a']);
        expect(str(await on.get('docs', 'a', 'doc:out'))).toBe('second saw v1');
        expect(stuck.metrics.commits).toBe(0);
        expect(stuck.metrics.failures).toBe(0);

        // A later change runs once more, on the second worker only: the first one's runner is gone.
        await on.transaction(async (tx) => tx.set('docs', 'a', 'doc:in', 'v2'));
        await on.waitForQuiescence({ timeoutMs: 10_000 });
        expect(runs).toBe(2);
        expect(str(await on.get('docs', 'a', 'doc:out'))).toBe('second saw v2');
        await second.stop();
      } finally {
        if (on !== db) await on.close({ graceMs: 0 });
      }
    });
  }

  it('the next start runs the abandoned change exactly once; the old run, released later, changes nothing', async () => {
    const started = signal<number>();
    const release = signal();
    const { log, ended } = abandonLog();
    let calls = 0;
    const aborted: boolean[] = [];
    const worker = db.worker({ threads: 1, scanners: 1, log, stopGraceMs: 50 });
    worker.observe('doc:in', 'copy', async (tx, row, _column, table, context) => {
      aborted.push(context.signal.aborted);
      if (++calls === 1) return stuckObserver(started, release.promise)(tx, row);
      tx.set(table, row, 'doc:out', `run ${calls}`);
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:in', 'v'));
    await started.promise;
    expect(await worker.stop()).toEqual({ abandoned: 1 }); // the worker's stopGraceMs

    await worker.start();
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(calls).toBe(2);
    expect(aborted).toEqual([false, false]); // a new start, a new signal
    expect(str(await db.get('docs', 'a', 'doc:out'))).toBe('run 2');
    expect(worker.busy).toBe(0);

    release.resolve();
    expect(await ended).toMatchObject({ code: 'OBSERVER_ABANDONED' });
    expect(str(await db.get('docs', 'a', 'doc:out'))).toBe('run 2');
    expect(worker.running).toBe(true);
    expect(worker.busy).toBe(0);
    expect(worker.metrics.commits).toBe(1);
    expect(await worker.stop()).toEqual({ abandoned: 0 });
  });

  it('an observer that never returns does not keep Percolator.close() from closing, and never commits', async () => {
    const other = await Percolator.open({ store: db.store, oracle: db.oracle, leaseMs: 1000 });
    const started = signal<number>();
    const release = signal();
    const { log, ended } = abandonLog();
    const worker = other.worker({ threads: 1, scanners: 1, log, stopGraceMs: 100 });
    worker.observe('doc:in', 'copy', stuckObserver(started, release.promise));
    await worker.start();
    await other.transaction(async (tx) => tx.set('docs', 'a', 'doc:in', 'v'));
    await started.promise;
    await other.close(); // the worker's stopGraceMs
    release.resolve();
    const error = await ended;
    expect(str(await db.get('docs', 'a', 'doc:out'))).toBe(null); // not 'stuck'
    expect(error).toMatchObject({ code: 'OBSERVER_ABANDONED' });
    // Its notification stayed: a worker of another instance runs it, once.
    let runs = 0;
    const next = db.worker({ threads: 1, scanners: 1 });
    next.observe('doc:in', 'copy', async (tx, row) => {
      runs++;
      tx.set('docs', row, 'doc:out', 'next');
    });
    await next.start();
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(runs).toBe(1);
    expect(str(await db.get('docs', 'a', 'doc:out'))).toBe('next');
    await next.stop();
  });

  it("close({ graceMs }) overrides the workers' stopGraceMs", async () => {
    const other = await Percolator.open({ store: db.store, oracle: db.oracle, leaseMs: 1000 });
    const started = signal<number>();
    const worker = other.worker({ threads: 1, scanners: 1, log: () => undefined }); // default grace: 10 s
    worker.observe('doc:in', 'copy', stuckObserver(started, new Promise<void>(() => undefined)));
    await worker.start();
    await other.transaction(async (tx) => tx.set('docs', 'a', 'doc:in', 'v'));
    await started.promise;
    const t0 = performance.now();
    await other.close({ graceMs: 50 });
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(worker.metrics.abandoned).toBe(1);
  });
});

describe("observers' stop signal", () => {
  it('fires when stop() begins; an observer that ends on it is not a failure, and its notification stays', async () => {
    const started = signal<ObserverContext>();
    const worker = db.worker({ threads: 1, scanners: 1 });
    worker.observe('doc:in', 'patient', async (tx, row, column, table, context) => {
      tx.set(table, row, 'doc:out', 'partial');
      started.resolve(context);
      await new Promise<void>((resolve) => context.signal.addEventListener('abort', () => resolve()));
      context.signal.throwIfAborted();
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:in', 'v'));
    const context = await started.promise;
    expect(context.signal.aborted).toBe(false);
    // Within the default grace of 10 s, long before it: the observer ended on the signal.
    const t0 = performance.now();
    expect(await worker.stop()).toEqual({ abandoned: 0 });
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(context.signal.aborted).toBe(true);
    expect(context.signal.reason).toMatchObject({ code: 'WORKER_STOPPING' });
    expect(worker.metrics.failures).toBe(0);
    expect(worker.metrics.abandoned).toBe(0);
    expect(str(await db.get('docs', 'a', 'doc:out'))).toBe(null);
    expect(await db.pendingNotifications()).toBe(1);
  });

  it("an observer whose wait Node's own API ended (an AbortError caused by the signal) is not a failure either", async () => {
    const started = signal();
    const logged: string[] = [];
    const worker = db.worker({ threads: 1, scanners: 1, log: (m) => logged.push(m) });
    worker.observe('doc:in', 'sleepy', async (tx, row, column, table, { signal: stop }) => {
      tx.set(table, row, 'doc:out', 'partial');
      started.resolve();
      await sleep(1_000_000, undefined, { signal: stop }); // rejects with an AbortError, cause: the reason
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:in', 'v'));
    await started.promise;
    expect(await worker.stop()).toEqual({ abandoned: 0 });
    expect(worker.metrics.failures).toBe(0);
    expect(logged).toEqual([]);
    expect(await db.pendingNotifications()).toBe(1);
  });

  it('a signal asked for after the stop began is already aborted; a four-argument observer still fits', async () => {
    const seen: boolean[] = [];
    const fourArgs = async (tx: Transaction, row: Uint8Array, column: string, table: string) => tx.set(table, row, 'doc:out', column);
    const worker = db.worker({ threads: 1, scanners: 1 });
    const gate = signal();
    const started = signal();
    worker.observe('doc:in', 'four', fourArgs);
    worker.observe('doc:in2', 'late', async (_tx, _row, _column, _table, context) => {
      started.resolve();
      await gate.promise;
      seen.push(context.signal.aborted);
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:in', 'v'));
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(str(await db.get('docs', 'a', 'doc:out'))).toBe('doc:in');
    await db.transaction(async (tx) => tx.set('docs', 'b', 'doc:in2', 'v'));
    await started.promise;
    const stopping = worker.stop();
    gate.resolve();
    expect(await stopping).toEqual({ abandoned: 0 });
    expect(seen).toEqual([true]);
  });
});

describe('grace periods are validated', () => {
  it('stopGraceMs, stop({ graceMs }) and close({ graceMs }) take integers of ms from 0 to 2^31 − 1', async () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31]) {
      expect(() => db.worker({ stopGraceMs: bad })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    const worker = db.worker({ threads: 1, scanners: 1, stopGraceMs: 0 });
    worker.observe('doc:in', 'o', async () => undefined);
    await worker.start();
    for (const bad of [-5, 0.5, Number.NaN, 2 ** 31]) {
      await expect(worker.stop({ graceMs: bad })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(db.close({ graceMs: bad })).rejects.toBeInstanceOf(TxnError);
      await expect(db.close({ graceMs: bad })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    // Refused before anything stopped.
    expect(worker.running).toBe(true);
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:in', 'v'));
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(await worker.stop({ graceMs: 2 ** 31 - 1 })).toEqual({ abandoned: 0 });
  });
});

describe('stop() and start() called one after the other', () => {
  it('a log callback that throws changes nothing: stop() still resolves with the runs it abandoned', async () => {
    const started = signal<number>();
    let logged = 0;
    const worker = db.worker({
      threads: 1,
      scanners: 1,
      log: () => {
        logged++;
        throw new Error('a broken logger');
      },
    });
    worker.observe('doc:in', 'copy', stuckObserver(started, new Promise<void>(() => undefined)));
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:in', 'v1'));
    await started.promise;
    await expect(worker.stop({ graceMs: 20 })).resolves.toEqual({ abandoned: 1 });
    expect(logged).toBeGreaterThan(0);
    expect(worker.running).toBe(false);
  });

  it('a stop() called after a start() that waits for an earlier stop stops that start too', async () => {
    const worker = db.worker({ threads: 1, scanners: 1 });
    worker.observe('doc:in', 'o', async () => undefined);
    await worker.start();
    const first = worker.stop();
    const started = worker.start(); // begins once the first stop has ended
    const second = worker.stop(); // the last call: the worker must end stopped
    await Promise.all([first, started, second]);
    expect(worker.running).toBe(false);
    expect(worker.busy).toBe(0);
  });
});
