import { describe, expect, it } from 'vitest';
import { isStoreError } from './errors.js';
import { collectColumn, gcRuleHasMaxAge, validateGcRule } from './gc-rule.js';
import type { GcRule } from './types.js';

const NOW = 1_000_000_000;
/** Versions newest first, at the given ages (µs before NOW). */
const aged = (...ages: number[]) => ages.map((a, i) => ({ timestamp: NOW - a, id: i }));
const ids = (vs: readonly { id: number }[]) => vs.map((v) => v.id);

function expectInvalid(rule: unknown): void {
  let err: unknown;
  try {
    validateGcRule(rule as GcRule);
  } catch (e) {
    err = e;
  }
  expect(isStoreError(err, 'INVALID_ARGUMENT'), `${JSON.stringify(rule)} → ${String(err)}`).toBe(true);
}

describe('collectColumn', () => {
  const col = aged(0, 10, 20, 30, 40); // ids 0..4, newest first

  it('no rule keeps everything (same array)', () => {
    expect(collectColumn(undefined, col, NOW)).toBe(col);
    expect(collectColumn({ maxNumVersions: 1 }, [], NOW)).toEqual([]);
  });

  it('maxNumVersions keeps the newest N', () => {
    expect(ids(collectColumn({ maxNumVersions: 2 }, col, NOW))).toEqual([0, 1]);
    expect(ids(collectColumn({ maxNumVersions: 1 }, col, NOW))).toEqual([0]);
    expect(collectColumn({ maxNumVersions: 5 }, col, NOW)).toBe(col);
    expect(collectColumn({ maxNumVersions: 9 }, col, NOW)).toBe(col);
  });

  it('maxAgeMicros removes versions older than the age; exactly that old survives', () => {
    expect(ids(collectColumn({ maxAgeMicros: 20 }, col, NOW))).toEqual([0, 1, 2]);
    expect(ids(collectColumn({ maxAgeMicros: 19 }, col, NOW))).toEqual([0, 1]);
    expect(ids(collectColumn({ maxAgeMicros: 1 }, col, NOW))).toEqual([0]);
    expect(collectColumn({ maxAgeMicros: 40 }, col, NOW)).toBe(col);
    expect(collectColumn({ maxAgeMicros: 1 }, aged(5, 6), NOW)).toEqual([]);
  });

  it('future timestamps never expire', () => {
    const future = [{ timestamp: NOW + 100, id: 0 }, ...aged(50).map((v) => ({ ...v, id: 1 }))];
    expect(ids(collectColumn({ maxAgeMicros: 10 }, future, NOW))).toEqual([0]);
  });

  it('union removes a version if any rule removes it', () => {
    const rule: GcRule = { union: [{ maxNumVersions: 3 }, { maxAgeMicros: 15 }] };
    expect(ids(collectColumn(rule, col, NOW))).toEqual([0, 1]); // age removes 2,3,4; count removes 3,4
    const rule2: GcRule = { union: [{ maxNumVersions: 1 }, { maxAgeMicros: 35 }] };
    expect(ids(collectColumn(rule2, col, NOW))).toEqual([0]);
  });

  it('intersection removes a version only if every rule removes it', () => {
    // Keep at least 2 versions, and anything younger than 25µs.
    const rule: GcRule = { intersection: [{ maxNumVersions: 2 }, { maxAgeMicros: 25 }] };
    expect(ids(collectColumn(rule, col, NOW))).toEqual([0, 1, 2]);
    // Old versions: count decides, by position in the whole column.
    const old = aged(100, 200, 300);
    expect(ids(collectColumn(rule, old, NOW))).toEqual([0, 1]);
    // Young versions survive even beyond the count.
    expect(collectColumn(rule, aged(1, 2, 3, 4), NOW).length).toBe(4);
  });

  it('a version keeps its position in the whole column under nested rules', () => {
    // union[ intersection[maxNum 1, maxAge 15], maxNum 4 ]:
    // id0 (age 0): keep; id1 (10): young → inner keeps; id2 (20): pos 2 ≥ 1 and old → removed;
    // id3 (30): removed by inner; id4 (40): removed by both.
    const rule: GcRule = { union: [{ intersection: [{ maxNumVersions: 1 }, { maxAgeMicros: 15 }] }, { maxNumVersions: 4 }] };
    expect(ids(collectColumn(rule, col, NOW))).toEqual([0, 1]);
    // intersection[ maxNum 1, union[ maxAge 15, maxNum 3 ] ]: id0 (pos 0) kept by the count;
    // id1 (age 10, pos 1 < 3) kept by the inner union; id2 (age 20) removed by both sides.
    const rule2: GcRule = { intersection: [{ maxNumVersions: 1 }, { union: [{ maxAgeMicros: 15 }, { maxNumVersions: 3 }] }] };
    expect(ids(collectColumn(rule2, col, NOW))).toEqual([0, 1]);
  });

  it('an empty union removes nothing', () => {
    expect(collectColumn({ union: [] }, col, NOW)).toBe(col);
  });

  it('returns the same array when a composite rule removes nothing', () => {
    const rule: GcRule = { intersection: [{ maxNumVersions: 1 }, { maxAgeMicros: 1000 }] };
    expect(collectColumn(rule, col, NOW)).toBe(col);
  });

  it('works on any element type and keeps order', () => {
    const cells = [
      { timestamp: 30, v: 'c' },
      { timestamp: 20, v: 'b' },
      { timestamp: 10, v: 'a' },
    ];
    expect(collectColumn({ maxNumVersions: 2 }, cells, 0).map((c) => c.v)).toEqual(['c', 'b']);
  });
});

