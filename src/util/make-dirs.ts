/**
 * `mkdir -p` that always ends. Node's `mkdir(dir, { recursive: true })` spins forever on a path
 * under a pseudo-filesystem that refuses new entries with ENOENT (procfs: `mkdir /proc/foo` is
 * ENOENT although `/proc` exists, so Node retries the parent, finds it, and tries again). Here
 * each missing level is created once, outermost first, and the first refusal is thrown.
 *
 * Returns: when `dir` exists as a directory (created or not).
 * Throws: the file system's error (ENOENT, EACCES, ENOTDIR, …) for the level that failed.
 * Idempotent: yes; a level another process creates meanwhile (EEXIST) is fine.
 */
import { mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

export async function makeDirs(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let at = resolve(dir); ;) {
    try {
      await stat(at);
      break; // an existing non-directory fails the mkdir below with ENOTDIR
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    missing.push(at);
    const up = dirname(at);
    if (up === at) break;
    at = up;
  }
  for (const d of missing.reverse()) {
    try {
      await mkdir(d);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}
