import { describe, expect, it } from 'vitest';
import { FifoSet } from './fifo-set.js';
import { IntFifoSet } from './int-fifo-set.js';

/** A small deterministic generator (mulberry32), so a failure names its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('IntFifoSet', () => {
  it('answers has, add and size as FifoSet does, over random sequences that evict and collide', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const r = rng(seed);
      const capacity = 1 + Math.floor(r() * 40);
      // A key range a few times the capacity: members are re-added, evicted and probed for while
      // absent; a quarter of the runs draw from the whole int32 range.
      const wide = seed % 4 === 0;
      const range = 1 + Math.floor(capacity * (1 + r() * 4));
      const model = new FifoSet<number>(capacity);
      // Some start with room for a few members and grow as they fill.
      const set = seed % 3 === 0 ? new IntFifoSet(capacity, { initial: 1 + (seed % 5) }) : new IntFifoSet(capacity);
      for (let step = 0; step < 400; step++) {
        const v = wide ? Math.floor(r() * 4294967296) | 0 : Math.floor(r() * range) - (range >> 1);
        if (r() < 0.5) {
          expect(set.has(v), `seed ${seed} step ${step} has(${v})`).toBe(model.has(v));
        } else {
          expect(set.add(v), `seed ${seed} step ${step} add(${v})`).toBe(model.add(v));
        }
        expect(set.size).toBe(model.size);
      }
      // Every value of the range, present or not, agrees at the end.
      if (!wide) for (let v = -(range >> 1); v < range; v++) expect(set.has(v), `seed ${seed} final has(${v})`).toBe(model.has(v));
    }
  });

  it('keeps the newest `capacity` members after many evictions', () => {
    const set = new IntFifoSet(1000);
    for (let v = 0; v < 100_000; v++) set.add(Math.imul(v, 2654435761) | 0);
    expect(set.size).toBe(1000);
    for (let v = 99_000; v < 100_000; v++) expect(set.has(Math.imul(v, 2654435761) | 0)).toBe(true);
    for (let v = 98_000; v < 99_000; v++) expect(set.has(Math.imul(v, 2654435761) | 0)).toBe(false);
  });

  it('grows from its initial room to its capacity, keeping every member and their order of age', () => {
    const set = new IntFifoSet(1000, { initial: 3 });
    for (let v = 0; v < 1000; v++) expect(set.add(v * 7919), `add ${v}`).toBe(false);
    expect(set.size).toBe(1000);
    for (let v = 0; v < 1000; v++) expect(set.has(v * 7919)).toBe(true);
    // Full: each add now forgets the oldest, in the order they came.
    for (let v = 1000; v < 1500; v++) expect(set.add(v * 7919)).toBe(true);
    for (let v = 0; v < 500; v++) expect(set.has(v * 7919)).toBe(false);
    for (let v = 500; v < 1500; v++) expect(set.has(v * 7919)).toBe(true);
    expect(set.size).toBe(1000);
  });

  it('wide: answers as FifoSet does over safe integers that differ only in their high bits', () => {
    for (let seed = 1; seed <= 100; seed++) {
      const r = rng(seed);
      const capacity = 1 + Math.floor(r() * 40);
      const model = new FifoSet<number>(capacity);
      const set = new IntFifoSet(capacity, { wide: true, initial: 1 + (seed % 4) });
      // Timestamps as the oracle gives them (~2^50), and values equal modulo 2^32.
      const base = 1_764_000_000_000_000;
      for (let step = 0; step < 400; step++) {
        const v = r() < 0.5 ? base + Math.floor(r() * capacity * 3) : Math.floor(r() * 8) * 4294967296 + Math.floor(r() * 3);
        if (r() < 0.5) expect(set.has(v), `seed ${seed} step ${step} has(${v})`).toBe(model.has(v));
        else expect(set.add(v), `seed ${seed} step ${step} add(${v})`).toBe(model.add(v));
        expect(set.size).toBe(model.size);
      }
    }
    const set = new IntFifoSet(4, { wide: true });
    set.add(Number.MAX_SAFE_INTEGER);
    set.add(-Number.MAX_SAFE_INTEGER);
    expect(set.has(Number.MAX_SAFE_INTEGER)).toBe(true);
    expect(set.has(-Number.MAX_SAFE_INTEGER)).toBe(true);
    expect(set.has(0)).toBe(false);
    for (const bad of [2 ** 53, 1.5, Number.NaN]) expect(() => set.add(bad)).toThrow(RangeError);
  });

  it('holds the int32 extremes and rejects what is not an int32', () => {
    const set = new IntFifoSet(4);
    set.add(-2147483648);
    set.add(2147483647);
    expect(set.has(-2147483648)).toBe(true);
    expect(set.has(2147483647)).toBe(true);
    expect(set.has(0)).toBe(false);
    for (const bad of [2147483648, 1.5, Number.NaN, -2147483649]) {
      expect(() => set.add(bad)).toThrow(RangeError);
      expect(() => set.has(bad)).toThrow(RangeError);
    }
  });

  it('with no capacity remembers nothing', () => {
    const set = new IntFifoSet(0);
    expect(set.add(1)).toBe(false);
    expect(set.has(1)).toBe(false);
    expect(set.size).toBe(0);
  });
});
