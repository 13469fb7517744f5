/**
 * Worker.stop({ graceMs }) under random schedules (session 53): workers are started and stopped
 * with small grace periods, restarted at once while their abandoned runs are still pending, and
 * run beside other workers (of the same Percolator and of a second one on the same store), while
 * writers keep changing rows. Observers are fast, slow, stuck until the end, end on the stop
 * signal, or ignore it and touch their transaction late.
 *
 * What must hold (docs/observers.md › Stopping; the ack protocol of run-observer.ts):
 * - every row's last change is processed, and no change is committed by two runs (each observer
 *   commit appends `token@run` to the row's history, so a change appears there once at most, and
 *   in the order the changes were committed);
 * - no run that was inside its observer when its stop abandoned it ever commits (the snapshot of
 *   such runs is taken in the worker's log call, which abandon() makes right after aborting the
 *   transactions); stuck runs, which write a marker first, are all among them;
 * - the metrics agree: a stop's `abandoned` is its log line's count and the worker's counter; every
 *   abandoned runner ends and says so; no worker is left busy; a worker's commits in the history
 *   are its counted commits, plus at most one per abandoned row (a commit already in flight);
 * - no notification, lock or failure is left.
 *
 * Seeded (WORKER_STOP_SEED; WORKER_STOP_MS: how long each store is driven): the seed fixes the
 * choices, not the interleaving, and every failure names it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { LOCK } from '../txn/layout.js';
import { Percolator } from '../txn/percolator.js';
import { mulberry32, seedFromEnv } from '../util/seeded-random.js';
import type { ObserverContext } from './observer.js';
import type { Worker } from './worker.js';

const SEED = seedFromEnv('WORKER_STOP_SEED', 20261201);
const DRIVE_MS = Number(process.env.WORKER_STOP_MS ?? 8_000);
const ROWS = 12;
const WRITERS = 3;
const TABLE = 'docs';

type Mode = 'fast' | 'slow' | 'stuck' | 'ends-on-signal' | 'ignores-signal' | 'late';
/** Drawn per run. Stuck runs hold a runner until their worker stops: rare enough that workers keep running rows. */
const MODES: readonly Mode[] = [
  ...Array<Mode>(4).fill('fast'),
  ...Array<Mode>(3).fill('slow'),
  'stuck',
  ...Array<Mode>(2).fill('ends-on-signal'),
  ...Array<Mode>(2).fill('ignores-signal'),
  ...Array<Mode>(2).fill('late'),
];

interface Run {
  readonly id: number;
  readonly worker: string;
  readonly mode: Mode;
  /** The observer returned normally (only such a run may commit). */
  returned: boolean;
  /** Inside the observer when its worker's stop abandoned it: it must never commit. */
  abandoned: boolean;
}

interface Tracked {
  readonly name: string;
  readonly worker: Worker;
  /** Runs inside this worker's observer now. */
  readonly inside: Set<Run>;
  /** Sum of its stops' `abandoned`, and of the counts their log lines give. */
  stopAbandoned: number;
  loggedAbandoned: number;
  /** "a run abandoned by stop() ended" lines. */
  abandonedEnded: number;
  stuckStarted: number;
  /** Runs newly marked abandoned at each stop, never more than the stop's rows. */
  readonly snapshots: number[];
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** Polls `done` until it holds or `timeoutMs` passes (the condition involves several workers' counters). */
async function until(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > end) return false;
    await delay(5);
  }
  return true;
}

