/**
 * `percolator bench overhead` — the paper's Figure 8: the cost of Percolator's transactions over
 * the raw store, on the same backend, in one process, measured in one run.
 *
 *   raw reads:   store.readRow of one cell        vs  txn reads: db.get of one cell (a one-read
 *                                                     read-only transaction; on an embedded store
 *                                                     the cell's newest committed version when no
 *                                                     lock or commit in flight is on it)
 *   raw writes:  store.mutateRow of one cell      vs  txn writes: a transaction setting one cell
 *
 * Transactions commit with the store's default protocol (`protocol`: one phase on an unshared
 * embedded store, two phases otherwise; docs/transactions.md); the writes are also measured with
 * Percolator's two-phase commit forced (`txnWritesPerSecondTwoPhase`, `writeRatioTwoPhase`), the
 * protocol the paper's Figure 8 measured.
 *
 * Both sides run the same number of concurrent clients (`--clients`, default 32) so the store's
 * group commit serves both equally; every write is durable when acknowledged (file:). Reads go to
 * two tables of their own with the same rows written interleaved, each row read once on both
 * sides before the timing. Both sides make each read's row key as a string, as an application
 * with string row ids does, and pass it as their API takes it: the store takes bytes (`utf8`), the
 * transaction API the string (an ASCII one finds its cached row without being encoded). The two
 * read phases alternate in short windows (measureAlternating): measured once each, raw first, the
 * raw phase alone swung by almost 2x between runs of one build.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../store/open-store.js';
import { utf8 } from '../store/bytes.js';
import { type Store, atomicRowsOf } from '../store/store.js';
import { Percolator } from '../txn/percolator.js';
import { renderBarChart } from './svg-plot.js';

export interface OverheadResult {
  readonly store: string;
  readonly clients: number;
  readonly rawReadsPerSecond: number;
  readonly txnReadsPerSecond: number;
  readonly readRatio: number;
  readonly rawWritesPerSecond: number;
  readonly txnWritesPerSecond: number;
  readonly writeRatio: number;
  /** The protocol `txnWritesPerSecond` committed with. */
  readonly protocol: 'one-phase' | 'two-phase';
  readonly txnWritesPerSecondTwoPhase: number;
  readonly writeRatioTwoPhase: number;
  /** How the transactional reads were handed their row keys (`--txn-keys`). */
  readonly txnKeys: TxnKeyForm;
  /** Each read window's rate (ops/s), in the order run: how much the machine drifted during the run. */
  readonly readWindows: { readonly raw: readonly number[]; readonly txn: readonly number[] };
}

/**
 * How the transactional side passes each read's row key: `string`, as made (the transaction API
 * takes strings; the raw side must encode it, as an application with string row ids does), or
 * `bytes`, encoded the same way as the raw side's (the transaction layer's own cost alone).
 */
export type TxnKeyForm = 'string' | 'bytes';

/** Runs `op` from `clients` concurrent loops for `seconds`; returns ops/s and each client's op count. */
async function measure(
  seconds: number,
  clients: number,
  op: (client: number, i: number) => Promise<void>,
): Promise<{ perSecond: number; perClient: number[]; ops: number; seconds: number }> {
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  const perClient = new Array<number>(clients).fill(0);
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      let i = 0;
      while (performance.now() < end) {
        await op(c, i++);
        perClient[c] = i;
      }
    }),
  );
  const ops = perClient.reduce((a, b) => a + b, 0);
  const elapsed = (performance.now() - start) / 1000;
  return { perSecond: ops / elapsed, perClient, ops, seconds: elapsed };
}

/**
 * `a` and `b` measured for `seconds` each, in `slices` windows a side ordered a b, b a, a b, …:
 * whatever the machine does meanwhile (the engine compacting what the writes left, a collection
 * of the warm-up's garbage, a slower stretch of the host) weighs on both sides alike. Measured
 * once each, raw reads first, the same build gave read ratios from 0.81 to 1.52 on one machine
 * within minutes; in halves (a b b a) a run's rates still drifted by up to a third from its first
 * window to its last, and its ratio by ±0.1 (BENCHMARKS.md, 2026-11-29).
 */
