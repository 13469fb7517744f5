import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLevelEngine } from './embedded/level-engine.js';
import { EngineStore } from './engine-store.js';
import { KeyFilter } from './key-filter.js';
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
