/**
 * bisectSplitPoint against a model of LevelDB's estimates: rows in key order, sizes summed and
 * rounded down to whole blocks (an estimate sees block offsets, not rows), over key sets with long
 * shared prefixes and skewed sizes. The split must be a row strictly inside the tablet, near half
 * of its real bytes, in few probes; midKey must always land strictly between its bounds.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../util/seeded-random.js';
import { compareBytes } from './bytes.js';
import { type TabletProbe, bisectSplitPoint, midKey } from './tablet-split-bisect.js';

type Row = readonly [key: Uint8Array, bytes: number];

/** Sizes as an engine estimates them: the rows' bytes before a key, rounded down to a block. */
function modelProbe(rows: readonly Row[], block: number): TabletProbe & { calls: number } {
  const before = (key: Uint8Array): number => {
    let n = 0;
    for (const [k, size] of rows) if (compareBytes(k, key) < 0) n += size;
    return Math.floor(n / block) * block;
  };
  const probe = {
    calls: 0,
    size: async (from: Uint8Array, to: Uint8Array) => {
      probe.calls++;
      return Math.max(0, before(to) - before(from));
    },
    firstRowFrom: async (key: Uint8Array) => rows.find(([k]) => compareBytes(k, key) >= 0)?.[0] ?? null,
    lastRow: async () => rows[rows.length - 1]?.[0] ?? null,
  };
  return probe;
}

function randomKey(rnd: () => number, prefix: string): Uint8Array {
  const tail = Array.from({ length: 1 + Math.floor(rnd() * 12) }, () => Math.floor(rnd() * 256));
  return Uint8Array.from([...Buffer.from(prefix), ...tail]);
}

function sortedRows(rnd: () => number, count: number, prefix: string, skewed: boolean): Row[] {
  const byHex = new Map<string, Row>();
  for (let i = 0; i < count; i++) {
    const key = randomKey(rnd, prefix);
    // Skewed: most rows small, a few a hundred times larger.
    const bytes = skewed && rnd() < 0.02 ? 20_000 + Math.floor(rnd() * 20_000) : 100 + Math.floor(rnd() * 300);
    byHex.set(Buffer.from(key).toString('hex'), [key, bytes]);
  }
  return [...byHex.values()].sort((a, b) => compareBytes(a[0], b[0]));
}

describe('midKey', () => {
  it('returns a key strictly between its bounds, or null only when hi is lo followed by zero bytes', () => {
    const rnd = mulberry32(11);
    const short = () => Uint8Array.from({ length: Math.floor(rnd() * 4) }, () => [0, 1, 0x7f, 0xff][Math.floor(rnd() * 4)] as number);
    for (let trial = 0; trial < 5000; trial++) {
      let lo = short();
      // Often hi extends lo, so prefixes and zero padding are exercised.
      let hi = rnd() < 0.5 ? Uint8Array.from([...lo, ...short()]) : short();
      const c = compareBytes(lo, hi);
      if (c === 0) continue;
      if (c > 0) [lo, hi] = [hi, lo];
      const mid = midKey(lo, hi);
      if (mid === null) {
        // None found: hi is lo followed by zero bytes.
        expect(hi.length).toBeGreaterThan(lo.length);
        expect(Buffer.from(hi.subarray(0, lo.length)).equals(Buffer.from(lo))).toBe(true);
        expect(hi.subarray(lo.length).every((x) => x === 0)).toBe(true);
      } else {
        expect(compareBytes(lo, mid)).toBeLessThan(0);
        expect(compareBytes(mid, hi)).toBeLessThan(0);
      }
    }
  });

  it('halves the interval: from "" to 0xff the middle is 0x7f…', () => {
    expect(Buffer.from(midKey(new Uint8Array(0), Uint8Array.of(0xff)) as Uint8Array).toString('hex')).toBe('7f');
    expect(Buffer.from(midKey(Uint8Array.of(0x10), Uint8Array.of(0x11)) as Uint8Array).toString('hex')).toBe('1080');
  });
});

describe('bisectSplitPoint', () => {
  it('splits random tablets near half of their real bytes at a row inside them, in at most 40 probes', async () => {
    const rnd = mulberry32(5);
    for (let trial = 0; trial < 60; trial++) {
      const skewed = trial % 2 === 1;
      const prefix = trial % 3 === 0 ? '' : 'https://www.example.com/path/';
      const rows = sortedRows(rnd, 200 + Math.floor(rnd() * 2000), prefix, skewed);
      const real = rows.reduce((s, r) => s + r[1], 0);
      const block = 4096;
      const probe = modelProbe(rows, block);
      const got = await bisectSplitPoint(probe, new Uint8Array(0), 0);
      expect(got).not.toBeNull();
      if (got === null) continue;
      const at = rows.findIndex(([k]) => compareBytes(k, got.key) === 0);
      expect(at).toBeGreaterThan(0); // a row of the tablet, not its first
      const left = rows.slice(0, at).reduce((s, r) => s + r[1], 0);
      // Off from half by the tolerance (1/32), a block each side of the estimate, and one row
      // (the split lands on the next row boundary; skewed rows are up to 40 KB).
      const slack = real / 32 + 2 * block + Math.max(...rows.map((r) => r[1]));
      expect(Math.abs(left - real / 2)).toBeLessThanOrEqual(slack);
      expect(got.probes).toBeLessThanOrEqual(40);
      expect(probe.calls).toBe(got.probes);
      expect(got.leftShare).toBeGreaterThan(0);
      expect(got.leftShare).toBeLessThan(1);
    }
  });

  it('returns null for a tablet of one row, and when the estimate is below minTotal', async () => {
    const one: Row[] = [[Buffer.from('a'), 100_000]];
    expect(await bisectSplitPoint(modelProbe(one, 1), new Uint8Array(0), 0)).toBeNull();
    const rows = sortedRows(mulberry32(3), 500, 'k', false);
    const real = rows.reduce((s, r) => s + r[1], 0);
    expect(await bisectSplitPoint(modelProbe(rows, 1), new Uint8Array(0), real + 1)).toBeNull();
    expect(await bisectSplitPoint(modelProbe(rows, 1), new Uint8Array(0), real / 2)).not.toBeNull();
  });

  it('returns null when the engine estimates nothing (every row still in memory)', async () => {
    const rows = sortedRows(mulberry32(4), 500, 'k', false);
    expect(await bisectSplitPoint(modelProbe(rows, 1 << 30), new Uint8Array(0), 0)).toBeNull();
  });

  it('splits a tablet of two rows between them', async () => {
    const rows: Row[] = [
      [Buffer.from('row-a'), 5000],
      [Buffer.from('row-b'), 5000],
    ];
    const got = await bisectSplitPoint(modelProbe(rows, 1), new Uint8Array(0), 0);
    expect(got === null ? null : Buffer.from(got.key).toString()).toBe('row-b');
  });
});
