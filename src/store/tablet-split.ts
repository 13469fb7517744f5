/**
 * Where a tablet splits: from the engine's size estimates when it has them and they cover the
 * tablet (tablet-split-bisect.ts: a few dozen index lookups), else by reading its rows
 * (tablet-split-point.ts: two streaming passes, memory independent of the tablet's size).
 *
 * Read-only over the engine, and approximate by design where estimated: tablet boundaries only
 * place work (scanners, samples), so any key strictly inside the tablet is a valid answer, and
 * writes landing meanwhile do not matter. The caller (EngineStore) inserts the boundary.
 */
import { compareBytes } from './bytes.js';
import { rowKeyFrom, rowKeyOf } from './key-layout.js';
import type { KvEngine, KvEntry, KvRange } from './kv-engine.js';
import { type TabletProbe, bisectSplitPoint } from './tablet-split-bisect.js';
import { type RowSize, findSplitPoint } from './tablet-split-point.js';

/** One locality group's key range of a tablet. */
export interface GroupRange extends KvRange {
  readonly prefix: Uint8Array;
}

/** Where a tablet splits and how the point was found. */
export interface TabletSplit {
  readonly key: Uint8Array;
  /** The share of the tablet's bytes left of `key`, in (0, 1). */
  readonly leftShare: number;
  readonly how: 'estimated' | 'measured';
}

/**
 * The split point of the tablet whose group ranges are `ranges`, starting at row `start`, charged
 * `charged` bytes; null when it cannot be split (one row, or empty).
 */
export async function findTabletSplit(
  engine: KvEngine,
  ranges: readonly GroupRange[],
  start: Uint8Array,
  charged: number,
): Promise<TabletSplit | null> {
  return (await estimateSplit(engine, ranges, start, charged)) ?? (await measureSplit(engine, ranges));
}

/**
 * The split point by the engine's estimates. Null when the engine has no estimates, or when its
 * files hold less than an eighth of what the tablet was charged (most of it still in the
 * memtable: the estimate would place the split by a few of its rows).
 */
async function estimateSplit(
  engine: KvEngine,
  ranges: readonly GroupRange[],
  start: Uint8Array,
  charged: number,
): Promise<TabletSplit | null> {
  if (engine.approximateSize === undefined) return null;
  const sizeOf = engine.approximateSize.bind(engine);
  const probe: TabletProbe = {
    size: async (from, to) => {
      let n = 0;
      for (const r of ranges) n += await sizeOf(rowKeyOf(r.prefix, from), rowKeyOf(r.prefix, to));
      return n;
    },
    firstRowFrom: async (key) =>
      extremeRow(
        engine,
        ranges.map((r) => ({ gte: rowKeyOf(r.prefix, key), lt: r.lt })),
        -1,
      ),
    lastRow: async () =>
      extremeRow(
        engine,
        ranges.map((r) => ({ gte: r.gte, lt: r.lt, reverse: true })),
        1,
      ),
  };
  const found = await bisectSplitPoint(probe, start, charged / 8);
  if (found === null) return null;
  return { key: found.key, leftShare: found.leftShare, how: 'estimated' };
}

/** The smallest (sign -1) or largest (sign 1) row key among each range's first entry (a copy). */
async function extremeRow(engine: KvEngine, ranges: readonly KvRange[], sign: 1 | -1): Promise<Uint8Array | null> {
  let out: Uint8Array | null = null;
  for (const r of ranges) {
    for await (const batch of engine.iterate({ ...r, expect: 1, keysOnly: true })) {
      const row = rowKeyFrom((batch[0] as KvEntry).key);
      if (out === null || compareBytes(row, out) * sign > 0) out = Uint8Array.prototype.slice.call(row) as Uint8Array;
      break;
    }
  }
  return out;
}

/** The exact split point, by reading every row of the tablet twice (the total, then the point). */
async function measureSplit(engine: KvEngine, ranges: readonly GroupRange[]): Promise<TabletSplit | null> {
  let total = 0;
  for (const r of ranges)
    for await (const batch of engine.iterate(r)) for (const e of batch) total += e.value.byteLength + e.key.byteLength;
  const point = await findSplitPoint(
    ranges.map((r) => rowSizes(engine, r)),
    total,
  );
  return point === null ? null : { key: point.key, leftShare: point.left / total, how: 'measured' };
}

/** The rows of one group's key range with their sizes (key views into the engine's batches). */
async function* rowSizes(engine: KvEngine, range: KvRange): AsyncGenerator<RowSize> {
  for await (const batch of engine.iterate(range)) {
    for (const e of batch) yield [rowKeyFrom(e.key), e.value.byteLength + e.key.byteLength];
  }
}
