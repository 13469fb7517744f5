/**
 * `percolator bench peers` — the bank-transfer workload on Percolator (a durable `file:` store in a
 * temporary directory, the in-process oracle, one process) and on PostgreSQL at REPEATABLE READ
 * (a private throwaway cluster on 127.0.0.1 with fsync and synchronous commit on, installed and
 * started by peers-postgres.ts), with the same number of concurrent clients, one after the other
 * in one process. Target (DESIGN §10): percolatorTps / postgresTps ≥ 1.0.
 *
 * The workload, the same on both sides: `accounts` accounts with equal balances; `clients`
 * concurrent clients each loop over transfers: pick two distinct random accounts, read both
 * balances, draw an amount in [1, maxAmount] and, if the source holds it, write both balances —
 * all in ONE transaction, retried on conflicts until it commits.
 *
 * - Percolator: `db.transaction(fn)` (its retries: jittered exponential backoff); fn reads both
 *   balances with one `getMany` and buffers two `set`s. `percolatorAborts` counts attempts that
 *   failed with a retryable conflict (the callback ran again).
 * - PostgreSQL: `BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT both; UPDATE; UPDATE; COMMIT` on
 *   one connection per client (node-postgres, TCP to 127.0.0.1); on a serialization failure
 *   (40001) or a deadlock (40P01) it rolls back and retries with the same backoff as ours.
 *   The two UPDATEs go in account order, as an application would write them to avoid deadlocks.
 *   `postgresRetries` counts those retries.
 *
 * A transfer counts when its transaction committed (one whose source lacked the amount commits
 * without writes; those are counted in `skipped` and are rare with the default amounts). Both
 * sides are loaded first; then each measured phase runs a short warm-up (not counted) and
 * `seconds` of measurement; with `rounds` > 1 the sides alternate (P, PG, PG, P, …) so that a
 * change of load on a shared machine hits both alike. At the end each side's total balance is
 * read back in one snapshot / one query and compared with the initial total (`totalsOk`). The
 * 1-minute load average at the start and end of every phase is reported: on a shared machine a
 * ratio is only as good as the quiet it was measured in.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { isTxnError } from '../txn/errors.js';
import { Percolator } from '../txn/percolator.js';
import { type PostgresServer, startPostgres } from './peers-postgres.js';
import { renderBarChart } from './svg-plot.js';
import { BenchOptionError } from './bench-option-error.js';

export interface PeersOptions {
  /** Measured seconds per side and round (default 10). */
  readonly seconds?: number;
  /** Concurrent clients on each side (default 16). */
  readonly clients?: number;
  /** Accounts (default 1000). */
  readonly accounts?: number;
  /** Initial balance of every account (default 1000). */
  readonly initialBalance?: number;
  /** Largest amount of one transfer (default 100). */
  readonly maxAmount?: number;
  /** Unmeasured warm-up seconds before each measured phase (default min(2, seconds / 5)). */
  readonly warmupSeconds?: number;
  /**
   * Rounds (default 1): each round measures both sides for `seconds`, alternating which goes
   * first, so a load change on a shared machine hits both sides alike. TPS = committed / time.
   */
  readonly rounds?: number;
  /** An existing PostgreSQL server (`postgres://…`) instead of a private throwaway cluster. */
  readonly postgresUrl?: string;
  /**
   * Percolator's background version GC interval (ms; 0 = off; default: Percolator's own default).
   * Without it every transfer adds a version to two account rows, and rows that only grow make
   * every later transfer slower.
   */
  readonly gcIntervalMs?: number;
  /** Percolator's commit protocol (default 'auto': one phase on this unshared `file:` store). */
  readonly commitProtocol?: 'auto' | 'two-phase';
  /** Which sides to run (default both; a single side reports the other as null). */
  readonly only?: 'percolator' | 'postgres';
  /** Progress lines (default: stderr). */
  readonly log?: (line: string) => void;
}