async function drive(storeUrl: string, seed: number): Promise<string[]> {
  const violations: string[] = [];
  const pick = mulberry32(seed);
  const chance = mulberry32(seed ^ 0x9e3779b9);
  const int = (r: () => number, n: number) => Math.floor(r() * n);

  const db = await Percolator.open({ store: storeUrl, leaseMs: 1000 });
  await db.createTable(TABLE);
  // A second instance: its own lock service, so its worker may run a row another worker runs too;
  // two-phase commits, whose locks a run abandoned mid-commit could leave behind; and a slow store
  // at times, so that stops catch commits in flight.
  const slowStore = mulberry32(seed ^ 0x5bd1e995);
  const db2 = await Percolator.open({
    store: db.store,
    oracle: db.oracle,
    leaseMs: 1000,
    commitProtocol: 'two-phase',
    onProtocolPoint: async (point) => {
      if ((point === 'after-primary-prewrite' || point === 'before-primary-commit') && slowStore() < 0.3) await delay(int(slowStore, 40));
    },
  });

  const runs: Run[] = [];
  const unexpectedLogs: string[] = [];
  let releaseStuck!: () => void;
  const stuckReleased = new Promise<void>((r) => {
    releaseStuck = r;
  });
  let finalPhase = false;

  const track = (name: string, on: Percolator): Tracked => {
    const inside = new Set<Run>();
    const t: Tracked = {
      name,
      inside,
      stopAbandoned: 0,
      loggedAbandoned: 0,
      abandonedEnded: 0,
      stuckStarted: 0,
      snapshots: [],
      worker: on.worker({
        threads: 2 + int(pick, 3),
        scanners: 1,
        log: (m, e) => {
          const stop = /^stop: (\d+) row\(s\) still running after/.exec(m);
          if (stop !== null || m.startsWith('stop: a scanner or runner still busy')) {
            // abandon() logs right after aborting the runs' transactions: whoever is inside the observer now was abandoned.
            let fresh = 0;
            for (const run of inside) {
              if (run.abandoned) continue;
              run.abandoned = true;
              fresh++;
            }
            t.snapshots.push(fresh);
            t.loggedAbandoned += stop === null ? 0 : Number(stop[1]);
            if (fresh > (stop === null ? 0 : Number(stop[1]))) violations.push(`${name}: ${fresh} runs inside the observer, but "${m}"`);
          } else if (m.startsWith('a run abandoned by stop() ended')) {
            t.abandonedEnded++;
            const code = (e as { code?: unknown } | undefined)?.code;
            // Ended by the abandonment, or (a commit in flight when abandoned) without an error.
            if (e !== undefined && code !== 'OBSERVER_ABANDONED') unexpectedLogs.push(`${name}: ${m}: ${String(e)}`);
          } else unexpectedLogs.push(`${name}: ${m}: ${e instanceof Error ? e.message : String(e ?? '')}`);
        },
      }),
    };
    t.worker.observe('doc:in', 'copy', async (tx, row, _column, table, context: ObserverContext) => {
      const mode: Mode = finalPhase ? 'fast' : MODES[int(chance, MODES.length)]!;
      const run: Run = { id: runs.length, worker: name, mode, returned: false, abandoned: false };
      runs.push(run);
      inside.add(run);
      try {
        // Touches the transaction only after a while: by then it may be aborted and released.
        if (mode === 'late') await delay(int(chance, 40));
        const token = await tx.getString(table, row, 'doc:in');
        const history = await tx.getString(table, row, 'doc:hist');
        const entry = `${mode === 'stuck' ? '!' : ''}${token}@${run.id}`;
        tx.set(table, row, 'doc:hist', history === null ? entry : `${history},${entry}`);
        tx.set(table, row, 'doc:out', token ?? '');
        switch (mode) {
          case 'stuck':
            tx.set(table, row, 'doc:mark', `stuck run ${run.id}`);
            t.stuckStarted++;
            await stuckReleased; // resumed, it returns normally: only the abandonment keeps it from committing
            break;
          case 'slow':
            await delay(int(chance, 40));
            break;
          case 'ends-on-signal':
            await Promise.race([aborted(context.signal), delay(int(chance, 100))]);
            context.signal.throwIfAborted();
            break;
          case 'ignores-signal':
            await delay(30 + int(chance, 90));
            break;
          default:
        }
        run.returned = true;
      } finally {
        inside.delete(run);
      }
    });
    return t;
  };

  const pool = [track('A', db), track('B', db), track('C', db2)];

  // Writers: each owns the rows ≡ its index mod WRITERS, so a row's changes commit in the order recorded.
  const written: string[][] = Array.from({ length: ROWS }, () => []);
  let writing = true;
  const writers = Array.from({ length: WRITERS }, async (_, w) => {
    const rnd = mulberry32(seed + 1 + w);
    let seq = 0;
    while (writing) {
      const r = w + WRITERS * int(rnd, Math.ceil((ROWS - w) / WRITERS));
      const token = `r${r}#${seq++}`;
      await db.transaction(async (tx) => tx.set(TABLE, `row${r}`, 'doc:in', token));
      written[r]!.push(token);
      await delay(int(rnd, 6));
    }
  });

  const recordStop = (t: Tracked, result: { abandoned: number }) => {
    t.stopAbandoned += result.abandoned;
  };

  try {
    const end = Date.now() + DRIVE_MS;
    while (Date.now() < end) {
      const t = pool[int(pick, pool.length)]!;
      if (!t.worker.running) {
        if (pick() < 0.15) {
          // A stop during a start waits for it and leaves nothing running.
          const starting = t.worker.start();
          recordStop(t, await t.worker.stop({ graceMs: int(pick, 51) }));
          await starting;
          if (t.worker.running) violations.push(`${t.name}: a stop during a start left the worker running`);
        } else await t.worker.start();
      } else {
        const graceMs = int(pick, 51);
        const how = pick();
        if (how < 0.6) {
          recordStop(t, await t.worker.stop({ graceMs }));
          // Started again at once, while the runs it abandoned are still pending.
          if (pick() < 0.4) await t.worker.start();
        } else if (how < 0.8) {
          const first = t.worker.stop({ graceMs });
          const second = t.worker.stop({ graceMs: int(pick, 51) });
          const [a, b] = await Promise.all([first, second]);
          if (a !== b) violations.push(`${t.name}: concurrent stops did not share one stop`);
          recordStop(t, a);
        } else {
          // A start during a stop begins when the stop ends.
          const stopping = t.worker.stop({ graceMs });
          const starting = t.worker.start();
          recordStop(t, await stopping);
          await starting;
          if (!t.worker.running) violations.push(`${t.name}: a start during a stop left the worker stopped`);
        }
      }
      await delay(int(pick, 80));
    }
    writing = false;
    await Promise.all(writers);
    for (const t of pool) recordStop(t, await t.worker.stop({ graceMs: 0 }));
    // Every stuck run was abandoned by now (none ends on its own); released, each returns normally.
    releaseStuck();
    finalPhase = true;
    const ended = await until(
      () => runs.every((r) => !pool.some((t) => t.inside.has(r))) && pool.every((t) => t.abandonedEnded === t.worker.metrics.abandoned),
      15_000,
    );
    if (!ended)
      violations.push(
        `abandoned runs did not all end: ${pool.map((t) => `${t.name} ${t.abandonedEnded}/${t.worker.metrics.abandoned}`).join(', ')}`,
      );

    const fresh = track('F', db);
    await fresh.worker.start();
    await db.waitForQuiescence({ timeoutMs: 20_000, tables: [TABLE] });
    const freshStop = await fresh.worker.stop({ graceMs: 10_000 });
    recordStop(fresh, freshStop);
    if (freshStop.abandoned !== 0) violations.push(`the final worker abandoned ${freshStop.abandoned} row(s)`);
    pool.push(fresh);

    // The state, through one snapshot.
    const byRun = new Map<number, Run>(runs.map((r) => [r.id, r]));
    const committedBy = new Map<string, number>();
    await db.transaction(async (tx) => {
      for (let r = 0; r < ROWS; r++) {
        const row = `row${r}`;
        const last = written[r]!.at(-1) ?? null;
        const [value, out, history, mark] = await Promise.all(
          ['doc:in', 'doc:out', 'doc:hist', 'doc:mark'].map((c) => tx.getString(TABLE, row, c)),
        );
        if (value !== last) violations.push(`${row}: final value ${value}, last written ${last}`);
        if (mark !== null) violations.push(`${row}: an abandoned stuck run committed (${mark})`);
        if (last === null) continue;
        if (out !== last) violations.push(`${row}: derived value ${out}, last change ${last}`);
        const entries = (history ?? '').split(',').filter((s) => s !== '');
        const tokens = entries.map((s) => s.slice(0, s.lastIndexOf('@')));
        if (tokens.at(-1) !== last) violations.push(`${row}: the last change ${last} is not the last processed (${tokens.at(-1)})`);
        const order = new Map(written[r]!.map((tok, i) => [tok, i]));
        let previous = -1;
        for (const entry of entries) {
          const at = entry.lastIndexOf('@');
          const token = entry.slice(0, at);
          const run = byRun.get(Number(entry.slice(at + 1)));
          if (run === undefined) violations.push(`${row}: ${entry} names no run`);
          else {
            committedBy.set(run.worker, (committedBy.get(run.worker) ?? 0) + 1);
            if (run.abandoned) violations.push(`${row}: run ${run.id} (${run.mode}, worker ${run.worker}) committed after being abandoned`);
            if (!run.returned) violations.push(`${row}: run ${run.id} (${run.mode}) committed without returning`);
          }
          const index = order.get(token);
          if (index === undefined) violations.push(`${row}: ${entry} is no change of this row`);
          else if (index === previous) violations.push(`${row}: change ${token} committed twice (${history})`);
          else if (index < previous) violations.push(`${row}: change ${token} processed after a later one (${history})`);
          else previous = index;
        }
      }
    });

    for (const t of pool) {
      const m = t.worker.metrics;
      if (t.worker.busy !== 0) violations.push(`${t.name}: busy ${t.worker.busy} after stopping`);
      if (m.abandoned !== t.stopAbandoned) violations.push(`${t.name}: metrics.abandoned ${m.abandoned}, stops said ${t.stopAbandoned}`);
      if (m.abandoned !== t.loggedAbandoned) violations.push(`${t.name}: metrics.abandoned ${m.abandoned}, logs said ${t.loggedAbandoned}`);
      if (m.abandoned < t.stuckStarted) violations.push(`${t.name}: ${t.stuckStarted} stuck runs but ${m.abandoned} abandoned`);
      if (m.failures !== 0) violations.push(`${t.name}: ${m.failures} failed runs`);
      const inHistory = committedBy.get(t.name) ?? 0;
      if (inHistory < m.commits || inHistory > m.commits + m.abandoned)
        violations.push(`${t.name}: ${inHistory} commits in the histories, ${m.commits} counted, ${m.abandoned} abandoned`);
    }
    for (const run of runs) if (run.mode === 'stuck' && !run.abandoned) violations.push(`stuck run ${run.id} was not abandoned`);
    violations.push(...unexpectedLogs.map((l) => `unexpected log: ${l}`));

    const pending = await db.pendingNotifications();
    if (pending !== 0) violations.push(`${pending} notification(s) left`);
    let locks = 0;
    for await (const row of db.store.readRows(TABLE, { filter: { familyNameRegexFilter: `^${LOCK}$` } })) locks += row.cells.length;
    if (locks !== 0) violations.push(`${locks} lock cell(s) left`);

    // The schedule must have exercised what it is about.
    const abandoned = pool.reduce((n, t) => n + t.worker.metrics.abandoned, 0);
    const stuck = pool.reduce((n, t) => n + t.stuckStarted, 0);
    const stopsThatCaughtRuns = pool.reduce((n, t) => n + t.snapshots.filter((s) => s > 0).length, 0);
    if (abandoned === 0 || stuck === 0 || stopsThatCaughtRuns === 0 || written.flat().length < 50)
      violations.push(`too little happened: ${written.flat().length} changes, ${abandoned} abandoned, ${stuck} stuck`);
    return violations;
  } finally {
    writing = false;
    releaseStuck();
    await Promise.allSettled(writers);
    await db2.close({ graceMs: 0 });
    await db.close({ graceMs: 0 });
  }
}

// The two stores are driven at once: each drive lasts DRIVE_MS of wall time, mostly timers, and
// interleaved they keep about the same numbers of stops, abandoned and stuck runs each.
describe.concurrent('Worker.stop({ graceMs }) under random start/stop schedules', () => {
  it(`memory: — every change processed once, no abandoned run commits, nothing left (seed ${SEED})`, async ({ expect }) => {
    expect(await drive('memory:', SEED), `seed ${SEED} (WORKER_STOP_SEED=${SEED})`).toEqual([]);
  });

  it(`file: — the same on a store in a directory (seed ${SEED + 1})`, async ({ expect }) => {
    const dir = await mkdtemp(join(tmpdir(), 'percolator-stop-random-'));
    try {
      expect(await drive(`file:${dir}`, SEED + 1), `seed ${SEED + 1} (WORKER_STOP_SEED=${SEED})`).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