export async function measureAlternating(
  seconds: number,
  clients: number,
  a: (client: number, i: number) => Promise<void>,
  b: (client: number, i: number) => Promise<void>,
  slices = 8,
): Promise<{ a: number; b: number; aWindows: number[]; bWindows: number[] }> {
  const sa = { op: a, ops: 0, seconds: 0, windows: [] as number[] };
  const sb = { op: b, ops: 0, seconds: 0, windows: [] as number[] };
  for (let k = 0; k < slices; k++) {
    for (const side of k % 2 === 0 ? [sa, sb] : [sb, sa]) {
      const m = await measure(seconds / slices, clients, side.op);
      side.ops += m.ops;
      side.seconds += m.seconds;
      side.windows.push(Math.round(m.perSecond));
    }
  }
  return { a: sa.ops / sa.seconds, b: sb.ops / sb.seconds, aWindows: sa.windows, bWindows: sb.windows };
}

/** Figure 8 as a grouped bar chart: operations/s of the raw store and of Percolator. */
export function overheadSvg(r: OverheadResult): string {
  return renderBarChart({
    title: `Percolator overhead on ${r.store} (${r.clients} clients): readRatio ${r.readRatio}, writeRatio ${r.writeRatio}`,
    yLabel: 'operations/s',
    categories: ['reads', 'writes'],
    series: [
      { name: 'raw store', values: [r.rawReadsPerSecond, r.rawWritesPerSecond] },
      { name: `Percolator (${r.protocol})`, values: [r.txnReadsPerSecond, r.txnWritesPerSecond] },
      { name: 'Percolator (two-phase forced)', values: [r.txnReadsPerSecond, r.txnWritesPerSecondTwoPhase] },
    ],
    logY: true,
  });
}

const key = (c: number, i: number) => `k${c}-${i}`;
/** Rows each client reads, cycling; 32 clients read 64 000 rows a side. */
const READ_ROWS_PER_CLIENT = 2000;
const READ_BATCH = 200;
const VALUE = Buffer.alloc(64, 0x61);