export interface SideResult {
  readonly tps: number;
  /** Committed transfers in the measured windows. */
  readonly committed: number;
  /** Of those, transfers whose source lacked the amount (committed without writes). */
  readonly skipped: number;
  /** Attempts that failed with a retryable conflict and ran again. */
  readonly retries: number;
  /** Transfers given up after the retry limit (not counted as committed). */
  readonly failed: number;
  /** Per-transfer latency including retries (ms). */
  readonly latencyMs: { readonly p50: number; readonly p99: number };
  readonly measuredSeconds: number;
  readonly totalBefore: number;
  readonly totalAfter: number;
  /** 1-minute load average at the start and end of each measured phase. */
  readonly load1m: number[];
  /**
   * Durable flushes in the measured phases, when the side can tell: LevelDB group commits
   * (fsyncs) of the `file:` store / WAL syncs of PostgreSQL (`pg_stat_wal.wal_sync`), per second
   * and per committed transfer. Both sides are usually bound by how many flushes a transfer
   * waits for in sequence, not by how many it causes. PostgreSQL publishes its counters about
   * once a second, so its figure is approximate for short phases.
   */
  readonly syncs: { readonly perSecond: number; readonly perTransfer: number } | null;
}

export interface PeersResult {
  readonly percolatorTps: number | null;
  readonly postgresTps: number | null;
  /** percolatorTps / postgresTps. */
  readonly ratio: number | null;
  readonly clients: number;
  readonly accounts: number;
  readonly seconds: number;
  readonly rounds: number;
  readonly percolatorAborts: number | null;
  readonly postgresRetries: number | null;
  /** Both sides' total balance, read back at the end, equals their initial total. */
  readonly totalsOk: boolean;
  readonly totals: {
    readonly expected: number;
    readonly percolator: number | null;
    readonly postgres: number | null;
  };
  readonly percolator:
    | (SideResult & { readonly store: string; readonly gcIntervalMs: number | null; readonly commitProtocol: 'one-phase' | 'two-phase' })
    | null;
  readonly postgres: (SideResult & { readonly server: string; readonly settings: Readonly<Record<string, string>> }) | null;
  readonly machine: {
    readonly cpus: number;
    readonly memoryGiB: number;
    readonly node: string;
    /** 1, 5 and 15-minute load averages when the benchmark started and when it ended. */
    readonly loadAverageStart: number[];
    readonly loadAverageEnd: number[];
  };
}

const TABLE = 'peers_bank';
const BALANCE = 'bank:balance';
const PG_TABLE = 'percolator_peers_accounts';
const MAX_ATTEMPTS = 50;
const BASE_BACKOFF_MS = 2;
const MAX_BACKOFF_MS = 200;
/** SQLSTATEs after which a PostgreSQL transfer is rolled back and run again. */
const RETRY_CODES = new Set(['40001', '40P01']);

const accountKey = (i: number): string => `acct-${String(i).padStart(6, '0')}`;
const randomInt = (n: number): number => Math.floor(Math.random() * n);
const round2 = (xs: number[]): number[] => xs.map((x) => Math.round(x * 100) / 100);

function pickPair(accounts: number): [number, number] {
  const a = randomInt(accounts);
  let b = randomInt(accounts - 1);
  if (b >= a) b++;
  return [a, b];
}

function backoff(attempt: number): Promise<void> {
  const delay = Math.random() * Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** (attempt - 1));
  // Jittered backoff between attempts is the retry protocol (the same as db.transaction's).
  return new Promise((r) => setTimeout(r, delay));
}

interface Outcome {
  committed: boolean;
  skipped: boolean;
  retries: number;
}

interface Workload {
  readonly seconds: number;
  readonly clients: number;
  readonly accounts: number;
  readonly initialBalance: number;
  readonly maxAmount: number;
  readonly warmupSeconds: number;
  readonly gcIntervalMs: number | undefined;
  readonly commitProtocol: 'auto' | 'two-phase';
}

/** One system under test, loaded and ready. */
interface Side {
  /** One transfer (with its retries) on the connection of `client`. */
  transfer(client: number): Promise<Outcome>;
  /** The sum of all balances, read consistently (throws if an account is missing). */
  total(): Promise<number>;
  /** Durable flushes so far (a counter), or null when the side cannot tell. */
  syncs(): Promise<number | null>;
  close(): Promise<void>;
}

