/**
 * Emptying a `file:` store's directory for a fresh start (`percolator demo` without `--keep`, through
 * `runWebIndex`; the benchmarks work in fresh temporary directories).
 *
 * Invariants — a directory is emptied only when nothing but a store could be lost:
 * - Every entry must be one the embedded store writes: LevelDB's files (CURRENT, LOCK, LOG,
 *   LOG.old, MANIFEST-N, N.log, N.ldb, N.sst, N.dbtmp, the `lost` folder of a repair) and ours
 *   (level-seal.ts's seal, level-engine.ts's corruption marker). One other entry and nothing is
 *   removed: NOT_A_STORE, naming it. (A directory of another program's LevelDB passes: the files
 *   are the same; what is refused is a directory of anything else, e.g. `--data .`.)
 * - A directory some process has open (its LevelDB lock held: /proc/locks, level-lock.ts, or
 *   where there is none, LevelDB refusing to open it) is refused with
 *   STORE_LOCKED: removing files under a running store would lose its acknowledged writes while
 *   it goes on writing to unlinked files.
 * - The directory itself is kept (it may be a mount point or have permissions of its own); a
 *   missing one is not an error, a path that is not a directory is NOT_A_STORE.
 *
 * Not atomic: a crash midway leaves some of the store's files, which the next removal takes.
 */
import { access, lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { StoreError } from '../errors.js';
import { ioError, mapError } from './level-errors.js';
import { heldError, lockHolder, lockedError } from './level-lock.js';
import { isStoreEntry } from './store-files.js';

/**
 * How to tell whether a process has the store open: `proc` reads /proc/locks (Linux: no side
 * effect); `open` opens the database with LevelDB, which fails while another holder has it (and
 * replays its log, harmless to a store about to be removed); `auto` is `proc` where /proc/locks
 * exists, else `open`.
 */
export type LockProbe = 'auto' | 'proc' | 'open';

/**
 * Removes the store in `dir`, keeping the directory. Returns how many entries it removed.
 * Throws NOT_A_STORE (a foreign entry, or not a directory; nothing removed), STORE_LOCKED (open in
 * a process; nothing removed), IO_ERROR. Idempotent.
 */
export async function removeStoreDir(dir: string, probe: LockProbe = 'auto'): Promise<number> {
  let entries: string[];
  try {
    if (!(await lstat(dir)).isDirectory()) {
      throw new StoreError('NOT_A_STORE', `${dir} is not a directory; the store was not removed`, { dir });
    }
    entries = await storeEntries(dir);
  } catch (e) {
    if (e instanceof StoreError) throw e;
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw ioError(`cannot read ${dir}`, dir, e);
  }
  // Listed again after the probe: the `open` probe's recovery writes files of its own.
  if (await refuseIfOpen(dir, entries, probe))
    entries = await storeEntries(dir).catch((e: unknown) => {
      throw e instanceof StoreError ? e : ioError(`cannot read ${dir}`, dir, e);
    });
  for (const name of entries) {
    try {
      await rm(join(dir, name), { recursive: true, force: true });
    } catch (e) {
      throw ioError(`cannot remove ${join(dir, name)}`, dir, e);
    }
  }
  return entries.length;
}

/** The directory's entries, all of them the store's (else NOT_A_STORE). */
async function storeEntries(dir: string): Promise<string[]> {
  const entries = await readdir(dir);
  const foreign = entries.filter((name) => !isStoreEntry(name)).sort();
  if (foreign.length > 0) {
    throw new StoreError(
      'NOT_A_STORE',
      `${dir} holds files the store did not write (${foreign.slice(0, 3).join(', ')}${foreign.length > 3 ? ', …' : ''}); nothing was removed — name another directory`,
      { dir, foreign: foreign.slice(0, 20) },
    );
  }
  return entries;
}

/** Throws STORE_LOCKED if a process has the store open; returns whether the probe opened it (and so may have written files). */
async function refuseIfOpen(dir: string, entries: readonly string[], probe: LockProbe): Promise<boolean> {
  const useProc =
    probe === 'proc' ||
    (probe === 'auto' &&
      (await access('/proc/locks').then(
        () => true,
        () => false,
      )));
  if (useProc) {
    const holder = await lockHolder(dir);
    if (holder !== null) throw await heldError(dir, holder, '; nothing was removed');
    return false;
  }
  if (!entries.includes('CURRENT')) return false; // no database LevelDB could open, so none open
  const db = new ClassicLevel(dir, { createIfMissing: false });
  try {
    await db.open();
  } catch (e) {
    if (mapError(e, dir, 'open', false).code === 'STORE_LOCKED') throw lockedError(dir, 'its lock is held; nothing was removed');
    // Anything else (a damaged database) is no reason to keep files the caller wants gone.
    return true;
  }
  await db.close();
  return true;
}
