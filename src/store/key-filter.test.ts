import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLevelEngine } from './embedded/level-engine.js';
import { EngineStore } from './engine-store.js';
import { KeyFilter } from './key-filter.js';
import { KEY_FILTER_KEY } from './key-layout.js';
import type { KvEngine } from './kv-engine.js';

describe('KeyFilter', () => {
  it('never denies a key it was given, and denies most others, as it grows past its first layers', () => {
    const f = new KeyFilter();
    const n = 400_000; // past the first two layers (64 Ki, then 256 Ki keys)
    for (let i = 0; i < n; i++) f.add(`\u0001\u0000\u0000\u0000\u0009\u0000\u0000term${i}\u0000https://example.org/${i % 977}`);
    let denied = 0;
    for (let i = 0; i < n; i++)
      if (!f.mayContain(`\u0001\u0000\u0000\u0000\u0009\u0000\u0000term${i}\u0000https://example.org/${i % 977}`)) denied++;
    expect(denied).toBe(0);
    let falsePositives = 0;
    for (let i = 0; i < 100_000; i++)
      if (f.mayContain(`\u0001\u0000\u0000\u0000\u0009\u0000\u0000term${n + i}\u0000https://example.org/x`)) falsePositives++;
    // ~1 % a layer, three layers.
    expect(falsePositives).toBeLessThan(4_000);
    expect(f.bytes).toBeLessThan(4 * 1024 * 1024);
  });
});

describe("the store's key filter", () => {
  const key = (i: number) => Buffer.from(`row${String(i).padStart(4, '0')}`);
  const set = (i: number) => [
    { setCell: { familyName: 'f', columnQualifier: Buffer.from('c'), timestampMicros: 1, value: Buffer.from(`v${i}`) } },
  ];

  it('answers reads of rows never written without the engine, and finds every row written before or after it opened', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'percolator-keys-'));
    try {
      const first = await EngineStore.open(await openLevelEngine(dir), `file:${dir}`, { gcIntervalMs: 0 });
      await first.createTable('t', { families: { f: {} } });
      for (let i = 0; i < 200; i += 2) await first.mutateRow('t', key(i), set(i));
      await first.close();

      // Reopened with a row cache that keeps nothing: every read is a filter check or an engine read.
      const level = await openLevelEngine(dir);
      let gets = 0;
      const engine: KvEngine = {
        get: (k) => {
          gets++;
          return level.get(k);
        },
        iterate: (r) => level.iterate(r),
        write: (ops, o) => level.write(ops, o),
        clear: (r) => level.clear(r),
        close: () => level.close(),
      };
      const store = await EngineStore.open(engine, `file:${dir}`, { gcIntervalMs: 0, cacheBytes: 0 });
      try {
        await store.whenKeysKnown();
        for (let i = 1; i < 200; i += 2) await store.mutateRow('t', key(i), set(i)); // written after it opened
        gets = 0;
        for (let i = 0; i < 200; i++) {
          const row = await store.readRow('t', key(i));
          expect(row === null ? null : Buffer.from(row.cells[0]?.value ?? []).toString()).toBe(`v${i}`);
        }
        expect(gets).toBe(200);
        gets = 0;
        for (let i = 200; i < 400; i++) expect(await store.readRow('t', key(i))).toBeNull();
        expect(gets).toBeLessThan(20); // false positives only
      } finally {
        await store.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a saved key filter', () => {
  const key = (i: number) => Buffer.from(`row${String(i).padStart(4, '0')}`);
  const set = (i: number) => [
    { setCell: { familyName: 'f', columnQualifier: Buffer.from('c'), timestampMicros: 1, value: Buffer.from(`v${i}`) } },
  ];

  it('round-trips: the same answers, and damaged bytes are refused', () => {
    const f = new KeyFilter();
    for (let i = 0; i < 100_000; i++) f.add(`k${i}`);
    const bytes = f.serialize();
    const g = KeyFilter.deserialize(bytes);
    expect(g?.ready).toBe(true);
    let differ = 0;
    for (let i = 0; i < 200_000; i++) if (f.mayContain(`k${i}`) !== g?.mayContain(`k${i}`)) differ++;
    expect(differ).toBe(0);
    const damaged = Buffer.from(bytes);
    damaged[damaged.length - 1] = (damaged[damaged.length - 1] as number) ^ 1;
    expect(KeyFilter.deserialize(damaged)).toBeNull();
    expect(KeyFilter.deserialize(bytes.subarray(0, 20))).toBeNull();
  });

  it('spares a cleanly closed store the opening scan, and is used once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'percolator-keys-'));
    try {
      const open = async () => {
        const level = await openLevelEngine(dir);
        const counts = { scans: 0, gets: 0 };
        const engine: KvEngine = {
          get: (k) => {
            counts.gets++;
            return level.get(k);
          },
          iterate: (r) => {
            if (r.keysOnly === true) counts.scans++;
            return level.iterate(r);
          },
          write: (ops, o) => level.write(ops, o),
          clear: (r) => level.clear(r),
          close: () => level.close(),
        };
        const store = await EngineStore.open(engine, `file:${dir}`, { gcIntervalMs: 0, cacheBytes: 0 });
        await store.whenKeysKnown();
        return { store, counts, level };
      };
      const first = await open();
      expect(first.counts.scans).toBe(1); // a new store: nothing saved
      await first.store.createTable('t', { families: { f: {} } });
      for (let i = 0; i < 100; i++) await first.store.mutateRow('t', key(i), set(i));
      await first.store.close();

      const second = await open();
      expect(second.counts.scans).toBe(0);
      for (let i = 100; i < 150; i++) await second.store.mutateRow('t', key(i), set(i));
      second.counts.gets = 0;
      for (let i = 0; i < 300; i++) {
        const row = await second.store.readRow('t', key(i));
        expect(row === null ? null : Buffer.from(row.cells[0]?.value ?? []).toString()).toBe(i < 150 ? `v${i}` : null);
      }
      expect(second.counts.gets).toBeLessThan(150 + 15); // the rows present, and false positives
      // Used once: a crash now (the store never closed) must not leave a filter without rows 100..149.
      expect(second.level.get(KEY_FILTER_KEY)).toBeUndefined();
      await second.store.close();

      const third = await open();
      expect(third.counts.scans).toBe(0);
      for (let i = 0; i < 150; i++) expect(await third.store.readRow('t', key(i))).not.toBeNull();
      await third.store.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
