// The cost of a row written through a commit: transactions each writing R new one-cell rows (a
// posting-heavy export's shape), C of them at once, on a fresh `file:` store (or STORE=memory:).
// Prints, per phase of TX transactions, the wall time and the process's CPU time (every thread)
// per row written. A measurement harness, not a benchmark of record: BENCHMARKS.md (2026-11-29,
// sixth session) alternates it between two builds with DIST.
//
//   npm run build && TX=8000 C=32 node scripts/fan-out.mjs        [R=30] [DIST=path/to/dist]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const DIST = process.env.DIST ?? new URL('../dist', import.meta.url).pathname;
const { Percolator } = await import(DIST + '/index.js');
const R = Number(process.env.R ?? 30);
const TX = Number(process.env.TX ?? 4000);
const C = Number(process.env.C ?? 8);

const dir = mkdtempSync(join(tmpdir(), 'fan-out-'));
const db = await Percolator.open({ store: process.env.STORE ?? `file:${dir}` });
await db.createTable('index');
let done = 0;

async function one(i) {
  await db.transaction(async (tx) => {
    for (let r = 0; r < R; r++) tx.set('index', `term${(i * 31 + r) % 20000}\u0000c${i}`, 'p:score', String(r));
  });
}

async function phase(count) {
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: C }, async () => {
      while (next < count) await one(done + next++);
    }),
  );
  done += count;
  const u = process.cpuUsage(cpu);
  return { usPerRowWall: ((performance.now() - t0) * 1000) / (count * R), cpuUsPerRow: (u.user + u.system) / (count * R) };
}

try {
  await phase(500); // warm-up
  for (let k = 0; k < 3; k++) console.log(JSON.stringify(await phase(TX)));
} finally {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
