// The cost of a row written through a commit: transactions each writing R new one-cell rows (a
// posting-heavy export's shape), C of them at once, on a fresh `file:` store (or STORE=memory:).
// Prints, per phase of TX transactions, the wall time and the process's CPU time (every thread)
// per row written. A measurement harness, not a benchmark of record: BENCHMARKS.md (2026-11-29,
// sixth session) alternates it between two builds with DIST.
//
//   npm run build && TX=8000 C=32 node scripts/fan-out.mjs        [R=30] [DIST=path/to/dist]
import { timedPhase, withScratchDb } from './harness.mjs';

const R = Number(process.env.R ?? 30);
const TX = Number(process.env.TX ?? 4000);
const C = Number(process.env.C ?? 8);

await withScratchDb('fan-out', async (db) => {
  await db.createTable('index');
  let done = 0;
  const phase = async (count) => {
    const from = done;
    const t = await timedPhase(count, C, (i) =>
      db.transaction(async (tx) => {
        for (let r = 0; r < R; r++) tx.set('index', `term${((from + i) * 31 + r) % 20000}\u0000c${from + i}`, 'p:score', String(r));
      }),
    );
    done += count;
    return { usPerRowWall: (t.ms * 1000) / (count * R), cpuUsPerRow: t.cpuUs / (count * R) };
  };
  await phase(500); // warm-up
  for (let k = 0; k < 3; k++) console.log(JSON.stringify(await phase(TX)));
});
