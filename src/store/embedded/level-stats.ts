/**
 * LevelDB's own compaction counters (`leveldb.stats`), parsed.
 *
 * Why: the engine's background compaction shares the machine's cores with the JS thread, and how
 * much it rewrites is set by the engine's options (the memtable's size above all), not by anything
 * the store counts itself. LevelDB 1.20 prints one line per level that has files or has ever been
 * compacted into:
 *
 *   Level  Files Size(MB) Time(sec) Read(MB) Write(MB)
 *     0        1        6         1        0        65
 *
 * Level 0's Write is what memtable flushes wrote there (LevelDB places a flush's table deeper, at
 * most at level 2, when it overlaps nothing in the levels it skips, and counts it there); a deeper
 * level's Read and Write are what the compactions into it read and wrote. Time is the wall time of
 * that work on LevelDB's background thread; sizes are MiB (LevelDB divides by 1 048 576); both are
 * rounded to whole numbers. Counters start at zero with each open. Lines that are not a level row are
 * ignored, so a text with no level rows (a fresh database) parses to no levels.
 */

export interface LevelRow {
  readonly level: number;
  readonly files: number;
  readonly sizeMiB: number;
  readonly seconds: number;
  readonly readMiB: number;
  readonly writtenMiB: number;
}

/** Totals over the levels: what flushes wrote, what compactions read and wrote, and their time. */
export interface LevelCompaction {
  readonly flushedMiB: number;
  readonly compactionReadMiB: number;
  readonly compactionWrittenMiB: number;
  readonly seconds: number;
  readonly levels: readonly LevelRow[];
}

const ROW = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$/;

export function parseLevelStats(text: string): LevelCompaction {
  const levels: LevelRow[] = [];
  let flushedMiB = 0;
  let compactionReadMiB = 0;
  let compactionWrittenMiB = 0;
  let seconds = 0;
  for (const line of text.split('\n')) {
    const m = ROW.exec(line);
    if (m === null) continue;
    const n = (i: number) => Number(m[i]);
    const row: LevelRow = { level: n(1), files: n(2), sizeMiB: n(3), seconds: n(4), readMiB: n(5), writtenMiB: n(6) };
    levels.push(row);
    seconds += row.seconds;
    if (row.level === 0) {
      flushedMiB += row.writtenMiB;
    } else {
      compactionReadMiB += row.readMiB;
      compactionWrittenMiB += row.writtenMiB;
    }
  }
  return { flushedMiB, compactionReadMiB, compactionWrittenMiB, seconds, levels };
}

/**
 * `after − before`, level by level (levels first seen in `after` count from zero). A level's files
 * and size are gauges, not counters: they are `after`'s.
 */
export function levelStatsBetween(before: LevelCompaction, after: LevelCompaction): LevelCompaction {
  const levels = after.levels.map((a) => {
    const b = before.levels.find((x) => x.level === a.level);
    return b === undefined
      ? a
      : { ...a, seconds: a.seconds - b.seconds, readMiB: a.readMiB - b.readMiB, writtenMiB: a.writtenMiB - b.writtenMiB };
  });
  return {
    flushedMiB: after.flushedMiB - before.flushedMiB,
    compactionReadMiB: after.compactionReadMiB - before.compactionReadMiB,
    compactionWrittenMiB: after.compactionWrittenMiB - before.compactionWrittenMiB,
    seconds: after.seconds - before.seconds,
    levels,
  };
}