class Tally {
  committed = 0;
  skipped = 0;
  retries = 0;
  failed = 0;
  measuredSeconds = 0;
  syncs: number | null = 0;
  readonly latencies: number[] = [];
  readonly load1m: number[] = [];

  result(totalBefore: number, totalAfter: number): SideResult {
    const sorted = Float64Array.from(this.latencies).sort();
    const q = (p: number) =>
      sorted.length === 0 ? 0 : Math.round((sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number) * 100) / 100;
    return {
      tps: this.measuredSeconds > 0 ? Math.round(this.committed / this.measuredSeconds) : 0,
      committed: this.committed,
      skipped: this.skipped,
      retries: this.retries,
      failed: this.failed,
      latencyMs: { p50: q(0.5), p99: q(0.99) },
      measuredSeconds: this.measuredSeconds,
      totalBefore,
      totalAfter,
      load1m: this.load1m,
      syncs:
        this.syncs === null || this.measuredSeconds === 0
          ? null
          : {
              perSecond: Math.round(this.syncs / this.measuredSeconds),
              perTransfer: this.committed === 0 ? 0 : Math.round((this.syncs / this.committed) * 1000) / 1000,
            },
    };
  }
}

/**
 * Runs `clients` loops of transfers for warm-up + `seconds`, adding to `tally` the transfers that
 * started after the warm-up and finished before the deadline (each client loses at most one
 * transfer at each edge, on both sides alike).
 */
async function drive(side: Side, w: Workload, tally: Tally): Promise<void> {
  const measureFrom = performance.now() + w.warmupSeconds * 1000;
  const end = measureFrom + w.seconds * 1000;
  let loadNoted = false;
  let syncsFrom: Promise<number | null> | null = null;
  await Promise.all(
    Array.from({ length: w.clients }, async (_, client) => {
      while (performance.now() < end) {
        const started = performance.now();
        if (!loadNoted && started >= measureFrom) {
          loadNoted = true;
          tally.load1m.push(round2(loadavg())[0] as number);
          syncsFrom = side.syncs();
        }
        const o = await side.transfer(client);
        const finished = performance.now();
        if (started < measureFrom || finished > end) continue;
        tally.retries += o.retries;
        if (!o.committed) {
          tally.failed++;
          continue;
        }
        tally.committed++;
        if (o.skipped) tally.skipped++;
        tally.latencies.push(finished - started);
      }
    }),
  );
  tally.load1m.push(round2(loadavg())[0] as number);
  const [before, after] = await Promise.all([syncsFrom ?? Promise.resolve(null), side.syncs()]);
  tally.syncs = tally.syncs === null || before === null || after === null ? null : tally.syncs + (after - before);
  tally.measuredSeconds += w.seconds;
}