export async function runOverheadBench(opts: {
  seconds: number;
  clients?: number;
  store?: string;
  txnKeys?: TxnKeyForm;
}): Promise<OverheadResult> {
  const clients = opts.clients ?? 32;
  const txnKeys = opts.txnKeys ?? 'string';
  let dir: string | null = null;
  let url = opts.store ?? 'file:';
  if (url === 'file:') {
    dir = mkdtempSync(join(tmpdir(), 'percolator-overhead-'));
    url = `file:${dir}`;
  }
  const store: Store = await openStore(url, { gcIntervalMs: 0 });
  // A store the bench did not create (a server's, a directory the user named) gets tables of
  // this run's own, deleted at the end: a second run against it must not meet the first one's.
  const tag = dir === null ? `-${Date.now().toString(36)}${Math.floor(Math.random() * 1296).toString(36)}` : '';
  const T = { raw: `raw${tag}`, txn: `txn${tag}`, rawReads: `raw-reads${tag}`, txnReads: `txn-reads${tag}` };
  try {
    await store.createTable(T.raw, { families: { f: {} } });
    const db = await Percolator.open({ store });
    const atomic = atomicRowsOf(store);
    const protocol = atomic !== null && !atomic.shared ? 'one-phase' : 'two-phase';
    await db.createTable(T.txn);
    const q = Buffer.from('c');
    // Writes: both sides write fresh rows.
    const rawWrites = await measure(opts.seconds, clients, (c, i) =>
      store.mutateRow(T.raw, utf8(key(c, i)), [{ setCell: { familyName: 'f', columnQualifier: q, timestampMicros: 1000, value: VALUE } }]),
    );
    const txnWrites = await measure(opts.seconds, clients, (c, i) => db.transaction(async (tx) => tx.set(T.txn, key(c, i), 'f:c', VALUE)));
    const twoPhase = await Percolator.open({ store, oracle: db.oracle, commitProtocol: 'two-phase' });
    const txnWrites2 = await measure(opts.seconds, clients, (c, i) =>
      twoPhase.transaction(async (tx) => tx.set(T.txn, `2pc-${key(c, i)}`, 'f:c', VALUE)),
    );
    await twoPhase.close();
    // Reads: two tables of their own holding the same rows, written interleaved in batches, so
    // neither side reads a bigger table or rows scattered among others (the write phases above
    // leave the raw table several times the transactional one, which made raw reads slower), and
    // each row read once before the timing on both sides (none is timed as a cache miss).
    const rows = READ_ROWS_PER_CLIENT;
    await store.createTable(T.rawReads, { families: { f: {} } });
    await db.createTable(T.txnReads);
    // Both loops run the clients side by side: over the network one at a time took minutes.
    const eachClient = (f: (c: number) => Promise<void>) => Promise.all(Array.from({ length: clients }, (_, c) => f(c)));
    await eachClient(async (c) => {
      for (let i = 0; i < rows; i += READ_BATCH) {
        const n = Math.min(READ_BATCH, rows - i);
        const batch = Array.from({ length: n }, (_, j) => key(c, i + j));
        await store.mutateRows(
          T.rawReads,
          batch.map((k) => ({
            key: utf8(k),
            mutations: [{ setCell: { familyName: 'f', columnQualifier: q, timestampMicros: 1000, value: VALUE } }],
          })),
        );
        await db.transaction(async (tx) => {
          for (const k of batch) tx.set(T.txnReads, k, 'f:c', VALUE);
        });
      }
    });
    await eachClient(async (c) => {
      for (let i = 0; i < rows; i++) {
        await store.readRow(T.rawReads, utf8(key(c, i)));
        await db.get(T.txnReads, key(c, i), 'f:c');
      }
    });
    const reads = await measureAlternating(
      opts.seconds,
      clients,
      async (c, i) => {
        await store.readRow(T.rawReads, utf8(key(c, i % rows)));
      },
      txnKeys === 'string'
        ? async (c, i) => {
            await db.get(T.txnReads, key(c, i % rows), 'f:c');
          }
        : async (c, i) => {
            await db.get(T.txnReads, utf8(key(c, i % rows)), 'f:c');
          },
    );
    const rawReadsPerSecond = reads.a;
    const txnReadsPerSecond = reads.b;
    const rawWritesPerSecond = rawWrites.perSecond;
    const txnWritesPerSecond = txnWrites.perSecond;
    await db.close();
    return {
      store: opts.store ?? 'file:',
      clients,
      rawReadsPerSecond: Math.round(rawReadsPerSecond),
      txnReadsPerSecond: Math.round(txnReadsPerSecond),
      readRatio: Number((txnReadsPerSecond / rawReadsPerSecond).toFixed(3)),
      rawWritesPerSecond: Math.round(rawWritesPerSecond),
      txnWritesPerSecond: Math.round(txnWritesPerSecond),
      writeRatio: Number((txnWritesPerSecond / rawWritesPerSecond).toFixed(3)),
      protocol,
      txnWritesPerSecondTwoPhase: Math.round(txnWrites2.perSecond),
      writeRatioTwoPhase: Number((txnWrites2.perSecond / rawWritesPerSecond).toFixed(3)),
      txnKeys,
      readWindows: { raw: reads.aWindows, txn: reads.bWindows },
    };
  } finally {
    if (dir === null) for (const t of Object.values(T)) await store.deleteTable(t).catch(() => undefined);
    await store.close();
    if (dir !== null) rmSync(dir, { recursive: true, force: true });
  }
}
