/**
 * Whether process `pid` exists (this process counts). Signal 0 probes without signalling; EPERM
 * means it exists under another user. Used to tell files of live processes from leftovers of
 * crashed ones (the oracle's mark file, the mmap ballast's directories).
 *
 * A zombie — killed, not yet reaped by its parent — answers signal 0 but holds nothing any more;
 * in a container without an init that reaps, a crashed process stays one. On Linux its state in
 * /proc says so, and it counts as gone.
 */
import { readFileSync } from 'node:fs';

export function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return false; // no /proc (not Linux), or it just went: the signal said it was there
  }
  // "pid (comm) S …": comm may hold spaces and parentheses, so the state follows the last ')'.
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
}