async function openPercolatorSide(w: Workload, dir: string): Promise<Side & { readonly gcIntervalMs: number }> {
  const store: Store = await openStore(`file:${dir}`, { gcIntervalMs: 0 });
  let db: Percolator;
  try {
    db = await Percolator.open({
      store,
      commitProtocol: w.commitProtocol,
      ...(w.gcIntervalMs === undefined ? {} : { gcIntervalMs: w.gcIntervalMs }),
    });
    await db.createTable(TABLE);
    for (let i = 0; i < w.accounts; i += 100) {
      await db.transaction(async (tx) => {
        for (let j = i; j < Math.min(w.accounts, i + 100); j++) tx.set(TABLE, accountKey(j), BALANCE, String(w.initialBalance));
      });
    }
  } catch (e) {
    await store.close().catch(() => undefined);
    throw e;
  }
  const options = { maxAttempts: MAX_ATTEMPTS, baseBackoffMs: BASE_BACKOFF_MS, maxBackoffMs: MAX_BACKOFF_MS };
  // The file: store's engine counts its group commits (LevelEngine.stats().batches); the Store
  // interface does not expose it, so this looks for it and reports null if it is not there.
  const engine = (store as unknown as { engine?: { stats?: () => { batches?: unknown } } }).engine;
  return {
    gcIntervalMs: db.gcIntervalMs,
    async transfer(): Promise<Outcome> {
      const [a, b] = pickPair(w.accounts);
      const from = accountKey(a);
      const to = accountKey(b);
      let attempts = 0;
      try {
        const moved = await db.transaction(async (tx) => {
          attempts++;
          const [va, vb] = await tx.getMany(TABLE, [
            { row: from, column: BALANCE },
            { row: to, column: BALANCE },
          ]);
          if (va === null || vb === null || va === undefined || vb === undefined) throw new Error(`account ${a} or ${b} is missing`);
          const balanceFrom = Number(Buffer.from(va).toString('utf8'));
          const balanceTo = Number(Buffer.from(vb).toString('utf8'));
          const amount = 1 + randomInt(w.maxAmount);
          if (balanceFrom < amount) return false;
          tx.set(TABLE, from, BALANCE, String(balanceFrom - amount));
          tx.set(TABLE, to, BALANCE, String(balanceTo + amount));
          return true;
        }, options);
        return { committed: true, skipped: !moved, retries: attempts - 1 };
      } catch (e) {
        if (!isTxnError(e, 'RETRIES_EXHAUSTED')) throw e;
        return { committed: false, skipped: false, retries: attempts };
      }
    },
    async total(): Promise<number> {
      const snap = await db.snapshot();
      try {
        let total = 0;
        let rows = 0;
        for await (const r of snap.scan(TABLE, { prefix: 'acct-' }, { columns: [BALANCE] })) {
          const v = r.columns.get(BALANCE);
          if (v === undefined) throw new Error(`account ${Buffer.from(r.row).toString('utf8')} has no balance`);
          total += Number(Buffer.from(v).toString('utf8'));
          rows++;
        }
        if (rows !== w.accounts) throw new Error(`expected ${w.accounts} accounts in Percolator, found ${rows}`);
        return total;
      } finally {
        snap.release();
      }
    },
    async syncs(): Promise<number | null> {
      const n = typeof engine?.stats === 'function' ? engine.stats().batches : null;
      return typeof n === 'number' ? n : null;
    },
    async close(): Promise<void> {
      try {
        await db.close();
      } finally {
        await store.close();
      }
    },
  };
}

