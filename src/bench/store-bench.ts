/**
 * `percolator bench store`: raw store throughput for a backend, each phase timed on its own:
 *   - rowWritesPerSecond: one writer, each single-cell mutateRow awaited before the next
 *   - concurrentRowWritesPerSecond: 64 writers issuing single-cell mutateRow (group commit at work)
 *   - batchedCellWritesPerSecond: mutateRows calls of 100 rows × 10 cells, 4 in flight
 *   - pointReadsPerSecond: readRow of random existing rows (default cache), and uncached
 *   - scanCellsPerSecond: readRows over the whole table
 * Every write is durable when acknowledged (for file:), exactly as users get it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import type { Mutation } from '../store/types.js';
import { renderBarChart } from './svg-plot.js';

export interface StoreBenchResult {
  readonly store: string;
  readonly rowWritesPerSecond: number;
  readonly concurrentRowWritesPerSecond: number;
  readonly batchedCellWritesPerSecond: number;
  readonly pointReadsPerSecond: number;
  /** Point reads with the decoded-row cache off: every read goes to the engine (null for memory:). */
  readonly pointReadsUncachedPerSecond: number | null;
  readonly scanCellsPerSecond: number;
}

function key(i: number): Uint8Array {
  return Buffer.from(`row${i.toString().padStart(9, '0')}`);
}

const VALUE = Buffer.alloc(100, 7);

async function timed(seconds: number, step: () => Promise<number>): Promise<number> {
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  let ops = 0;
  while (performance.now() < end) ops += await step();
  return ops / ((performance.now() - start) / 1000);
}

function cellMutations(cells: number, tag: number): Mutation[] {
  const out: Mutation[] = [];
  for (let c = 0; c < cells; c++) {
    out.push({ setCell: { familyName: 'f', columnQualifier: Buffer.from(`q${c}`), timestampMicros: tag, value: VALUE } });
  }
  return out;
}

/** `reopenUncached` closes the store and reopens it without the decoded-row cache (null: not possible). */
async function benchOne(
  url: string,
  seconds: number,
  open: () => Promise<Store>,
  reopenUncached: ((s: Store) => Promise<Store>) | null,
): Promise<StoreBenchResult> {
  let store = await open();
  await store.createTable('bench', { families: { f: { gcRule: { maxNumVersions: 1 } } } });
  let n = 0;
  const one = cellMutations(1, 1);
  const rowWritesPerSecond = await timed(seconds, async () => {
    await store.mutateRow('bench', key(n++), one);
    return 1;
  });
  const concurrentRowWritesPerSecond = await timed(seconds, async () => {
    const ps: Promise<void>[] = [];
    for (let w = 0; w < 64; w++) ps.push(store.mutateRow('bench', key(n++), one));
    await Promise.all(ps);
    return 64;
  });
  const ten = cellMutations(10, 2);
  const batchedCellWritesPerSecond = await timed(seconds, async () => {
    const calls: Promise<unknown>[] = [];
    for (let c = 0; c < 4; c++) {
      const entries = [];
      for (let r = 0; r < 100; r++) entries.push({ key: key(n++), mutations: ten });
      calls.push(store.mutateRows('bench', entries));
    }
    await Promise.all(calls);
    return 4 * 100 * 10;
  });
  const rows = n;
  let seed = 12345;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % rows;
  };
  const reads = async () => {
    for (let i = 0; i < 1000; i++) await store.readRow('bench', key(rnd()));
    return 1000;
  };
  const pointReadsPerSecond = await timed(seconds, reads);
  let pointReadsUncachedPerSecond: number | null = null;
  if (reopenUncached !== null) {
    store = await reopenUncached(store);
    pointReadsUncachedPerSecond = await timed(seconds, reads);
  }
  let cells = 0;
  const t0 = performance.now();
  for await (const row of store.readRows('bench')) cells += row.cells.length;
  const scanCellsPerSecond = cells / ((performance.now() - t0) / 1000);
  await store.close();
  return {
    store: url,
    rowWritesPerSecond: Math.round(rowWritesPerSecond),
    concurrentRowWritesPerSecond: Math.round(concurrentRowWritesPerSecond),
    batchedCellWritesPerSecond: Math.round(batchedCellWritesPerSecond),
    pointReadsPerSecond: Math.round(pointReadsPerSecond),
    pointReadsUncachedPerSecond: pointReadsUncachedPerSecond === null ? null : Math.round(pointReadsUncachedPerSecond),
    scanCellsPerSecond: Math.round(scanCellsPerSecond),
  };
}

export async function runStoreBench(opts: { seconds: number; stores?: readonly string[] }): Promise<{ results: StoreBenchResult[] }> {
  const results: StoreBenchResult[] = [];
  for (const kind of opts.stores ?? ['memory:', 'file:']) {
    if (kind === 'memory:') {
      results.push(await benchOne('memory:', opts.seconds, () => openStore('memory:', { gcIntervalMs: 0 }), null));
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'percolator-bench-store-'));
      const url = `file:${dir}`;
      try {
        results.push(
          await benchOne(
            url,
            opts.seconds,
            () => openStore(url, { gcIntervalMs: 0 }),
            async (s) => {
              await s.close();
              return openStore(url, { gcIntervalMs: 0, cacheBytes: 0 });
            },
          ),
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  return { results };
}

/** Every measured rate of every backend, as a grouped bar chart (log scale: rates span 10^3–10^6). */
export function storeSvg(results: readonly StoreBenchResult[]): string {
  const metrics: [string, (r: StoreBenchResult) => number | null][] = [
    ['row writes (1 client)', (r) => r.rowWritesPerSecond],
    ['row writes (concurrent)', (r) => r.concurrentRowWritesPerSecond],
    ['cell writes (batched)', (r) => r.batchedCellWritesPerSecond],
    ['point reads', (r) => r.pointReadsPerSecond],
    ['point reads (uncached)', (r) => r.pointReadsUncachedPerSecond],
    ['scanned cells', (r) => r.scanCellsPerSecond],
  ];
  return renderBarChart({
    title: 'Raw store throughput (durable writes on file:)',
    yLabel: 'per second',
    categories: metrics.map(([name]) => name),
    series: results.map((r) => ({
      name: r.store.startsWith('file:') ? 'file:' : r.store,
      values: metrics.map(([, get]) => get(r) ?? Number.NaN),
    })),
    logY: true,
    width: 960,
  });
}
