/**
 * Row atomicity of the `file:` store under the conditions of the GC stress runs: a row cache far
 * smaller than the rows (constant eviction and refill from the engine), deferred and durable
 * writes mixed (the LevelDB overlay), mutations spanning two locality groups, and scans running
 * all along (snapshots waiting for deferred groups). Sixteen writers increment per-row counters
 * with compare-and-set: a stale row read by a conditional mutation would let two writers win
 * with the same expected value (a lost update), and a lost cell would show as a missing payload.
 * Run twice: evicted rows forgotten, and evicted rows kept encoded in the cache's second tier
 * (nearly every read then promotes a row from it).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { openStore } from './open-store.js';
import type { Mutation, RowFilter } from './types.js';

const ROWS = 20;
const N = Buffer.from('n');
const D = Buffer.from('d');
const counter = (n: number) => Buffer.from(String(n).padStart(10, '0'));
const latestCounter: RowFilter = { chain: [{ familyNameRegexFilter: 'f' }, { cellsPerColumnLimitFilter: 1 }] };

it.each([
  ['evicted rows forgotten', 0],
  ['evicted rows kept encoded', 1024 * 1024],
])('conditional increments never lose an update or a cell with a tiny row cache and deferred writes (%s)', async (_, encodedCacheBytes) => {
  const dir = await mkdtemp(join(tmpdir(), 'percolator-cas-'));
  const store = await openStore(`file:${dir}`, { cacheBytes: 8 * 1024, encodedCacheBytes, gcIntervalMs: 0 });
  try {
    await store.createTable('t', { families: { f: {}, g: {}, n: { localityGroup: 'side' } } });
    for (let r = 0; r < ROWS; r++) {
      await store.mutateRow('t', Buffer.from(`r${r}`), [
        { setCell: { familyName: 'f', columnQualifier: N, timestampMicros: 1, value: counter(0) } },
      ]);
    }
    const wins = new Array<number>(ROWS).fill(0);
    const missing: string[] = [];
    const payload = Buffer.alloc(2000, 1);
    const deadline = Date.now() + 3_000;
    const writer = async () => {
      for (let i = 1; Date.now() < deadline; i++) {
        const r = Math.floor(Math.random() * ROWS);
        const key = Buffer.from(`r${r}`);
        const row = await store.readRow('t', key, latestCounter);
        const cur = Number(Buffer.from(row?.cells[0]?.value ?? counter(-1)).toString());
        const ts = 1_000 + cur + 1;
        const mutations: Mutation[] = [
          { setCell: { familyName: 'f', columnQualifier: N, timestampMicros: ts, value: counter(cur + 1) } },
          { setCell: { familyName: 'g', columnQualifier: D, timestampMicros: ts, value: payload } },
        ];
        if (Math.random() < 0.3) mutations.push({ setCell: { familyName: 'n', columnQualifier: D, timestampMicros: ts, value: payload } });
        if (Math.random() < 0.3) {
          mutations.push({
            deleteFromColumn: { familyName: 'g', columnQualifier: D, timeRange: { startTimestampMicros: 0, endTimestampMicros: ts - 3 } },
          });
        }
        const won = await store.checkAndMutateRow('t', key, {
          predicateFilter: { chain: [latestCounter, { valueRegexFilter: counter(cur) }] },
          trueMutations: mutations,
          durability: Math.random() < 0.7 ? 'deferred' : 'durable',
        });
        if (won) {
          wins[r] = (wins[r] as number) + 1;
          const d = await store.readRow('t', key, {
            chain: [{ familyNameRegexFilter: 'g' }, { timestampRangeFilter: { startTimestampMicros: ts, endTimestampMicros: ts + 1 } }],
          });
          if (d === null) missing.push(`r${r}@${ts}`);
        }
        // Let the engine's group commits (setImmediate) run between bursts.
        if (i % 16 === 0) await new Promise<void>((res) => setImmediate(res));
      }
    };
    const scanner = async () => {
      while (Date.now() < deadline) for await (const _ of store.readRows('t', { filter: { familyNameRegexFilter: 'f|g' } })) void _;
    };
    await Promise.all([...Array.from({ length: 16 }, writer), scanner()]);
    expect(missing).toEqual([]);
    for (let r = 0; r < ROWS; r++) {
      const row = await store.readRow('t', Buffer.from(`r${r}`), latestCounter);
      expect(Number(Buffer.from(row?.cells[0]?.value ?? counter(-1)).toString())).toBe(wins[r]);
    }
    expect(wins.reduce((a, b) => a + b, 0)).toBeGreaterThan(500);
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
});
