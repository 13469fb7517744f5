/**
 * Whether the directory an engine opened is still the one at its path.
 *
 * LevelDB writes through file descriptors it opened long ago: after `rm -rf DIR` (or the
 * directory moved, or replaced by another), its log appends and fsyncs still succeed — into
 * files no path reaches any more, which vanish with the process. An engine that went on
 * acknowledging writes then would lose every one of them at its close, after telling its callers
 * they were durable. So the engine asks this before it acknowledges a group (after the fsync: a
 * removal before it is caught by the question, one after it removed data that was durable where
 * the user kept it) and whenever its health is asked.
 *
 * The identity is LevelDB's own `LOCK` file (device and inode), which LevelDB holds open and never
 * replaces while the database is open: a path that no longer names it, or names another file, means
 * the directory was removed, moved or replaced. One `stat` (~5 µs) per question, synchronous so it
 * sits between the fsync and the acknowledgement with nothing in between.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';

export class DirIdentity {
  private constructor(
    private readonly lockPath: string,
    private readonly dev: number,
    private readonly ino: number,
  ) {}

  /** The identity of `dir` now (its LevelDB is open, so `LOCK` exists); null if it cannot be read. */
  static of(dir: string): DirIdentity | null {
    const lockPath = join(dir, 'LOCK');
    const st = statSync(lockPath, { throwIfNoEntry: false });
    return st === undefined ? null : new DirIdentity(lockPath, st.dev, st.ino);
  }

  /** Why the path no longer names the directory that was opened, or null: it still does. */
  lost(): string | null {
    let st;
    try {
      st = statSync(this.lockPath, { throwIfNoEntry: false });
    } catch (e) {
      // EACCES, ENOTDIR (the directory replaced by a file), ELOOP…: not ours to write into any more.
      return `${this.lockPath} cannot be read (${(e as NodeJS.ErrnoException).code ?? String(e)})`;
    }
    if (st === undefined) return `${this.lockPath} is gone: the directory was removed or moved`;
    if (st.ino !== this.ino || st.dev !== this.dev) return `${this.lockPath} is another file: the directory was replaced`;
    return null;
  }
}
