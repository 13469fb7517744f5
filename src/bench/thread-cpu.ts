/**
 * CPU time of the process's main (JS) thread alone, from Linux's `/proc/self/task/<pid>/stat`.
 *
 * Why: `process.cpuUsage()` counts every thread — LevelDB's compaction, V8's collector helpers,
 * libuv's pool — and the event loop's utilization counts time the JS thread was busy but waiting
 * for a core. Only this says how much of a core the JS thread actually got, and so whether the
 * other threads took it (Node 20 has no `process.threadCpuUsage()`).
 *
 * Returns milliseconds of user + system time, or null where `/proc` has no such file (not Linux).
 * The kernel counts in clock ticks of 1/100 s (USER_HZ, 100 on every Linux architecture Node
 * runs on), so readings are 10 ms coarse: difference two readings seconds apart.
 */
import { readFileSync } from 'node:fs';

const USER_HZ = 100;

export function mainThreadCpuMs(): number | null {
  return procStatCpuMs(`/proc/self/task/${process.pid}/stat`);
}

/** User + system ms from a `/proc` stat file — a process's (`/proc/PID/stat`) or a thread's — or null where there is none. */
export function procStatCpuMs(path: string): number | null {
  let text: string;
  try {
    text = readFileSync(path, 'latin1');
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  return ((utime + stime) * 1000) / USER_HZ;
}
