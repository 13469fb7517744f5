import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { openStore } from '../store/open-store.js';
import { unreachableAt } from '../store/unreachable-store.fixture.js';
import { Percolator } from '../txn/percolator.js';
import { TxnError } from '../txn/errors.js';
import type { Transaction } from '../txn/transaction.js';
import { InProcessLockService, type LockService } from './lock-service.js';
import { BACKLOG_PAUSE_MS } from './scanner.js';

let db: Percolator;
const others: Percolator[] = [];
beforeEach(async () => {
  db = await Percolator.open({ store: 'memory:', leaseMs: 1000 });
  await db.createTable('docs');
});
afterEach(async () => {
  for (const o of others.splice(0)) await o.close();
  await db.close();
});

const str = (v: Uint8Array | null) => (v === null ? null : Buffer.from(v).toString());

async function read(row: string, column: string, on: Percolator = db): Promise<string | null> {
  const s = await on.snapshot();
  try {
    return str(await s.get('docs', row, column));
  } finally {
    s.release();
  }
}

/** A promise plus its resolver, for waiting on conditions the observers signal. */
function signal<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('observers', () => {
  it('run when an observed column changes, and their writes commit with the ack', async () => {
    const worker = db.worker({ threads: 2 });
    worker.observe('doc:content', 'length', async (tx, row) => {
      const v = await tx.getString('docs', row, 'doc:content');
      tx.set('docs', row, 'doc:length', String(v?.length ?? 0));
    });
    await worker.start();
    await db.transaction(async (tx) => {
      tx.set('docs', 'a', 'doc:content', 'hello');
      tx.set('docs', 'b', 'doc:content', 'hi');
    });
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(await read('a', 'doc:length')).toBe('5');
    expect(await read('b', 'doc:length')).toBe('2');
    expect(worker.metrics.commits).toBe(2);
    expect(await db.pendingNotifications()).toBe(0);
    await worker.stop();
  });

  // docs/transactions.md promises it: a derived value is taken back when its source is deleted.
  it.each(['auto', 'two-phase'] as const)('run when an observed column is deleted, and read null (%s commits)', async (commitProtocol) => {
    const own = await Percolator.open({ store: 'memory:', commitProtocol });
    others.push(own);
    await own.createTable('docs');
    const worker = own.worker({ threads: 2 });
    worker.observe('doc:content', 'length', async (tx, row) => {
      const v = await tx.getString('docs', row, 'doc:content');
      if (v === null) tx.delete('docs', row, 'doc:length');
      else tx.set('docs', row, 'doc:length', String(v.length));
    });
    await worker.start();
    await own.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'hello'));
    await own.waitForQuiescence({ timeoutMs: 10_000 });
    expect(await read('a', 'doc:length', own)).toBe('5');
    await own.transaction(async (tx) => tx.delete('docs', 'a', 'doc:content'));
    await own.waitForQuiescence({ timeoutMs: 10_000 });
    expect(await read('a', 'doc:length', own)).toBeNull();
    expect(worker.metrics.commits).toBe(2);
    await worker.stop();
  });

  it('quiescence waits for every pending notification; its timeout reports how many are pending', async () => {
    const worker = db.worker({ threads: 2 });
    const go = signal();
    worker.observe('doc:content', 'length', async (tx, row) => {
      await go.promise;
      const v = await tx.getString('docs', row, 'doc:content');
      tx.set('docs', row, 'doc:length', String(v?.length ?? 0));
    });
    await worker.start();
    await db.transaction(async (tx) => {
      for (const r of ['a', 'b', 'c']) tx.set('docs', r, 'doc:content', r.repeat(3));
    });
    // Observers held back: not quiescent. The poll stops at the first pending notification, the
    // error counts them all.
    const err = await db.waitForQuiescence({ timeoutMs: 30 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TxnError);
    expect((err as TxnError).code).toBe('QUIESCENCE_TIMEOUT');
    expect((err as TxnError).details.pending).toBe(3);
    expect(await db.pendingNotifications()).toBe(3);
    go.resolve();
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    for (const r of ['a', 'b', 'c']) expect(await read(r, 'doc:length')).toBe('3');
    expect(await db.pendingNotifications()).toBe(0);
    await worker.stop();
  });

  it('several observers of one column each run once per change, with their own acks', async () => {
    const runs: string[] = [];
    const worker = db.worker();
    worker.observe('doc:content', 'first', async () => {
      runs.push('first');
    });
    worker.observe('doc:content', 'second', async () => {
      runs.push('second');
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'x'));
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(runs.sort()).toEqual(['first', 'second']);
    await worker.stop();
  });

  it('collapses several changes before a run into one run that sees the latest value', async () => {
    const seen: string[] = [];
    const worker = db.worker();
    worker.observe('doc:content', 'collect', async (tx, row) => {
      seen.push((await tx.getString('docs', row, 'doc:content')) ?? '');
    });
    await worker.start();
    await worker.stop(); // registered, not running: changes accumulate
    for (let i = 1; i <= 5; i++) await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', `v${i}`));
    await worker.start();
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(seen).toEqual(['v5']);
    await worker.stop();
  });

  it('processes again a change that arrives while its observer runs', async () => {
    const seen: string[] = [];
    const firstRunStarted = signal();
    const releaseFirstRun = signal();
    const worker = db.worker();
    worker.observe('doc:content', 'slow', async (tx, row) => {
      const v = (await tx.getString('docs', row, 'doc:content')) ?? '';
      seen.push(v);
      if (v === 'one') {
        firstRunStarted.resolve();
        await releaseFirstRun.promise;
      }
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'one'));
    await firstRunStarted.promise;
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'two'));
    releaseFirstRun.resolve();
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(seen).toEqual(['one', 'two']);
    await worker.stop();
  });

  it('a run whose observer writes nothing commits nothing, clears its notification, and later changes run again', async () => {
    const seen: string[] = [];
    const worker = db.worker();
    worker.observe('doc:content', 'reader', async (tx, row) => {
      seen.push((await tx.getString('docs', row, 'doc:content')) ?? '');
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'one'));
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(seen).toEqual(['one']);
    expect(worker.metrics.runs).toBe(1);
    expect(worker.metrics.commits).toBe(0);
    expect(await db.pendingNotifications()).toBe(0);
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'two'));
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(seen).toEqual(['one', 'two']);
    expect(worker.metrics.commits).toBe(0);
    await worker.stop();
  });

  it("a one-phase commit of a column's only observer clears the notification in the same write; with two observers the worker clears it", async () => {
    const store = await openStore('memory:');
    const mine = await Percolator.open({ store, leaseMs: 1000 });
    await mine.createTable('docs');
    // Row writes outside transactions (the worker's separate clearing) on the observed table.
    let clearingWrites = 0;
    const mutateRow = store.mutateRow.bind(store);
    store.mutateRow = (table, key, mutations, options) => {
      if (table === 'docs') clearingWrites++;
      return mutateRow(table, key, mutations, options);
    };
    const worker = mine.worker();
    worker.observe('doc:content', 'length', async (tx, row) => {
      tx.set('docs', row, 'doc:length', String((await tx.getString('docs', row, 'doc:content'))?.length ?? 0));
    });
    worker.observe('doc:title', 'upper', async (tx, row) => {
      tx.set('docs', row, 'doc:upper', ((await tx.getString('docs', row, 'doc:title')) ?? '').toUpperCase());
    });
    worker.observe('doc:title', 'len', async (tx, row) => {
      tx.set('docs', row, 'doc:titleLength', String((await tx.getString('docs', row, 'doc:title'))?.length ?? 0));
    });
    await worker.start();
    try {
      await mine.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'hello'));
      await mine.waitForQuiescence({ timeoutMs: 10_000 });
      expect(await read('a', 'doc:length', mine)).toBe('5');
      expect(await mine.pendingNotifications()).toBe(0);
      expect(clearingWrites).toBe(0);
      // Two observers of one column: the notification stays until both ran, then the worker clears it.
      await mine.transaction(async (tx) => tx.set('docs', 'b', 'doc:title', 'hi'));
      await mine.waitForQuiescence({ timeoutMs: 10_000 });
      expect(await read('b', 'doc:upper', mine)).toBe('HI');
      expect(await read('b', 'doc:titleLength', mine)).toBe('2');
      expect(await mine.pendingNotifications()).toBe(0);
      expect(clearingWrites).toBe(1);
    } finally {
      await worker.stop();
      await mine.close();
      await store.close();
    }
  });

  it('hands rows its own observers notified straight to a runner (local dispatch), including the row that is running', async () => {
    const order: string[] = [];
    const worker = db.worker({ threads: 2 });
    // content(a) → derived(a) (the same row, notified while it runs) → derived2(b) (another row).
    worker.observe('doc:content', 'first', async (tx, row) => {
      order.push(`first ${Buffer.from(row).toString()}`);
      tx.set('docs', row, 'doc:derived', 'x');
    });
    worker.observe('doc:derived', 'second', async (tx, row) => {
      order.push(`second ${Buffer.from(row).toString()}`);
      tx.set('docs', 'b', 'doc:derived2', 'y');
    });
    worker.observe('doc:derived2', 'third', async (_tx, row) => {
      order.push(`third ${Buffer.from(row).toString()}`);
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'one'));
    worker.hint('docs', 'a');
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(order).toEqual(['first a', 'second a', 'third b']);
    expect(worker.metrics.hinted).toBeGreaterThanOrEqual(2);
    expect(await db.pendingNotifications()).toBe(0);
    await worker.stop();
  });

  it("a plain transaction's notified rows go straight to the worker, and an observer's to the process's other workers", async () => {
    // Scanners are refused every row: whatever runs was handed over by the commit that notified it.
    const inner = new InProcessLockService();
    const hintsOnly: LockService = {
      tryLock: (key, owner, ttlMs) => (owner.endsWith('/hint') ? inner.tryLock(key, owner, ttlMs) : Promise.resolve(false)),
      unlock: (key, owner) => inner.unlock(key, owner),
      close: () => inner.close(),
    };
    const p = await Percolator.open({ store: 'memory:', leaseMs: 1000, lockService: hintsOnly });
    others.push(p);
    await p.createTable('docs');
    const a = p.worker({ threads: 2 });
    const b = p.worker({ threads: 2 });
    const seen: string[] = [];
    // Another row: this one is still held (by a's hint) when a's commit hands 'r-d' over.
    a.observe('doc:content', 'derive', async (tx, row) => {
      tx.set('docs', `${Buffer.from(row).toString()}-d`, 'doc:derived', 'x');
    });
    b.observe('doc:derived', 'see', async (_tx, row) => {
      seen.push(Buffer.from(row).toString());
    });
    await a.start();
    await b.start();
    await p.transaction(async (tx) => tx.set('docs', 'r', 'doc:content', 'one'));
    await p.waitForQuiescence({ timeoutMs: 10_000 });
    expect(seen).toEqual(['r-d']);
    expect(a.metrics.hinted).toBe(1);
    expect(b.metrics.hinted).toBe(1);
    await a.stop();
    await b.stop();
  });

  it('a hint for a row with nothing to do, or for a table nobody observes, is harmless', async () => {
    await db.createTable('other');
    const runs: string[] = [];
    const worker = db.worker();
    worker.observe(
      'doc:content',
      'count',
      async (_tx, row) => {
        runs.push(Buffer.from(row).toString());
      },
      { table: 'docs' },
    );
    await worker.start();
    worker.hint('docs', 'nothing-here');
    worker.hint('other', 'x');
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'one'));
    worker.hint('docs', 'a');
    worker.hint('docs', 'a');
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(runs).toEqual(['a']);
    await worker.stop();
  });

  it('while it holds as many queued rows as runners, its scanners pass only every BACKLOG_PAUSE_MS', async () => {
    const started = signal();
    const release = signal();
    const worker = db.worker({ threads: 1 });
    worker.observe('doc:content', 'slow', async (_tx, row) => {
      if (Buffer.from(row).toString() !== 'a') return;
      started.resolve();
      await release.promise;
    });
    await worker.start();
    for (const row of ['a', 'b', 'c']) {
      await db.transaction(async (tx) => tx.set('docs', row, 'doc:content', 'x'));
      worker.hint('docs', row);
    }
    await started.promise;
    // 'a' runs, 'b' and 'c' wait queued (their advisory locks held): a pass meets them and jumps.
    // A hint is queued once its advisory lock is granted (a promise): let all three be. (A scanner
    // may have taken a row before its hint did; then it waits in the scanned queue, held too.)
    for (let i = 0; i < 100 && worker.metrics.hinted < 3; i++) await new Promise((r) => setImmediate(r));
    const before = worker.metrics.scanner.jumps;
    await new Promise((r) => setTimeout(r, 2.5 * BACKLOG_PAUSE_MS));
    const jumps = worker.metrics.scanner.jumps - before;
    release.resolve();
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    await worker.stop();
    // Two scanners, each at most one pass begun before the backlog and two within 2.5 pauses;
    // jumps backing off alone (1, 2, 4 … 50 ms) would make ~14 each.
    expect(jumps).toBeLessThanOrEqual(6);
    expect(worker.metrics.runs).toBe(3);
  });

  it('an observer that finds its snapshot stale (retryNow) is retried at once, counted apart from conflicts', async () => {
    let attempts = 0;
    const worker = db.worker();
    worker.observe('doc:content', 'stale-once', async (tx, row) => {
      if (++attempts <= 60) throw new TxnError('WRITE_CONFLICT', 'stale', { retryNow: true });
      tx.set('docs', row, 'doc:done', 'yes');
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'x'));
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    // 60 stale retries: more than the 50 attempts a real conflict gets, and no failure.
    expect(await read('a', 'doc:done')).toBe('yes');
    expect(worker.metrics.staleRetries).toBe(60);
    expect(worker.metrics.conflicts).toBe(0);
    expect(worker.metrics.failures).toBe(0);
    await worker.stop();
  });

  it('two workers racing on one notification: exactly one observer commit', async () => {
    // Separate instances with separate advisory lock services, so both really run the observer.
    const second = await Percolator.open({ store: db.store, oracle: db.oracle, leaseMs: 1000 });
    others.push(second);
    let inFlight = 0;
    const bothRunning = signal();
    const observer = async (tx: Transaction, row: Uint8Array) => {
      if (++inFlight === 2) bothRunning.resolve();
      await Promise.race([bothRunning.promise, new Promise((r) => setTimeout(r, 2000))]);
      const n = Number((await tx.getString('docs', row, 'doc:commits')) ?? '0');
      tx.set('docs', row, 'doc:commits', String(n + 1));
    };
    const w1 = db.worker().observe('doc:content', 'count', observer);
    const w2 = second.worker().observe('doc:content', 'count', observer);
    await Promise.all([w1.start(), w2.start()]);
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'x'));
    await bothRunning.promise;
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(await read('a', 'doc:commits')).toBe('1');
    expect(w1.metrics.commits + w2.metrics.commits).toBe(1);
    await Promise.all([w1.stop(), w2.stop()]);
  });

  it('weak notifications run observers of notify-only columns without any data write', async () => {
    const pinged: string[] = [];
    const worker = db.worker();
    worker.observe('doc:ping', 'pong', async (tx, row) => {
      pinged.push(Buffer.from(row).toString());
      tx.set('docs', row, 'doc:pong', 'yes');
    });
    await worker.start();
    await db.transaction(async (tx) => tx.notify('docs', 'r1', 'doc:ping'));
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(pinged).toEqual(['r1']);
    expect(await read('r1', 'doc:pong')).toBe('yes');
    expect(await read('r1', 'doc:ping')).toBeNull();
    await db.transaction(async (tx) => tx.notify('docs', 'r1', 'doc:ping'));
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(pinged).toEqual(['r1', 'r1']);
    await worker.stop();
  });

  describe('rows with weak notifications only', () => {
    /** A chain of strong work: step i writes step i+1 (handed to the runner locally) and weakly notifies hubs. */
    function chain(worker: ReturnType<typeof db.worker>, order: string[], next: (i: number, tx: Transaction) => boolean) {
      worker.observe('doc:step', 'step', async (tx, row) => {
        const i = Number(Buffer.from(row).toString().slice(1));
        order.push(`s${i}`);
        if (next(i, tx)) tx.set('docs', `s${i + 1}`, 'doc:step', 'go');
      });
      worker.observe('doc:ping', 'ping', async (tx, row) => {
        order.push(`ping ${Buffer.from(row).toString()}`);
        tx.set('docs', row, 'doc:pong', String(order.length));
      });
    }

    it('wait while other rows are queued, and then run once for all their notifications', async () => {
      const order: string[] = [];
      const worker = db.worker({ threads: 1 });
      chain(worker, order, (i, tx) => {
        tx.notify('docs', 'hub', 'doc:ping');
        return i < 9;
      });
      await worker.start();
      await db.transaction(async (tx) => tx.set('docs', 's0', 'doc:step', 'go'));
      worker.hint('docs', 's0');
      await db.waitForQuiescence({ timeoutMs: 10_000 });
      // Before this worker told weak from strong, the hub ran between the steps, several times.
      expect(order).toEqual([...Array.from({ length: 10 }, (_, i) => `s${i}`), 'ping hub']);
      expect(await db.pendingNotifications()).toBe(0);
      await worker.stop();
    });

    it('wait while another row runs, even with nothing queued, and run once the worker is idle', async () => {
      // Under saturation the queues are empty most of the time (free runners take every hint at
      // once): "nothing queued" alone let weak rows run as soon as they were notified.
      // The worker's clock stands still: on a loaded machine the 500 turns below outlasted
      // IDLE_AFTER_MS, after which the hub rightly runs (the drain) and the test failed.
      vi.useFakeTimers({ toFake: ['Date'] });
      onTestFinished(() => void vi.useRealTimers());
      const order: string[] = [];
      const worker = db.worker({ threads: 4 }); // idle: no other row running (a quarter of 4 runners)
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      worker.observe('doc:slow', 'slow', async () => {
        order.push('slow start');
        await released;
        order.push('slow end');
      });
      chain(worker, order, (_i, tx) => {
        tx.notify('docs', 'hub', 'doc:ping');
        return false;
      });
      const turns = async (n: number, until: () => boolean) => {
        for (let i = 0; i < n && !until(); i++) await new Promise((resolve) => setImmediate(resolve));
      };
      await worker.start();
      await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:slow', 'go'));
      worker.hint('docs', 'a');
      await turns(10_000, () => order.includes('slow start'));
      await db.transaction(async (tx) => tx.set('docs', 's0', 'doc:step', 'go'));
      worker.hint('docs', 's0');
      await turns(10_000, () => order.includes('s0'));
      // Three runners are free and nothing is queued; the hub still waits for the slow row (an
      // absence, so checked over a bounded number of event-loop turns).
      await turns(500, () => order.includes('ping hub'));
      const whileSlow = [...order];
      release();
      expect(whileSlow).toEqual(['slow start', 's0']);
      await db.waitForQuiescence({ timeoutMs: 10_000 });
      expect(order).toEqual(['slow start', 's0', 'slow end', 'ping hub']);
      await worker.stop();
    });

    it('run on every runner once no other work has been taken for a while (the drain after a burst)', async () => {
      // Eight runners, a quarter of them two. The burst's last run notifies eight rows weakly; once
      // the worker has taken nothing else for a while they run together, though the first two
      // never finish until all eight have started (so only a timer can have started the rest).
      const worker = db.worker({ threads: 8 });
      let running = 0;
      const allRunning = signal();
      const release = signal();
      worker.observe('doc:fan', 'fan', async (tx) => {
        for (let i = 0; i < 8; i++) tx.notify('docs', `h${i}`, 'doc:ping');
      });
      worker.observe('doc:ping', 'ping', async () => {
        if (++running === 8) allRunning.resolve();
        await release.promise;
        running--;
      });
      await worker.start();
      await db.transaction(async (tx) => tx.set('docs', 'f', 'doc:fan', 'go'));
      worker.hint('docs', 'f');
      let timer: ReturnType<typeof setTimeout> | undefined;
      const deadline = new Promise<'deadline'>((resolve) => (timer = setTimeout(() => resolve('deadline'), 5_000)));
      const outcome = await Promise.race([allRunning.promise.then(() => 'all running' as const), deadline]);
      clearTimeout(timer);
      release.resolve();
      expect(outcome).toBe('all running');
      await db.waitForQuiescence({ timeoutMs: 10_000 });
      expect(await db.pendingNotifications()).toBe(0);
      await worker.stop();
    });

    it('observers with collapseMs: changes while the event loop is busy wait and collapse into one run', async () => {
      // A chain of strong steps, each keeping the JS thread busy for a while and changing `c`.
      // Without collapsing, c's observer runs beside the chain, about once a step. (The busy
      // threshold at 0: how soon the smoothed utilization crosses the default one is not the point.)
      const worker = db.worker({ threads: 4, busyUtilization: 0 });
      const states: string[] = [];
      worker.observe('doc:step', 'step', async (tx, row) => {
        const i = Number(Buffer.from(row).toString().slice(1));
        const until = performance.now() + 25;
        while (performance.now() < until); // the thread busy: what saturation looks like to the worker
        tx.set('docs', 'c', 'doc:state', String(i));
        if (i < 11) tx.set('docs', `s${i + 1}`, 'doc:step', 'go');
      });
      worker.observe(
        'doc:state',
        'export',
        async (tx) => {
          states.push((await tx.getString('docs', 'c', 'doc:state')) ?? '');
        },
        { table: 'docs', collapseMs: 2_000 },
      );
      await worker.start();
      await db.transaction(async (tx) => tx.set('docs', 's0', 'doc:step', 'go'));
      worker.hint('docs', 's0');
      await db.waitForQuiescence({ timeoutMs: 10_000 });
      // Twelve changes, one run (two if one slipped in between).
      expect(states.length).toBeLessThanOrEqual(2);
      expect(states.at(-1)).toBe('11');
      await worker.stop();
    });

    it('observers with collapseMs: a change runs at once when the event loop is not busy', async () => {
      // A chain of strong steps that wait on I/O (a timer stands for it), so the thread is mostly
      // free; step 0 changes `c`. Its run must come amid the chain, not after it (its 8 s, or the
      // worker idle).
      const worker = db.worker({ threads: 2 });
      const order: string[] = [];
      worker.observe('doc:step', 'step', async (tx, row) => {
        const i = Number(Buffer.from(row).toString().slice(1));
        order.push(`s${i}`);
        await new Promise((resolve) => setTimeout(resolve, 30)); // I/O, not a wait for a condition
        if (i === 0) tx.set('docs', 'c', 'doc:state', 'x');
        if (i < 9) tx.set('docs', `s${i + 1}`, 'doc:step', 'go');
      });
      worker.observe('doc:state', 'export', async () => void order.push('c'), { table: 'docs', collapseMs: 8_000 });
      await worker.start();
      await db.transaction(async (tx) => tx.set('docs', 's0', 'doc:step', 'go'));
      worker.hint('docs', 's0');
      await db.waitForQuiescence({ timeoutMs: 20_000 });
      expect(order.filter((x) => x === 'c')).toHaveLength(1);
      expect(order.indexOf('c')).toBeLessThan(order.indexOf('s9'));
      await worker.stop();
    });

    it('observe() takes collapseMs from 0 to a third of the row lock TTL, and busyUtilization a number from 0', () => {
      const worker = db.worker({ threads: 1, rowLockTtlMs: 3_000 });
      const fn = async () => undefined;
      for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 1_001])
        expect(() => worker.observe('doc:x', `x${bad}`, fn, { collapseMs: bad })).toThrow(
          expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ option: 'collapseMs' }) }),
        );
      expect(() => worker.observe('doc:x', 'ok', fn, { collapseMs: 1_000 })).not.toThrow();
      for (const bad of [-0.1, Number.NaN])
        expect(() => db.worker({ busyUtilization: bad })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
      expect(() => worker.observe('doc:y', 'ok', fn)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', details: { column: 'doc:y', name: 'ok' } }),
      ); // the name again
    });

    it('refuses arguments of the wrong type at the call (a name, a body, options, a table), not at the first run', async () => {
      const worker = db.worker({ threads: 1 });
      const fn = async () => undefined;
      const loose = worker as unknown as { observe(...args: unknown[]): unknown; stop(options: unknown): Promise<unknown> };
      for (const args of [
        ['doc:x', 5, fn],
        ['doc:x', '', fn],
        ['doc:x', 'n1', 'not a function'],
        ['doc:x', 'n2', fn, null],
        ['doc:x', 'n3', fn, { table: 5 }],
      ])
        expect(() => loose.observe(...args)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
      // A bad option is named in details, as a misspelt one is (docs/observers.md › API).
      expect(() => loose.observe('doc:x', 'n4', fn, { table: '' })).toThrow(
        expect.objectContaining({ details: expect.objectContaining({ option: 'table' }) }),
      );
      expect(() => db.worker(null as unknown as object)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
      await expect(loose.stop(null)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(db.waitForQuiescence(null as unknown as object)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      // Nothing was registered by the refused calls: the names are free.
      expect(() => worker.observe('doc:x', 'n1', fn)).not.toThrow();
    });

    it('takes threads, scanners and queueSize as integers from 1 to a bound (a typo of 1e9 fails instead of filling memory)', () => {
      for (const key of ['threads', 'scanners', 'queueSize'] as const)
        for (const bad of [0, 1.5, -1, 1e9, Number.NaN])
          expect(() => db.worker({ [key]: bad })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
      expect(() => db.worker({ threads: 4096, scanners: 1, queueSize: 1 })).not.toThrow();
    });

    it('are moved ahead by a strong notification', async () => {
      const order: string[] = [];
      const worker = db.worker({ threads: 1 });
      chain(worker, order, (i, tx) => {
        if (i === 0) for (const h of ['h1', 'h2']) tx.notify('docs', h, 'doc:ping');
        if (i === 2) tx.set('docs', 'h2', 'doc:ping', 'a write'); // a strong notification for h2
        return i < 6;
      });
      await worker.start();
      await db.transaction(async (tx) => tx.set('docs', 's0', 'doc:step', 'go'));
      worker.hint('docs', 's0');
      await db.waitForQuiescence({ timeoutMs: 10_000 });
      expect(order.filter((x) => x.startsWith('ping'))).toEqual(['ping h2', 'ping h1']);
      expect(order.indexOf('ping h2')).toBeLessThan(order.indexOf('s5')); // ran amid the steps
      expect(order.at(-1)).toBe('ping h1'); // after every step
      await worker.stop();
    });

    it('after weakDelayMs, still do not jump ahead of hints older than them', async () => {
      const order: string[] = [];
      const worker = db.worker({ threads: 1, weakDelayMs: 0 });
      worker.observe('doc:fan', 'fan', async (tx) => {
        order.push('fan');
        for (let i = 0; i < 20; i++) tx.set('docs', `r${i}`, 'doc:work', 'w');
      });
      worker.observe('doc:work', 'work', async (tx, row) => {
        const r = Buffer.from(row).toString();
        order.push(r);
        if (r === 'r0') {
          // The twenty rows were hinted before this run began: notify the hub strictly later.
          const began = Date.now();
          while (Date.now() <= began) await new Promise((resolve) => setImmediate(resolve));
          tx.notify('docs', 'hub', 'doc:ping');
        }
      });
      worker.observe('doc:ping', 'ping', async (_tx, row) => {
        order.push(`ping ${Buffer.from(row).toString()}`);
      });
      await worker.start();
      await db.transaction(async (tx) => tx.set('docs', 'f', 'doc:fan', 'go'));
      worker.hint('docs', 'f');
      await db.waitForQuiescence({ timeoutMs: 10_000 });
      expect(order[0]).toBe('fan');
      expect(order.at(-1)).toBe('ping hub');
      expect(order).toHaveLength(22);
      await worker.stop();
    });

    it('are locked for three times their wait, hinted or scanned; other rows for rowLockTtlMs', async () => {
      // The wait may be far longer than the lock TTL: a waiting row's lock must outlast it, while a
      // strong row's stays short (it bounds how long a crashed process keeps its rows from others).
      const inner = new InProcessLockService();
      const granted = new Map<string, Set<number>>(); // row → TTLs it was locked for (by the hint path or a scanner)
      const recording: LockService = {
        tryLock: async (key, owner, ttlMs) => {
          const ok = await inner.tryLock(key, owner, ttlMs);
          const row = key.slice(key.indexOf('\u0000') + 1);
          if (ok) granted.set(row, (granted.get(row) ?? new Set()).add(ttlMs));
          return ok;
        },
        unlock: (key, owner) => inner.unlock(key, owner),
        close: () => inner.close(),
      };
      const p = await Percolator.open({ store: 'memory:', leaseMs: 1000, lockService: recording });
      others.push(p);
      await p.createTable('docs');
      const pinged: string[] = [];
      const worker = p.worker({ threads: 1, weakDelayMs: 60_000, rowLockTtlMs: 1_000 });
      worker.observe('doc:step', 'step', async (tx) => tx.notify('docs', 'hub', 'doc:ping'));
      worker.observe('doc:ping', 'ping', async (_tx, row) => {
        pinged.push(Buffer.from(row).toString());
      });
      await worker.start();
      await p.transaction(async (tx) => tx.set('docs', 's0', 'doc:step', 'go'));
      worker.hint('docs', 's0'); // strong, handed over locally; its run hints the hub weakly
      await p.transaction(async (tx) => tx.notify('docs', 'far', 'doc:ping')); // weak, found by a scanner
      await p.waitForQuiescence({ timeoutMs: 10_000 });
      expect(pinged.sort()).toEqual(['far', 'hub']); // the worker is idle: neither waited 60 s
      expect([...(granted.get('s0') ?? [])]).toEqual([1_000]);
      expect(granted.get('hub')?.has(180_000)).toBe(true);
      expect(granted.get('far')?.has(180_000)).toBe(true); // scanned (for 1 s), then locked again for the wait
      await worker.stop();
    });

    it('take their turn after weakDelayMs, however much other work keeps coming', async () => {
      const order: string[] = [];
      const worker = db.worker({ threads: 1, weakDelayMs: 50 });
      let hubRan = false;
      chain(worker, order, (i, tx) => {
        if (i === 0) tx.notify('docs', 'hub', 'doc:ping');
        return !hubRan; // the strong work ends only once the hub has run
      });
      worker.observe('doc:pong', 'pong', async () => {
        hubRan = true;
      });
      await worker.start();
      await db.transaction(async (tx) => tx.set('docs', 's0', 'doc:step', 'go'));
      worker.hint('docs', 's0');
      await db.waitForQuiescence({ timeoutMs: 10_000 });
      expect(order.filter((x) => x === 'ping hub')).toHaveLength(1);
      expect(order.indexOf('ping hub')).toBeGreaterThan(1); // it did wait behind steps…
      expect(order.at(-1)).not.toBe('ping hub'); // …and ran while steps were still coming
      await worker.stop();
    });
  });

  it('parks a poison row after maxFailures and keeps processing the others', async () => {
    const logged: string[] = [];
    const worker = db.worker({ maxFailures: 3, log: (m) => logged.push(m) });
    let attempts = 0;
    worker.observe('doc:content', 'picky', async (tx, row) => {
      if (Buffer.from(row).toString() === 'bad') {
        attempts++;
        throw new Error('cannot parse');
      }
      tx.set('docs', row, 'doc:ok', 'yes');
    });
    await worker.start();
    await db.transaction(async (tx) => {
      tx.set('docs', 'bad', 'doc:content', '???');
      tx.set('docs', 'good', 'doc:content', 'fine');
    });
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(await read('good', 'doc:ok')).toBe('yes');
    expect(attempts).toBe(3);
    expect(worker.metrics.parked).toBe(1);
    expect(worker.parkedCells()).toEqual([`docs/${Buffer.from('bad').toString('hex')}/doc:content`]);
    expect(logged.some((m) => m.includes('parked'))).toBe(true);
    // The poison row's notification is still there: nothing was lost.
    const raw = await db.store.readRow('docs', Buffer.from('bad'), { familyNameRegexFilter: 'notify' });
    expect(raw?.cells.length).toBe(1);
    await worker.stop();
  });

  it("a parked cell keeps only itself from running: the row's other observed columns still run", async () => {
    const worker = db.worker({ threads: 1, scanners: 1, maxFailures: 2, log: () => undefined });
    worker.observe('doc:content', 'poison', async () => {
      throw new Error('cannot parse');
    });
    worker.observe('doc:title', 'titles', async (tx, row) =>
      tx.set('docs', row, 'doc:t', (await tx.getString('docs', row, 'doc:title')) ?? ''),
    );
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'bad', 'doc:content', '???'));
    await db.waitForQuiescence({ timeoutMs: 10_000 }); // returns once the cell is parked
    expect(worker.parkedCells()).toHaveLength(1);
    // Until 2026-12-01 the parked cell made the worker skip its whole row (hinted or scanned):
    // this change was never run, and the wait timed out on it.
    await db.transaction(async (tx) => tx.set('docs', 'bad', 'doc:title', 'Title'));
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(str(await db.get('docs', 'bad', 'doc:t'))).toBe('Title');
    await worker.stop();
  });

  it('start() after stop() tries the cells it parked again: their changes are run once the observer stops failing', async () => {
    let broken = true;
    const worker = db.worker({ threads: 1, scanners: 1, maxFailures: 2, log: () => undefined });
    worker.observe('doc:in', 'copy', async (tx, row) => {
      if (broken) throw new Error('its dependency is down');
      tx.set('docs', row, 'doc:out', (await tx.getString('docs', row, 'doc:in')) ?? '');
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'r', 'doc:in', 'hello'));
    await db.waitForQuiescence({ timeoutMs: 10_000 }); // returns once the cell is parked
    expect(worker.parkedCells()).toHaveLength(1);
    broken = false;
    await worker.stop();
    await worker.start();
    // Until 2026-12-01 the cell stayed parked: quiescence excluded it again, and doc:out stayed unset.
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(str(await db.get('docs', 'r', 'doc:out'))).toBe('hello');
    expect(worker.parkedCells()).toEqual([]);
    await worker.stop();
  });

  it('keeps the notification after a failed run and clears it after the successful retry', async () => {
    let calls = 0;
    const failed = signal();
    const worker = db.worker();
    worker.observe('doc:content', 'flaky', async (tx, row) => {
      if (++calls === 1) {
        failed.resolve();
        throw new Error('transient');
      }
      tx.set('docs', row, 'doc:done', 'yes');
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'x'));
    await failed.promise;
    const raw = await db.store.readRow('docs', Buffer.from('a'), { familyNameRegexFilter: 'notify' });
    expect(raw?.cells.length).toBe(1);
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(await read('a', 'doc:done')).toBe('yes');
    expect(calls).toBe(2);
    await worker.stop();
  });

  it('start() called again while starting is one start; stop() or close() during a start leave nothing running', async () => {
    let running = 0;
    let most = 0;
    const observer = async (tx: Transaction, row: Uint8Array) => {
      most = Math.max(most, ++running);
      await new Promise((r) => setImmediate(r));
      running--;
      tx.set('docs', row, 'doc:out', '1');
    };
    const w = db.worker({ threads: 2, scanners: 1 });
    w.observe('doc:in', 'o', observer, { table: 'docs' });
    await Promise.all([w.start(), w.start(), w.start()]);
    await db.transaction(async (tx) => {
      for (let i = 0; i < 20; i++) tx.set('docs', `r${i}`, 'doc:in', 'v');
    });
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(most).toBeLessThanOrEqual(2); // threads, not three starts' worth
    await w.stop();

    const late = db.worker({ threads: 1, scanners: 1 });
    let runs = 0;
    late.observe('doc:in2', 'late', async () => void runs++, { table: 'docs' });
    const starting = late.start();
    await late.stop(); // during the start
    await starting;
    await db.transaction(async (tx) => tx.set('docs', 'x', 'doc:in2', 'v'));
    late.hint('docs', 'x');
    // Nothing runs it: a worker that did start would, at once (hinted), well within this wait.
    await expect(db.waitForQuiescence({ timeoutMs: 1_500 })).rejects.toMatchObject({ code: 'QUIESCENCE_TIMEOUT' });
    expect(runs).toBe(0);

    const other = await Percolator.open({ store: db.store, leaseMs: 1000 });
    const closing = other.worker({ threads: 1 });
    closing.observe('doc:in3', 'c', async () => undefined, { table: 'docs' });
    void closing.start();
    await other.close(); // returns: the start is waited for, and nothing it started keeps running
  });

  it('a hint for a row of a missing table (or a key no table takes) is dropped: no runner stops, nothing waits', async () => {
    const w = db.worker({ threads: 2, scanners: 1, log: () => undefined });
    w.observe('doc:in', 'o', async (tx, row) => tx.set('docs', row, 'doc:out', 'x')); // every table
    await w.start();
    for (let i = 0; i < 16; i++) w.hint('dropped', `row${i}`);
    w.hint('docs', 'x'.repeat(5000));
    // An empty key is no row of any table: refused at the call (test/api-bad-input.test.ts).
    expect(() => w.hint('docs', '')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    await db.transaction(async (tx) => tx.set('docs', 'after', 'doc:in', 'v'));
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(str(await db.get('docs', 'after', 'doc:out'))).toBe('x');
    expect(w.metrics.restarts).toBe(0);
    await w.stop();
  });

  it("a stopped worker's parked cell is pending again: quiescence waits for the worker that now runs it", async () => {
    const broken = db.worker({ threads: 1, scanners: 1, maxFailures: 2, log: () => undefined });
    broken.observe('doc:in', 'copy', async () => {
      throw new Error('bug in version 1');
    });
    await broken.start();
    await db.transaction(async (tx) => tx.set('docs', 'r', 'doc:in', 'hello'));
    await db.waitForQuiescence({ timeoutMs: 10_000 }); // returns once the cell is parked
    expect(broken.parkedCells()).toHaveLength(1);
    await broken.stop();
    const fixed = db.worker({ threads: 1, scanners: 1 });
    fixed.observe('doc:in', 'copy', async (tx, row) => tx.set('docs', row, 'doc:out', (await tx.getString('docs', row, 'doc:in')) ?? ''));
    await fixed.start();
    await db.waitForQuiescence({ timeoutMs: 10_000 });
    expect(str(await db.get('docs', 'r', 'doc:out'))).toBe('hello');
    await fixed.stop();
  });

  it('stop() is graceful: a running observer finishes and commits', async () => {
    const started = signal();
    const release = signal();
    const worker = db.worker();
    worker.observe('doc:content', 'slow', async (tx, row) => {
      started.resolve();
      await release.promise;
      tx.set('docs', row, 'doc:done', 'yes');
    });
    await worker.start();
    await db.transaction(async (tx) => tx.set('docs', 'a', 'doc:content', 'x'));
    await started.promise;
    const stopping = worker.stop();
    let stopped = false;
    void stopping.then(() => {
      stopped = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false);
    release.resolve();
    await stopping;
    expect(await read('a', 'doc:done')).toBe('yes');
  });
});

describe('a store out of reach for a while', () => {
  it('scanners and runners stopped by its errors start again, and the work waiting meanwhile is done', async () => {
    // Reads the worker makes fail while `down` (as a remote store's do when the network drops);
    // commits still go through, so changes keep arriving.
    const store = await openStore('memory:');
    let down = false;
    const flaky = unreachableAt(store, ['readRow', 'readRows', 'sampleRowKeys'], () => down);
    const flakyDb = await Percolator.open({ store: flaky, leaseMs: 1000 });
    others.push(flakyDb);
    await flakyDb.createTable('docs');
    const logged: string[] = [];
    const worker = flakyDb.worker({ threads: 2, log: (m) => logged.push(m) });
    worker.observe('doc:content', 'copy', async (tx, row) => {
      tx.set('docs', row, 'doc:copy', (await tx.getString('docs', row, 'doc:content')) ?? '');
    });
    await worker.start();
    down = true;
    // Each commit hands its row to a runner, whose first read fails: every runner meets an error.
    for (let i = 0; i < 4; i++) await flakyDb.transaction(async (tx) => tx.set('docs', `r${i}`, 'doc:content', `v${i}`));
    const deadline = Date.now() + 10_000;
    // Until both runners and a scanner have failed at least once (bounded).
    while (worker.metrics.restarts < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(worker.metrics.restarts).toBeGreaterThanOrEqual(3);
    down = false;
    await flakyDb.transaction(async (tx) => tx.set('docs', 'r4', 'doc:content', 'v4'));
    await flakyDb.waitForQuiescence({ timeoutMs: 20_000 });
    for (let i = 0; i < 5; i++) expect(await read(`r${i}`, 'doc:copy', flakyDb)).toBe(`v${i}`);
    expect(logged.some((m) => m.startsWith('runner stopped by an unexpected error'))).toBe(true);
    await worker.stop();
  });
});
