/**
 * Whether process `pid` exists (this process counts). Signal 0 probes without signalling; EPERM
 * means it exists under another user. Used to tell files of live processes from leftovers of
 * crashed ones (the oracle's mark file, the mmap ballast's directories).
 */
export function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
