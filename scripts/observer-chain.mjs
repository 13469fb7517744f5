// The cost of an observer run: N rows loaded by L concurrent loader transactions, each change
// observed by a chain of two observers (src:v → dst:v → fin:v, each run reading one cell and
// writing one), on a fresh `file:` store (or STORE=memory:). Prints the wall time and the
// process's CPU time (every thread) per row and per observer run, until quiescence. A measurement
// harness, not a benchmark of record (BENCHMARKS.md says how it was used).
//
//   npm run build && N=20000 node scripts/observer-chain.mjs        [L=16] [THREADS=16] [DIST=path/to/dist]
import { timedPhase, withScratchDb } from './harness.mjs';

const N = Number(process.env.N ?? 20000);
const L = Number(process.env.L ?? 16);
const THREADS = Number(process.env.THREADS ?? 16);

await withScratchDb('observer-chain', async (db) => {
  await db.createTable('t');
  const copy = (from, to) => async (tx, row) => {
    tx.set('t', row, to, (await tx.get('t', row, from)) ?? '');
  };
  const worker = db
    .worker({ threads: THREADS })
    .observe('src:v', 'copy-dst', copy('src:v', 'dst:v'))
    .observe('dst:v', 'copy-fin', copy('dst:v', 'fin:v'));
  await worker.start();
  const phase = async (from, count) => {
    const t = await timedPhase(
      count,
      L,
      (k) => db.transaction(async (tx) => tx.set('t', `row${String(from + k).padStart(8, '0')}`, 'src:v', `value of row ${from + k}`)),
      () => db.waitForQuiescence({ timeoutMs: 600_000 }),
    );
    return {
      rowsPerSecond: Math.round((count * 1000) / t.ms),
      cpuUsPerRow: Math.round(t.cpuUs / count),
      cpuUsPerRun: Math.round(t.cpuUs / (2 * count)),
    };
  };
  try {
    await phase(0, 1000); // warm-up
    let from = 1000;
    for (let k = 0; k < 3; k++, from += N) console.log(JSON.stringify(await phase(from, N)));
    console.log(JSON.stringify({ metrics: worker.metrics }));
  } finally {
    await worker.stop();
  }
});
