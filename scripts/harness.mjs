// What the measurement scripts share: the built files to measure (DIST, e.g. a baseline
// checkout's dist/, to alternate two builds), a scratch database on a fresh `file:` store (or
// STORE=memory:) removed afterwards, and a phase of concurrent tasks timed in wall and CPU time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const DIST = process.env.DIST ?? new URL('../dist', import.meta.url).pathname;

/** Opens a Percolator on a scratch store named after `name`; `run(db)` gets it, and the store is removed after. */
export async function withScratchDb(name, run) {
  const { Percolator } = await import(DIST + '/index.js');
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  const db = await Percolator.open({ store: process.env.STORE ?? `file:${dir}` });
  try {
    return await run(db);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs `count` calls of `one(i)` (i from 0), `concurrency` at a time, then `settle()` if given;
 * returns the wall time (ms) and the process's CPU time (µs, every thread) they took.
 */
export async function timedPhase(count, concurrency, one, settle) {
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await one(next++);
    }),
  );
  await settle?.();
  const u = process.cpuUsage(cpu);
  return { ms: performance.now() - t0, cpuUs: u.user + u.system };
}