async function openPostgresSide(w: Workload, connect: () => pg.Client): Promise<Side> {
  const admin = connect();
  await admin.connect();
  const conns: pg.Client[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(conns.map((c) => c.end().catch(() => undefined)));
    await admin.query(`DROP TABLE IF EXISTS ${PG_TABLE}`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  };
  try {
    await admin.query(`DROP TABLE IF EXISTS ${PG_TABLE}`);
    await admin.query(`CREATE TABLE ${PG_TABLE} (id integer PRIMARY KEY, balance bigint NOT NULL CHECK (balance >= 0))`);
    await admin.query(`INSERT INTO ${PG_TABLE} SELECT g, $1::bigint FROM generate_series(0, $2::integer - 1) g`, [
      w.initialBalance,
      w.accounts,
    ]);
    await admin.query(`VACUUM ANALYZE ${PG_TABLE}`);
    for (let i = 0; i < w.clients; i++) {
      const c = connect();
      conns.push(c);
      await c.connect();
    }
  } catch (e) {
    await close();
    throw e;
  }
  const select = { name: 'peers-select', text: `SELECT id, balance FROM ${PG_TABLE} WHERE id = $1 OR id = $2` };
  const update = { name: 'peers-update', text: `UPDATE ${PG_TABLE} SET balance = $2 WHERE id = $1` };
  return {
    async transfer(client: number): Promise<Outcome> {
      const conn = conns[client] as pg.Client;
      const [a, b] = pickPair(w.accounts);
      for (let attempt = 1; ; attempt++) {
        try {
          await conn.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
          const res = await conn.query<{ id: number; balance: string }>({ ...select, values: [a, b] });
          let balanceFrom: number | undefined;
          let balanceTo: number | undefined;
          for (const r of res.rows) {
            if (r.id === a) balanceFrom = Number(r.balance);
            else if (r.id === b) balanceTo = Number(r.balance);
          }
          if (balanceFrom === undefined || balanceTo === undefined) throw new Error(`account ${a} or ${b} is missing`);
          const amount = 1 + randomInt(w.maxAmount);
          if (balanceFrom >= amount) {
            // In account order, as an application avoids deadlocks between two transfers.
            const writes: [number, number][] = [
              [a, balanceFrom - amount],
              [b, balanceTo + amount],
            ];
            if (b < a) writes.reverse();
            for (const values of writes) await conn.query({ ...update, values });
          }
          await conn.query('COMMIT');
          return { committed: true, skipped: balanceFrom < amount, retries: attempt - 1 };
        } catch (e) {
          await conn.query('ROLLBACK').catch(() => undefined);
          const code = (e as { code?: unknown }).code;
          if (typeof code !== 'string' || !RETRY_CODES.has(code)) throw e;
          if (attempt >= MAX_ATTEMPTS) return { committed: false, skipped: false, retries: attempt };
          await backoff(attempt);
        }
      }
    },
    async total(): Promise<number> {
      const res = await admin.query<{ n: string; total: string | null }>(`SELECT count(*) AS n, sum(balance) AS total FROM ${PG_TABLE}`);
      const row = res.rows[0];
      if (row === undefined || Number(row.n) !== w.accounts)
        throw new Error(`expected ${w.accounts} accounts in PostgreSQL, found ${row?.n}`);
      return Number(row.total);
    },
    async syncs(): Promise<number | null> {
      // pg_stat_wal exists from PostgreSQL 14 on; older servers report null.
      const res = await admin.query<{ n: string }>('SELECT wal_sync AS n FROM pg_stat_wal').catch(() => null);
      const n = res?.rows[0]?.n;
      return n === undefined ? null : Number(n);
    },
    close,
  };
}

let signalDir: string | null = null;
const onSignal = (signal: NodeJS.Signals): void => {
  if (signalDir !== null) rmSync(signalDir, { recursive: true, force: true });
  process.kill(process.pid, signal);
};

/** Removes `dir` (the Percolator side's store) if SIGINT/SIGTERM stops the run; null: disarm. */
function removeOnSignal(dir: string | null): void {
  signalDir = dir;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.off(sig, onSignal);
    if (dir !== null) process.once(sig, onSignal);
  }
}

