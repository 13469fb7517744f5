// The cost of an observer run: N rows loaded by L concurrent loader transactions, each change
// observed by a chain of two observers (src:v → dst:v → fin:v, each run reading one cell and
// writing one), on a fresh `file:` store (or STORE=memory:). Prints the wall time and the
// process's CPU time (every thread) per row and per observer run, until quiescence. A measurement
// harness, not a benchmark of record (BENCHMARKS.md says how it was used).
//
//   npm run build && N=20000 node scripts/observer-chain.mjs        [L=16] [THREADS=16] [DIST=path/to/dist]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const DIST = process.env.DIST ?? new URL('../dist', import.meta.url).pathname;
const { Percolator } = await import(DIST + '/index.js');
const N = Number(process.env.N ?? 20000);
const L = Number(process.env.L ?? 16);
const THREADS = Number(process.env.THREADS ?? 16);

const dir = mkdtempSync(join(tmpdir(), 'observer-chain-'));
const db = await Percolator.open({ store: process.env.STORE ?? `file:${dir}` });
await db.createTable('t');
const copy = (from, to) => async (tx, row) => {
  tx.set('t', row, to, (await tx.get('t', row, from)) ?? '');
};
const worker = db
  .worker({ threads: THREADS })
  .observe('src:v', 'copy-dst', copy('src:v', 'dst:v'))
  .observe('dst:v', 'copy-fin', copy('dst:v', 'fin:v'));
await worker.start();

async function phase(from, count) {
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: L }, async () => {
      while (next < count) {
        const i = from + next++;
        await db.transaction(async (tx) => tx.set('t', `row${String(i).padStart(8, '0')}`, 'src:v', `value of row ${i}`));
      }
    }),
  );
  await db.waitForQuiescence({ timeoutMs: 600_000 });
  const u = process.cpuUsage(cpu);
  const ms = performance.now() - t0;
  return {
    rowsPerSecond: Math.round((count * 1000) / ms),
    cpuUsPerRow: Math.round((u.user + u.system) / count),
    cpuUsPerRun: Math.round((u.user + u.system) / (2 * count)),
  };
}

try {
  await phase(0, 1000); // warm-up
  let from = 1000;
  for (let k = 0; k < 3; k++, from += N) console.log(JSON.stringify(await phase(from, N)));
  console.log(JSON.stringify({ metrics: worker.metrics }));
} finally {
  await worker.stop();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
