import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { levelStatsBetween, parseLevelStats } from './level-stats.js';
import { openLevelEngine } from './level-engine.js';

// What LevelDB 1.20 printed for `leveldb.stats` 30 s into a web-index run.
const SAMPLE = `                               Compactions
Level  Files Size(MB) Time(sec) Read(MB) Write(MB)
--------------------------------------------------
  0        1        6         1        0        65
  1        2        8         1       90        73
  2       10       36         1      104       106
`;

describe('parseLevelStats', () => {
  it('reads each level row and totals flushes apart from compactions', () => {
    const s = parseLevelStats(SAMPLE);
    expect(s.levels).toEqual([
      { level: 0, files: 1, sizeMiB: 6, seconds: 1, readMiB: 0, writtenMiB: 65 },
      { level: 1, files: 2, sizeMiB: 8, seconds: 1, readMiB: 90, writtenMiB: 73 },
      { level: 2, files: 10, sizeMiB: 36, seconds: 1, readMiB: 104, writtenMiB: 106 },
    ]);
    expect(s.flushedMiB).toBe(65);
    expect(s.compactionReadMiB).toBe(194);
    expect(s.compactionWrittenMiB).toBe(179);
    expect(s.seconds).toBe(3);
  });

  it('parses a header with no level rows (a fresh database) to no levels', () => {
    const s = parseLevelStats(SAMPLE.split('\n').slice(0, 3).join('\n'));
    expect(s).toEqual({ flushedMiB: 0, compactionReadMiB: 0, compactionWrittenMiB: 0, seconds: 0, levels: [] });
  });

  it('differences two readings level by level, counting a level new since the first from zero', () => {
    const before = parseLevelStats(SAMPLE);
    const after = parseLevelStats(
      SAMPLE.replace('  2       10       36         1      104       106', '  2       12       40         5      300       290') +
        '  3        4       20         2       50        48\n',
    );
    const d = levelStatsBetween(before, after);
    expect(d.flushedMiB).toBe(0);
    expect(d.compactionReadMiB).toBe(196 + 50);
    expect(d.compactionWrittenMiB).toBe(184 + 48);
    expect(d.seconds).toBe(4 + 2);
    expect(d.levels.find((l) => l.level === 2)).toEqual({ level: 2, files: 12, sizeMiB: 40, seconds: 4, readMiB: 196, writtenMiB: 184 });
    expect(d.levels.find((l) => l.level === 3)?.writtenMiB).toBe(48);
  });
});

describe('LevelEngine.compaction', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('counts what memtable flushes wrote once the memtable fills', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'level-stats-'));
    dirs.push(dir);
    // A 1 MiB memtable: ~4 MiB of values force a few flushes.
    const engine = await openLevelEngine(dir, { writeBufferSize: 1 << 20, verify: 'none', mmapBallast: false });
    try {
      const before = engine.compaction();
      expect(before.flushedMiB).toBe(0);
      // Incompressible values: snappy would shrink a repeating pattern below what rounds to 1 MiB.
      for (let b = 0; b < 16; b++) {
        const ops = [];
        for (let i = 0; i < 64; i++)
          ops.push({ type: 'put' as const, key: new TextEncoder().encode(`k${b * 64 + i}`), value: randomBytes(4096) });
        await engine.write(ops);
      }
      // Flushes run on LevelDB's background thread: wait for them to be counted.
      await vi.waitFor(() => expect(engine.compaction().flushedMiB + engine.compaction().compactionWrittenMiB).toBeGreaterThanOrEqual(2), {
        timeout: 10_000,
        interval: 20,
      });
      expect(engine.compaction().levels.length).toBeGreaterThan(0);
    } finally {
      await engine.close();
    }
  });
});
