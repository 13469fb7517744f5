/**
 * findSplitPoint streams what the tablet split once computed over every row in memory: the split
 * point must be the same as that materializing reference, for any rows spread over any groups.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../util/seeded-random.js';
import { compareBytes } from './bytes.js';
import { type RowSize, type SplitPoint, findSplitPoint } from './tablet-split-point.js';

/** The reference: every row's total size in a map, sorted, then the first half-crossing. */
function reference(groups: readonly (readonly RowSize[])[]): SplitPoint | null {
  const sizes = new Map<string, [Uint8Array, number]>();
  for (const g of groups)
    for (const [k, n] of g) {
      const id = Buffer.from(k).toString('hex');
      sizes.set(id, [k, (sizes.get(id)?.[1] ?? 0) + n]);
    }
  const rows = [...sizes.values()].sort((a, b) => compareBytes(a[0], b[0]));
  const total = rows.reduce((s, r) => s + r[1], 0);
  if (rows.length < 2) return null;
  let acc = 0;
  let cut = 1;
  for (let k = 0; k < rows.length - 1; k++) {
    acc += (rows[k] as [Uint8Array, number])[1];
    cut = k + 1;
    if (acc >= total / 2) break;
  }
  return { key: (rows[cut] as [Uint8Array, number])[0], left: rows.slice(0, cut).reduce((s, r) => s + r[1], 0) };
}

async function* stream(rows: readonly RowSize[]): AsyncGenerator<RowSize> {
  for (const r of rows) yield r;
}

const total = (groups: readonly (readonly RowSize[])[]) => groups.flat().reduce((s, r) => s + r[1], 0);

describe('findSplitPoint', () => {
  it('agrees with the materializing reference on random tablets of 1–3 groups', async () => {
    const rnd = mulberry32(7);
    for (let trial = 0; trial < 300; trial++) {
      const groupCount = 1 + Math.floor(rnd() * 3);
      const rowCount = Math.floor(rnd() * 12);
      const keys = [...new Set(Array.from({ length: rowCount }, () => Math.floor(rnd() * 40)))].map((n) =>
        Buffer.from(n.toString(36).padStart(1 + Math.floor(rnd() * 2), '0')),
      );
      const groups: RowSize[][] = Array.from({ length: groupCount }, () => []);
      for (const k of keys) {
        // A row lives in at least one group, sometimes several; one huge row now and then.
        const first = Math.floor(rnd() * groupCount);
        for (let g = 0; g < groupCount; g++) {
          if (g === first || rnd() < 0.3) (groups[g] as RowSize[]).push([k, rnd() < 0.1 ? 1000 : 1 + Math.floor(rnd() * 50)]);
        }
      }
      for (const g of groups) g.sort((a, b) => compareBytes(a[0], b[0]));
      const got = await findSplitPoint(
        groups.map((g) => stream(g)),
        total(groups),
      );
      const want = reference(groups);
      expect(got === null ? null : { key: Buffer.from(got.key).toString(), left: got.left }).toEqual(
        want === null ? null : { key: Buffer.from(want.key).toString(), left: want.left },
      );
    }
  });

  it('returns a copy of the key and closes every group it did not finish', async () => {
    const buf = Buffer.from('aabbcc');
    const rows: RowSize[] = [
      [buf.subarray(0, 2), 10],
      [buf.subarray(2, 4), 10],
      [buf.subarray(4, 6), 10],
    ];
    let closed = 0;
    async function* tracked(): AsyncGenerator<RowSize> {
      try {
        for (const r of rows) yield r;
      } finally {
        closed++;
      }
    }
    const p = await findSplitPoint([tracked(), tracked()], 60);
    expect(p).not.toBeNull();
    // Rows of 20 bytes (10 in each group): aa and bb reach half of 60 before cc.
    expect(Buffer.from((p as SplitPoint).key).toString()).toBe('cc');
    expect((p as SplitPoint).left).toBe(40);
    buf.fill(0x7a);
    expect(Buffer.from((p as SplitPoint).key).toString()).toBe('cc');
    expect(closed).toBe(2);
  });
});