describe('validateGcRule', () => {
  it('accepts valid rules', () => {
    for (const r of [
      undefined,
      { maxNumVersions: 1 },
      { maxNumVersions: 2 ** 31 - 1 },
      { maxAgeMicros: 1 },
      { maxAgeMicros: 86_400_000_000 },
      { union: [] },
      { union: [{ maxNumVersions: 3 }, { maxAgeMicros: 1000 }] },
      { intersection: [{ maxNumVersions: 3 }] },
      { intersection: [{ union: [{ maxNumVersions: 1 }] }, { maxAgeMicros: 5 }] },
      { maxNumVersions: 2, union: undefined },
    ]) {
      expect(() => validateGcRule(r as GcRule | undefined)).not.toThrow();
    }
  });

  it('rejects bad numbers', () => {
    for (const v of [0, -1, 1.5, Number.NaN, 2 ** 31, '2']) expectInvalid({ maxNumVersions: v });
    for (const v of [0, -1, 1.5, Number.NaN, 2 ** 53, Number.POSITIVE_INFINITY]) expectInvalid({ maxAgeMicros: v });
  });

  it('rejects malformed rules, at any depth', () => {
    expectInvalid(null);
    expectInvalid({});
    expectInvalid({ maxNumVersions: 1, maxAgeMicros: 5 });
    expectInvalid({ maxVersions: 1 });
    expectInvalid({ union: { maxNumVersions: 1 } });
    expectInvalid({ intersection: [] });
    expectInvalid({ union: [{ maxNumVersions: 1 }, { intersection: [{ maxAgeMicros: -5 }] }] });
    expectInvalid([{ maxNumVersions: 1 }]);
  });

  it('reports the path of the offending sub-rule', () => {
    try {
      validateGcRule({ union: [{ maxNumVersions: 1 }, { intersection: [{ maxAgeMicros: 0 }] }] });
      expect.unreachable();
    } catch (e) {
      expect((e as { details: { path: string } }).details.path).toBe('gcRule.union[1].intersection[0]');
    }
  });
});

describe('gcRuleHasMaxAge', () => {
  it('is true iff some sub-rule depends on time', () => {
    expect(gcRuleHasMaxAge(undefined)).toBe(false);
    expect(gcRuleHasMaxAge({ maxNumVersions: 1 })).toBe(false);
    expect(gcRuleHasMaxAge({ maxAgeMicros: 1 })).toBe(true);
    expect(gcRuleHasMaxAge({ union: [] })).toBe(false);
    expect(gcRuleHasMaxAge({ union: [{ maxNumVersions: 1 }, { intersection: [{ maxNumVersions: 2 }, { maxAgeMicros: 3 }] }] })).toBe(true);
    expect(gcRuleHasMaxAge({ intersection: [{ maxNumVersions: 1 }, { union: [{ maxNumVersions: 2 }] }] })).toBe(false);
  });
});

describe('randomized: composite rules agree with per-version evaluation', () => {
  it('union/intersection of count and age rules', () => {
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const leaf = (): GcRule => (rnd() < 0.5 ? { maxNumVersions: 1 + Math.floor(rnd() * 4) } : { maxAgeMicros: 1 + Math.floor(rnd() * 50) });
    const rule = (d: number): GcRule => {
      if (d === 0 || rnd() < 0.4) return leaf();
      const subs = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => rule(d - 1));
      return rnd() < 0.5 ? { union: subs } : { intersection: subs };
    };
    // Independent oracle: keep-sets as boolean masks.
    const keep = (r: GcRule, col: readonly { timestamp: number }[]): boolean[] => {
      if ('maxNumVersions' in r) return col.map((_, i) => i < r.maxNumVersions);
      if ('maxAgeMicros' in r) return col.map((v) => v.timestamp >= NOW - r.maxAgeMicros);
      const masks = ('union' in r ? r.union : r.intersection).map((s) => keep(s, col));
      // union removes if any removes → keep if all keep; intersection keeps if any keeps.
      return col.map((_, i) => ('union' in r ? masks.every((m) => m[i]) : masks.some((m) => m[i])));
    };
    for (let round = 0; round < 300; round++) {
      const r = rule(3);
      validateGcRule(r);
      const ages = Array.from({ length: Math.floor(rnd() * 8) }, () => Math.floor(rnd() * 60)).sort((a, b) => a - b);
      const col = aged(...ages);
      const mask = keep(r, col);
      expect(ids(collectColumn(r, col, NOW)), JSON.stringify(r)).toEqual(col.filter((_, i) => mask[i]).map((v) => v.id));
    }
  });
});
