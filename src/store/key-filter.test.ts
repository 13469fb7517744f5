import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type LevelEngine, openLevelEngine } from './embedded/level-engine.js';
import { SEAL_FILE } from './embedded/level-seal.js';
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

  it('round-trips through bytes with the same answers; damaged bytes are refused', () => {
    const f = new KeyFilter();
    for (let i = 0; i < 100_000; i++) f.add(`k${i}`); // two layers
    const bytes = f.serialize();
    const g = KeyFilter.deserialize(bytes);
    expect(g?.ready).toBe(true);
    let differ = 0;
    for (let i = 0; i < 200_000; i++) if (f.mayContain(`k${i}`) !== g?.mayContain(`k${i}`)) differ++;
    expect(differ).toBe(0);
    g?.add('new'); // a loaded filter keeps growing
    expect(g?.mayContain('new')).toBe(true);
    const damaged = Buffer.from(bytes);
    damaged[damaged.length - 1] = (damaged[damaged.length - 1] as number) ^ 1;
    expect(KeyFilter.deserialize(damaged)).toBeNull();
    expect(KeyFilter.deserialize(bytes.subarray(0, 20))).toBeNull();
  });
});

const key = (i: number) => Buffer.from(`row${String(i).padStart(4, '0')}`);
const set = (i: number) => [
  { setCell: { familyName: 'f', columnQualifier: Buffer.from('c'), timestampMicros: 1, value: Buffer.from(`v${i}`) } },
];
interface Opened {
  readonly store: EngineStore;
  readonly level: LevelEngine;
  readonly counts: { scans: number; gets: number };
}
/** The store over a counting engine; `oldBuild` neither takes nor leaves a seal, as builds before seals. */
async function open(dir: string, oldBuild = false): Promise<Opened> {
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
    close: (seal) => level.close(oldBuild ? undefined : seal),
  };
  if (!oldBuild) engine.takeSealed = () => level.takeSealed();
  const store = await EngineStore.open(engine, `file:${dir}`, { gcIntervalMs: 0, cacheBytes: 0 });
  await store.whenKeysKnown();
  return { store, level, counts };
}
const value = async (s: EngineStore, i: number) => {
  const row = await s.readRow('t', key(i));
  return row === null ? null : Buffer.from(row.cells[0]?.value ?? []).toString();
};
async function withDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'percolator-keys-'));
  try {
    await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe("the store's key filter", () => {
  it('answers reads of rows never written without the engine, and finds every row written before or after it opened', () =>
    withDir(async (dir) => {
      const first = await open(dir);
      await first.store.createTable('t', { families: { f: {} } });
      for (let i = 0; i < 200; i += 2) await first.store.mutateRow('t', key(i), set(i));
      await first.store.close();

      // Reopened without its seal (so the opening scan fills the filter), with a row cache that
      // keeps nothing: every read is a filter check or an engine read.
      const { store, counts } = await open(dir, true);
      try {
        for (let i = 1; i < 200; i += 2) await store.mutateRow('t', key(i), set(i)); // written after it opened
        counts.gets = 0;
        for (let i = 0; i < 200; i++) expect(await value(store, i)).toBe(`v${i}`);
        expect(counts.gets).toBe(200);
        counts.gets = 0;
        for (let i = 200; i < 400; i++) expect(await value(store, i)).toBeNull();
        expect(counts.gets).toBeLessThan(20); // false positives only
      } finally {
        await store.close();
      }
    }));
});

describe("a sealed key filter (a clean close's, kept for the next open)", () => {
  it('spares a cleanly closed store the opening scan and answers as the scan would', () =>
    withDir(async (dir) => {
      const first = await open(dir);
      expect(first.counts.scans).toBe(1); // a new store: nothing sealed
      await first.store.createTable('t', { families: { f: {} } });
      for (let i = 0; i < 100; i++) await first.store.mutateRow('t', key(i), set(i));
      await first.store.close();

      const second = await open(dir);
      expect(second.counts.scans).toBe(0);
      for (let i = 100; i < 150; i++) await second.store.mutateRow('t', key(i), set(i));
      second.counts.gets = 0;
      for (let i = 0; i < 300; i++) expect(await value(second.store, i)).toBe(i < 150 ? `v${i}` : null);
      expect(second.counts.gets).toBeLessThan(150 + 15); // the rows present, and false positives
      await second.store.close();

      const third = await open(dir);
      expect(third.counts.scans).toBe(0);
      for (let i = 0; i < 150; i++) expect(await value(third.store, i)).toBe(`v${i}`);
      await third.store.close();
    }));

  it('is refused once anything wrote after it: a build that knows no seals, or a session that crashed', () =>
    withDir(async (dir) => {
      const first = await open(dir);
      await first.store.createTable('t', { families: { f: {} } });
      for (let i = 0; i < 100; i++) await first.store.mutateRow('t', key(i), set(i));
      await first.store.close();
      const kept = join(dir, 'kept-seal');
      await copyFile(join(dir, SEAL_FILE), kept);

      // An older build: leaves the seal file where it is (it knows nothing of it) and adds rows.
      const old = await open(dir, true);
      for (let i = 100; i < 150; i++) await old.store.mutateRow('t', key(i), set(i));
      await old.store.close();
      await copyFile(kept, join(dir, SEAL_FILE));
      const after = await open(dir);
      expect(after.counts.scans).toBe(1);
      for (let i = 0; i < 160; i++) expect(await value(after.store, i)).toBe(i < 150 ? `v${i}` : null);
      // A crash: the engine goes away without the store's close, so nothing is sealed; even a seal
      // file from before that somehow survived is refused.
      for (let i = 150; i < 200; i++) await after.store.mutateRow('t', key(i), set(i));
      await after.level.close();
      await copyFile(kept, join(dir, SEAL_FILE));
      const recovered = await open(dir);
      expect(recovered.counts.scans).toBe(1);
      for (let i = 0; i < 210; i++) expect(await value(recovered.store, i)).toBe(i < 200 ? `v${i}` : null);
      await recovered.store.close();
    }));
});