export async function runPeersBench(opts: PeersOptions = {}): Promise<PeersResult> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const seconds = opts.seconds ?? 10;
  const clients = Math.floor(opts.clients ?? 16);
  const accounts = Math.floor(opts.accounts ?? 1000);
  const rounds = Math.max(1, Math.floor(opts.rounds ?? 1));
  if (accounts < 2) throw new BenchOptionError('--accounts', accounts, `--accounts must be at least 2, got ${accounts}`);
  if (clients < 1) throw new BenchOptionError('--clients', clients, `--clients must be at least 1, got ${clients}`);
  const w: Workload = {
    seconds,
    clients,
    accounts,
    initialBalance: opts.initialBalance ?? 1000,
    maxAmount: opts.maxAmount ?? 100,
    warmupSeconds: opts.warmupSeconds ?? Math.min(2, seconds / 5),
    gcIntervalMs: opts.gcIntervalMs,
    commitProtocol: opts.commitProtocol ?? 'auto',
  };
  const expected = w.accounts * w.initialBalance;
  const loadAverageStart = round2(loadavg());

  // PostgreSQL first: a missing package or a failing server should fail before a long run.
  let server: PostgresServer | null = null;
  let dir: string | null = null;
  let percolatorGcMs: number | null = null;
  const sides: { name: 'percolator' | 'postgres'; side: Side; tally: Tally; totalBefore: number }[] = [];
  let serverName = '';
  let settings: Readonly<Record<string, string>> = {};
  try {
    if (opts.only !== 'percolator') {
      let connect: () => pg.Client;
      if (opts.postgresUrl !== undefined) {
        const url = opts.postgresUrl;
        connect = () => new pg.Client({ connectionString: url });
        serverName = url.replace(/\/\/[^@/]*@/, '//');
      } else {
        server = await startPostgres({ maxConnections: clients + 10, log });
        const s = server;
        connect = () => new pg.Client({ host: s.host, port: s.port, user: s.user, database: s.database });
        serverName = `${s.version} on ${s.host}:${s.port} (private cluster${s.installed ? ', installed by this run' : ''})`;
        settings = s.settings;
      }
      const side = await openPostgresSide(w, connect);
      sides.push({ name: 'postgres', side, tally: new Tally(), totalBefore: await side.total() });
    }
    if (opts.only !== 'postgres') {
      dir = mkdtempSync(join(tmpdir(), 'percolator-peers-'));
      removeOnSignal(dir);
      const side = await openPercolatorSide(w, dir);
      percolatorGcMs = side.gcIntervalMs;
      sides.unshift({ name: 'percolator', side, tally: new Tally(), totalBefore: await side.total() });
    }
    const names = sides.map((s) => s.name).join(' and ');
    log(
      `bench peers: ${accounts} accounts loaded on ${names}; ${clients} clients, ${rounds} round(s) of ${w.warmupSeconds}+${seconds} s per side`,
    );
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const s of order) {
        await drive(s.side, w, s.tally);
        log(`bench peers: round ${r + 1}: ${s.name}: ${s.tally.committed} committed so far (load ${s.tally.load1m.slice(-2).join(' → ')})`);
      }
    }
    const results = new Map<string, SideResult>();
    for (const s of sides) results.set(s.name, s.tally.result(s.totalBefore, await s.side.total()));
    const p = results.get('percolator') ?? null;
    const q = results.get('postgres') ?? null;
    const ratio = p !== null && q !== null && q.tps > 0 ? Number((p.tps / q.tps).toFixed(3)) : null;
    const totalsOk = [...results.values()].every((s) => s.totalBefore === expected && s.totalAfter === expected);
    return {
      percolatorTps: p?.tps ?? null,
      postgresTps: q?.tps ?? null,
      ratio,
      clients,
      accounts,
      seconds,
      rounds,
      percolatorAborts: p?.retries ?? null,
      postgresRetries: q?.retries ?? null,
      totalsOk,
      totals: { expected, percolator: p?.totalAfter ?? null, postgres: q?.totalAfter ?? null },
      percolator:
        p === null
          ? null
          : {
              ...p,
              store: 'file: (temporary directory), in-process oracle',
              gcIntervalMs: percolatorGcMs,
              commitProtocol: w.commitProtocol === 'auto' ? 'one-phase' : 'two-phase',
            },
      postgres: q === null ? null : { ...q, server: serverName, settings },
      machine: {
        cpus: cpus().length,
        memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
        node: process.version,
        loadAverageStart,
        loadAverageEnd: round2(loadavg()),
      },
    };
  } finally {
    for (const s of sides) await s.side.close().catch(() => undefined);
    if (dir !== null) {
      rmSync(dir, { recursive: true, force: true });
      removeOnSignal(null);
    }
    await server?.stop();
  }
}

/** Transfers/s and latency of both sides, as a grouped bar chart. */
export function peersSvg(r: PeersResult): string {
  const sides = [
    { name: 'Percolator (file:)', side: r.percolator },
    { name: 'PostgreSQL REPEATABLE READ', side: r.postgres },
  ].filter((x) => x.side !== null);
  return renderBarChart({
    title: `Bank transfers, ${r.clients} clients, ${r.accounts} accounts: ratio ${r.ratio ?? 'n/a'}`,
    yLabel: 'transfers/s  |  ms',
    categories: ['transfers/s', 'p50 latency (ms)', 'p99 latency (ms)'],
    series: sides.map(({ name, side }) => ({ name, values: [side?.tps ?? 0, side?.latencyMs.p50 ?? 0, side?.latencyMs.p99 ?? 0] })),
    logY: true,
  });
}
