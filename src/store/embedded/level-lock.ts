/**
 * Who holds a LevelDB directory. LevelDB locks DIR/LOCK with fcntl(F_SETLK), which Node cannot
 * call; on Linux the kernel lists POSIX locks in /proc/locks. Elsewhere the probe says "unknown"
 * (null) and LevelDB's own LEVEL_LOCKED remains the authority when the directory is opened.
 *
 * A probe is a moment's answer: a process may lock the directory just after it. Callers use it to
 * refuse early with a clear error (an open, a removal), never as a lock of their own.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { StoreError } from '../errors.js';

/** The pid holding `dir`'s LevelDB lock (this process's own if it has the store open), or null: none, or unknown. */
export async function lockHolder(dir: string): Promise<number | null> {
  let locks: string;
  let st: { ino: number; dev: number };
  try {
    st = await stat(join(dir, 'LOCK'));
    locks = await readFile('/proc/locks', 'utf8');
  } catch {
    return null;
  }
  const major = Math.floor(st.dev / 256) & 0xfff;
  const minor = (st.dev & 0xff) | (Math.floor(st.dev / 4096) & 0xfff00);
  for (const line of locks.split('\n')) {
    // "1: POSIX  ADVISORY  WRITE 12345 fd:01:1234567 0 EOF" (blocked waiters have "->")
    const m = /^\d+:\s+POSIX\s+\S+\s+\S+\s+(\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line);
    if (m === null) continue;
    if (Number(m[4]) === st.ino && Number.parseInt(m[2], 16) === major && Number.parseInt(m[3], 16) === minor) {
      return Number(m[1]);
    }
  }
  return null;
}

export function lockedError(dir: string, why: string, details: Record<string, unknown> = {}): StoreError {
  return new StoreError('STORE_LOCKED', `the store at ${dir} is open in another process or engine (${why})`, { dir, ...details });
}

/**
 * STORE_LOCKED for a directory `pid` holds, saying what that process is (Linux: its command line)
 * and, when it is a `percolator serve`, how to reach the store anyway: through that server — the
 * user who meets this most is one running `get`/`scan`/`worker` on the directory a server holds.
 * A `percolator demo --serve` holds its store while it serves: its search page is the way in. A
 * `percolator worker` on a `file:` store shuts out the writers whose changes it is there to process
 * (and `percolator wait`): the store is to be served, and everyone to go through the server.
 */
export async function heldError(dir: string, pid: number, suffix = ''): Promise<StoreError> {
  let command: string | null = null;
  try {
    command = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean).join(' ').slice(0, 300) || null;
  } catch {
    // Gone already, or not Linux: the pid alone.
  }
  const serve = command !== null && /(^|[\s/])(percolator|main\.js) serve(\s|$)/.test(command);
  const demo = command !== null && /(^|[\s/])(percolator|main\.js) demo\s(.*\s)?--serve(\s|$)/.test(command);
  const worker = command !== null && /(^|[\s/])(percolator|main\.js) worker(\s|$)/.test(command);
  const why =
    `held by process ${pid}${command === null ? '' : `: ${command}`}${suffix}` +
    (serve
      ? '; a percolator serve holds it: reach the store through the server, --store bigtable://HOST:PORT (the clientUrl of its listening line)'
      : demo
        ? '; a percolator demo --serve holds it while it serves: search on its search page (the URL its last line printed), or stop it first'
        : worker
          ? '; a percolator worker on a file: store holds it, so nothing else can write to it or wait on it: serve the store (percolator serve --data DIR) and give its clientUrl, bigtable://HOST:PORT, to the worker, the writers and wait'
          : '');
  return lockedError(dir, why, { holderPid: pid, holderCommand: command });
}
