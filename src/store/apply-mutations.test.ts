/**
 * applyMutations against a model: random mutation lists (sets that insert, replace and land
 * between existing cells, column and family deletes in between, row deletes) over random
 * canonical rows give the model's cells, in canonical order, and leave the input row untouched.
 */
import { describe, expect, it } from 'vitest';
import { applyMutations } from './apply-mutations.js';
import { compareCells, makeCell, upsertCell } from './cells.js';
import type { Cell, Mutation } from './types.js';
import { mulberry32 } from '../util/seeded-random.js';

const FAMILIES = ['a', 'b', 'c'];
const QUALIFIERS = [Uint8Array.of(), Uint8Array.of(1), Uint8Array.of(1, 0), Uint8Array.of(2)];

/** The model: cells keyed by (family, qualifier, timestamp), the last set wins; sorted at the end. */
function model(cells: readonly Cell[], mutations: readonly Mutation[]): Cell[] {
  let out = [...cells];
  const same = (x: Uint8Array, y: Uint8Array) => Buffer.from(x).equals(Buffer.from(y));
  for (const m of mutations) {
    if ('setCell' in m) {
      const s = m.setCell;
      out = out.filter((c) => !(c.family === s.familyName && same(c.qualifier, s.columnQualifier) && c.timestamp === s.timestampMicros));
      out.push(makeCell(s.familyName, s.columnQualifier, s.timestampMicros, s.value));
    } else if ('deleteFromColumn' in m) {
      const d = m.deleteFromColumn;
      const start = d.timeRange?.startTimestampMicros ?? 0;
      const end = d.timeRange?.endTimestampMicros || Infinity;
      out = out.filter(
        (c) => !(c.family === d.familyName && same(c.qualifier, d.columnQualifier) && c.timestamp >= start && c.timestamp < end),
      );
    } else if ('deleteFromFamily' in m) {
      out = out.filter((c) => c.family !== m.deleteFromFamily.familyName);
    } else {
      out = [];
    }
  }
  return out.sort(compareCells);
}

function randomMutation(r: () => number, value: number): Mutation {
  const family = FAMILIES[Math.floor(r() * FAMILIES.length)] as string;
  const columnQualifier = QUALIFIERS[Math.floor(r() * QUALIFIERS.length)] as Uint8Array;
  const p = r();
  if (p < 0.7)
    return {
      setCell: { familyName: family, columnQualifier, timestampMicros: Math.floor(r() * 6) * 1000, value: Uint8Array.of(value & 0xff) },
    };
  if (p < 0.85) {
    const start = Math.floor(r() * 6) * 1000;
    return {
      deleteFromColumn: {
        familyName: family,
        columnQualifier,
        timeRange: { startTimestampMicros: start, endTimestampMicros: r() < 0.3 ? 0 : start + 2000 },
      },
    };
  }
  if (p < 0.97) return { deleteFromFamily: { familyName: family } };
  return { deleteFromRow: {} };
}

const key = (c: Cell) => `${c.family}/${Buffer.from(c.qualifier).toString('hex')}/${c.timestamp}/${Buffer.from(c.value).toString('hex')}`;

describe('applyMutations', () => {
  it('gives the model’s cells in canonical order for 3 000 random mutation lists, input untouched', () => {
    const r = mulberry32(20261129);
    for (let round = 0; round < 3000; round++) {
      let row: Cell[] = [];
      const size = Math.floor(r() * 8);
      for (let i = 0; i < size; i++) {
        const m = randomMutation(r, 100 + i);
        if ('setCell' in m)
          row = upsertCell(row, makeCell(m.setCell.familyName, m.setCell.columnQualifier, m.setCell.timestampMicros, m.setCell.value));
      }
      const frozen = row.map(key);
      const mutations = Array.from({ length: 1 + Math.floor(r() * 6) }, (_, i) => randomMutation(r, i));
      const got = applyMutations(row, mutations, () => 0);
      expect(got.map(key), `round ${round}`).toEqual(model(row, mutations).map(key));
      expect(row.map(key)).toEqual(frozen);
      if (mutations.some((m) => 'setCell' in m)) expect(got).not.toBe(row);
    }
  });

  it('gives back the input itself when nothing is set or deleted', () => {
    const row = [makeCell('a', Uint8Array.of(1), 5, Uint8Array.of(1))];
    expect(applyMutations(row, [], () => 0)).toBe(row);
  });

  it('stamps server-time sets with the clock', () => {
    const got = applyMutations(
      [],
      [{ setCell: { familyName: 'a', columnQualifier: Uint8Array.of(), timestampMicros: -1, value: Uint8Array.of() } }],
      () => 7000,
    );
    expect(got.map((c) => c.timestamp)).toEqual([7000]);
  });
});
