/**
 * The temporary store a benchmark run works in: a fresh directory for a `file:` store, or none
 * for `memory:`. It is removed once the run settles, whatever it did, so a run never leaves
 * hundreds of megabytes behind in the temporary directory, and never touches a user's data.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Runs `body` with a new directory named after `name` (null when `memory`), then removes it. */
export async function withBenchDir<T>(memory: boolean, name: string, body: (dir: string | null) => Promise<T>): Promise<T> {
  const dir = memory ? null : await mkdtemp(join(tmpdir(), `percolator-bench-${name}-`));
  try {
    return await body(dir);
  } finally {
    if (dir !== null) await rm(dir, { recursive: true, force: true });
  }
}

/** The URL of the store in `withBenchDir`'s directory: `memory:` when there is none. */
export function benchStoreUrl(dir: string | null): string {
  return dir === null ? 'memory:' : `file:${dir}`;
}
