/**
 * Where to split a tablet: the first row at which the rows before it hold at least half of the
 * tablet's bytes (a row's bytes summed over every locality group), so both halves are non-empty.
 * Exact, and it reads the whole tablet: the store uses it only when the engine cannot estimate
 * sizes, or its estimate misses most of the tablet (tablet-split-bisect.ts otherwise).
 *
 * Streaming, in memory independent of the tablet's size: the caller passes the tablet's total
 * (a first pass) and, per locality group, that group's rows in key order with their sizes; the
 * groups are merged by row key. Materializing every row's key and size instead (as this once did)
 * held ~170 MB for a 64 MiB tablet of ~440 000 small rows — the transient heap spikes that took the
 * 100 000-document web index over 1 GiB (BENCHMARKS.md).
 *
 * Row keys may be views into the caller's buffers; the returned key is a copy.
 */
import { compareBytes } from './bytes.js';

/** One row of one locality group: its key and its size in bytes. */
export type RowSize = readonly [key: Uint8Array, bytes: number];

export interface SplitPoint {
  /** The first row of the right half (a copy). */
  readonly key: Uint8Array;
  /** Bytes of the rows before `key`. */
  readonly left: number;
}

/** null when the tablet has fewer than two rows (nothing to split). */
export async function findSplitPoint(groups: readonly AsyncIterable<RowSize>[], total: number): Promise<SplitPoint | null> {
  const its = groups.map((g) => g[Symbol.asyncIterator]());
  const heads: (RowSize | null)[] = await Promise.all(its.map((it) => next(it)));
  try {
    let rows = 0;
    let acc = 0;
    let last: RowSize | null = null;
    for (;;) {
      // The smallest key among the group heads is the next row; sum its size over every group.
      let key: Uint8Array | null = null;
      for (const h of heads) if (h !== null && (key === null || compareBytes(h[0], key) < 0)) key = h[0];
      if (key === null) break;
      let size = 0;
      for (let i = 0; i < heads.length; i++) {
        const h = heads[i] as RowSize | null;
        if (h === null || compareBytes(h[0], key) !== 0) continue;
        size += h[1];
        heads[i] = await next(its[i] as AsyncIterator<RowSize>);
      }
      if (rows >= 1 && acc >= total / 2) return { key: copy(key), left: acc };
      rows++;
      acc += size;
      last = [key, size];
    }
    // Half never reached before the last row: split off the last row.
    if (rows < 2 || last === null) return null;
    return { key: copy(last[0]), left: acc - last[1] };
  } finally {
    await Promise.all(its.map((it) => it.return?.()));
  }
}

/** A copy (Buffer's own slice() would return a view). */
function copy(key: Uint8Array): Uint8Array {
  return Uint8Array.prototype.slice.call(key);
}

async function next(it: AsyncIterator<RowSize>): Promise<RowSize | null> {
  const r = await it.next();
  return r.done === true ? null : r.value;
}
