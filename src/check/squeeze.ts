/**
 * A disk that fills up and empties, for the crash checkers' `--full-disk` modes: a process's
 * file-size limit (RLIMIT_FSIZE, set through util-linux `prlimit`: Node has no setrlimit) is
 * lowered, again and again, to just above the size of a store's current LevelDB log, so the next
 * appends, flushes and compactions fail part-way as on a full disk (EFBIG; Node ignores SIGXFSZ),
 * and raised again after a random 20–220 ms.
 *
 * Only the soft limit moves (the hard one stays unlimited), so a process may squeeze itself and
 * give the room back. The limit is per file: files that stay small (the MANIFEST, CURRENT) are
 * squeezed only when they would outgrow the current log.
 */
import { execFile } from 'node:child_process';
import { logFiles } from '../store/embedded/store-files.js';
import { atomicRowsOf, type Store } from '../store/store.js';

/** Whether `prlimit` can be run here. */
export function hasPrlimit(): Promise<boolean> {
  return new Promise((res) => execFile('prlimit', ['--version'], (err) => res(err === null)));
}

/** Sets process `pid`'s soft file-size limit; false if prlimit failed (the process is gone). */
export function setFileSizeLimit(pid: number, bytes: number | 'unlimited'): Promise<boolean> {
  return new Promise((res) => execFile('prlimit', ['--pid', String(pid), `--fsize=${bytes}:unlimited`], (err) => res(err === null)));
}

/** The size of the largest log file in `dir` (0 if none, or if it cannot be listed). */
async function largestLog(dir: string): Promise<number> {
  const logs = await logFiles(dir).catch(() => new Map<string, number>());
  return Math.max(0, ...logs.values());
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Squeezes process `pid` (its store in `dir`) until `done()`; `released` runs each time the room
 * is given back. Returns how often it squeezed; the limit is unlimited when it returns.
 */
export async function squeeze(pid: number, dir: string, done: () => boolean, released?: () => Promise<void>): Promise<number> {
  let squeezes = 0;
  while (!done()) {
    await sleep(20 + Math.random() * 200);
    if (done()) break;
    if (!(await setFileSizeLimit(pid, (await largestLog(dir)) + Math.floor(Math.random() * 16_384)))) break;
    squeezes++;
    await sleep(20 + Math.random() * 200);
    if (!(await setFileSizeLimit(pid, 'unlimited'))) break;
    await released?.();
  }
  await setFileSizeLimit(pid, 'unlimited');
  return squeezes;
}

/** Squeezes this process's own `file:` store at `url` until `done()`, asking it to resume writing each time the room is back. */
export function squeezeOwnStore(url: string, store: Store, done: () => boolean): Promise<number> {
  const atomic = atomicRowsOf(store);
  return squeeze(process.pid, url.slice('file:'.length), done, async () => void (await atomic?.resumeWrites()));
}
