/**
 * Taking back a `file:` store that a start which then failed created (`percolator serve` or
 * `percolator oracle --store` whose port is taken): the failed start leaves the disk as it found it.
 *
 * `noteNewStoreDir(dir)` looks before the store is opened; `undo()` runs after it was closed.
 *
 * Invariants — only what was not there before is removed:
 * - A directory that held any entry when it was looked at is never touched (`noteNewStoreDir`
 *   returns null): an existing store, or anyone's files, stay as they are.
 * - The store's files go through `removeStoreDir`, which removes nothing at all when the directory
 *   holds an entry the store did not write or a process has the store open (someone who came
 *   meanwhile); directories that were missing are then removed innermost first with `rmdir`, which
 *   removes only an empty directory, stopping at the first one that is not (it holds others' entries).
 * - `undo()` never throws: it runs on the way out of a failure, whose error is the one to report;
 *   what it could not remove stays (a store nobody uses, or an empty directory).
 */
import { readdir, rmdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { removeStoreDir } from './remove-store-dir.js';

export interface NewStoreDir {
  /** The store's directory, absolute. */
  readonly dir: string;
  /** Directories that did not exist, innermost (the store's) first; empty when `dir` existed, empty. */
  readonly missing: readonly string[];
  /** Removes the store this start created, then the directories it created (header). Never throws. */
  undo(): Promise<void>;
}

/**
 * Looks at `dir` before a store is opened there: null when it holds entries (a store or anything
 * else, never to be removed) or cannot be read; else what `undo()` may remove.
 */
export async function noteNewStoreDir(dir: string): Promise<NewStoreDir | null> {
  const abs = resolve(dir);
  const missing: string[] = [];
  for (let at = abs; ;) {
    let entries: string[];
    try {
      entries = await readdir(at);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return null; // not a directory, not readable: not ours to judge
      missing.push(at);
      const up = dirname(at);
      if (up === at) return null;
      at = up;
      continue;
    }
    // The store's own directory must be empty; an ancestor that exists is simply where we stop.
    if (at === abs && entries.length > 0) return null;
    break;
  }
  return {
    dir: abs,
    missing,
    async undo(): Promise<void> {
      try {
        await removeStoreDir(abs);
      } catch {
        return; // someone else's entry, or the store open elsewhere: everything stays
      }
      for (const d of missing) {
        try {
          await rmdir(d);
        } catch {
          return; // not empty (others' entries) or gone: the ones above stay too
        }
      }
    },
  };
}
