/**
 * The store's row cache seen from outside: reads through its second (encoded) tier return what
 * the engine holds, spare the engine the read, and never outlive a change to the data.
 */
import { describe, expect, it } from 'vitest';
import { EngineStore } from './engine-store.js';
import { MemoryEngine } from './memory/memory-engine.js';

/** A memory engine that counts its point reads. */
class CountingEngine extends MemoryEngine {
  gets = 0;
  override get(key: Uint8Array): Uint8Array | undefined {
    this.gets++;
    return super.get(key);
  }
}

const ROWS = 200;
const key = (i: number) => Buffer.from(`row${String(i).padStart(4, '0')}`);
const value = (i: number, v: number) => Buffer.from(`${i}:${v}:`.padEnd(300, 'x'));

async function openWith(encodedCacheBytes: number): Promise<{ store: EngineStore; engine: CountingEngine }> {
  const engine = new CountingEngine();
  // A decoded tier of a few rows: nearly every read misses it.
  const store = await EngineStore.open(engine, 'memory:', { cacheBytes: 8 * 1024, encodedCacheBytes, gcIntervalMs: 0 });
  await store.createTable('t', { families: { f: {} } });
  for (let i = 0; i < ROWS; i++) {
    await store.mutateRow('t', key(i), [
      { setCell: { familyName: 'f', columnQualifier: Buffer.from('c'), timestampMicros: 1, value: value(i, 0) } },
    ]);
  }
  return { store, engine };
}

async function readAll(store: EngineStore, absent = 20): Promise<(string | null)[]> {
  const out: (string | null)[] = [];
  for (let i = 0; i < ROWS + absent; i++) {
    const row = await store.readRow('t', key(i)); // the last rows are absent
    out.push(row === null ? null : Buffer.from(row.cells[0]?.value ?? []).toString());
  }
  return out;
}

describe("the row cache's second tier", () => {
  it('serves rows the decoded tier evicted without reading the engine', async () => {
    const expected = Array.from({ length: ROWS }, (_, i) => value(i, 0).toString());
    for (const [encoded, engineReads] of [
      [0, ROWS],
      [1024 * 1024, 0],
    ] as const) {
      const { store, engine } = await openWith(encoded);
      try {
        expect(await readAll(store, 0)).toEqual(expected);
        engine.gets = 0;
        expect(await readAll(store, 0)).toEqual(expected);
        expect(engine.gets).toBe(engineReads);
      } finally {
        await store.close();
      }
    }
  });

  it('never returns a row older than the last write, whichever tier holds it', async () => {
    const { store } = await openWith(1024 * 1024);
    try {
      await readAll(store);
      for (let v = 1; v <= 3; v++) {
        for (let i = 0; i < ROWS; i += 3) {
          await store.mutateRow('t', key(i), [
            { setCell: { familyName: 'f', columnQualifier: Buffer.from('c'), timestampMicros: 1 + v, value: value(i, v) } },
          ]);
        }
        const got = await readAll(store);
        for (let i = 0; i < ROWS; i++) expect(got[i]).toBe(value(i, i % 3 === 0 ? v : 0).toString());
      }
    } finally {
      await store.close();
    }
  });

  it('holds written rows encoded: read back, rewritten or deleted, without reading the engine', async () => {
    // A decoded tier too small for any row: whatever these reads find, the second tier held.
    const engine = new CountingEngine();
    const store = await EngineStore.open(engine, 'memory:', { cacheBytes: 1, encodedCacheBytes: 1024 * 1024, gcIntervalMs: 0 });
    try {
      await store.createTable('t', { families: { f: {} } });
      await store.whenKeysKnown(); // from then on, the key filter answers for rows never written
      engine.gets = 0;
      const set = (i: number, v: number) => [
        { setCell: { familyName: 'f', columnQualifier: Buffer.from('c'), timestampMicros: 1 + v, value: value(i, v) } },
      ];
      for (let i = 0; i < ROWS; i++) await store.mutateRow('t', key(i), set(i, 0));
      // Rewriting reads the row written before (the write path's own read), then the new one.
      for (let i = 0; i < ROWS; i += 2) await store.mutateRow('t', key(i), set(i, 1));
      for (let i = 0; i < ROWS; i += 5) await store.mutateRow('t', key(i), [{ deleteFromRow: {} }]);
      const expected = Array.from({ length: ROWS }, (_, i) => (i % 5 === 0 ? null : value(i, i % 2 === 0 ? 1 : 0).toString()));
      expect(await readAll(store, 0)).toEqual(expected);
      expect(engine.gets).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('keeps the rows it read when new rows are written (their absence is not cached on the way)', async () => {
    // A decoded tier that holds the rows read, and a second tier too small to hold what the
    // decoded tier would evict: a row pushed out of the decoded tier is read from the engine again.
    const engine = new CountingEngine();
    const store = await EngineStore.open(engine, 'memory:', { cacheBytes: 24 * 1024, encodedCacheBytes: 2048, gcIntervalMs: 0 });
    try {
      await store.createTable('t', { families: { f: {} } });
      const cell = (v: Buffer) => [{ setCell: { familyName: 'f', columnQualifier: Buffer.from('c'), timestampMicros: 1, value: v } }];
      const READ = 20;
      for (let i = 0; i < READ; i++) await store.mutateRow('t', key(i), cell(value(i, 0)));
      await store.whenKeysKnown();
      const expected = Array.from({ length: READ }, (_, i) => value(i, 0).toString());
      const readBack = async () => {
        const out: string[] = [];
        for (let i = 0; i < READ; i++) out.push(Buffer.from((await store.readRow('t', key(i)))?.cells[0]?.value ?? []).toString());
        return out;
      };
      expect(await readBack()).toEqual(expected);
      // 60 rows that did not exist, as a transaction writes postings: one write each, and in one
      // conditional write across rows (the one-phase commit's path).
      for (let i = 0; i < 30; i++) await store.mutateRow('t', Buffer.from(`new-a-${i}`), cell(Buffer.from('v')));
      await store.checkAndMutateRows(
        Array.from({ length: 30 }, (_, i) => ({
          table: 't',
          key: Buffer.from(`new-b-${i}`),
          veto: { families: ['f'], test: () => false },
          mutations: cell(Buffer.from('v')),
        })),
      );
      engine.gets = 0;
      expect(await readBack()).toEqual(expected);
      expect(engine.gets).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('forgets the rows it holds when a row range is dropped', async () => {
    const { store } = await openWith(1024 * 1024);
    try {
      await readAll(store);
      await store.dropRowRange('t', { rowKeyPrefix: Buffer.from('row00') });
      const got = await readAll(store);
      for (let i = 0; i < ROWS; i++) expect(got[i]).toBe(i < 100 ? null : value(i, 0).toString());
    } finally {
      await store.close();
    }
  });
});

describe('engine reads by group', () => {
  it('counts the reads the engine answers, by table and locality group, found or absent', async () => {
    const engine = new CountingEngine();
    // No row cache: every read the key filter cannot answer goes to the engine.
    const store = await EngineStore.open(engine, 'memory:', { cacheBytes: 0, encodedCacheBytes: 0, gcIntervalMs: 0 });
    try {
      await store.createTable('t', { families: { f: {}, g: { localityGroup: 'side' } } });
      const set = (familyName: string, i: number) => ({
        setCell: { familyName, columnQualifier: Buffer.from('c'), timestampMicros: 1, value: value(i, 0) },
      });
      for (let i = 0; i < 10; i++) await store.mutateRow('t', key(i), i < 4 ? [set('f', i), set('g', i)] : [set('f', i)]);
      // Deleted rows stay in the key filter (it cannot forget): reading them asks the engine.
      for (const i of [8, 9]) await store.mutateRow('t', key(i), [{ deleteFromRow: {} }]);
      const before = store.engineReadsByGroup();
      const gets = engine.gets;
      // Rows 10 and 11 were never written: the key filter answers, the engine is not asked.
      for (let i = 0; i < 12; i++) await store.readRow('t', key(i));
      const after = store.engineReadsByGroup();
      const delta = (g: string) => ({
        found: (after[g]?.found ?? 0) - (before[g]?.found ?? 0),
        absent: (after[g]?.absent ?? 0) - (before[g]?.absent ?? 0),
      });
      expect(delta('t/default')).toEqual({ found: 8, absent: 2 });
      expect(delta('t/side')).toEqual({ found: 4, absent: 0 });
      expect(engine.gets - gets).toBe(14);
      expect(Object.keys(after).sort()).toEqual(['t/default', 't/side']);
    } finally {
      await store.close();
    }
  });
});

describe('cacheStats', () => {
  it('counts every lookup once, by the tier that answered it, and the engine reads it made', async () => {
    for (const encoded of [0, 1024 * 1024]) {
      const { store, engine } = await openWith(encoded);
      try {
        const before = store.cacheStats();
        engine.gets = 0;
        await readAll(store); // ROWS rows written (mostly evicted), then 20 never written
        await readAll(store, 0);
        const s = store.cacheStats();
        const l = s.lookups;
        expect(l.total - before.lookups.total).toBe(2 * ROWS + 20);
        expect(l.decoded + l.encoded + l.absent + l.engine).toBe(l.total);
        expect(l.engine - before.lookups.engine).toBe(engine.gets);
        // Rows never written are proven absent by the key filter, never read from the engine.
        expect(l.absent - before.lookups.absent).toBeGreaterThanOrEqual(20);
        if (encoded === 0) expect(l.encoded).toBe(0);
        else expect(l.encoded - before.lookups.encoded).toBeGreaterThan(ROWS);
        expect(s.decoded).toMatchObject({ budgetBytes: 8 * 1024 });
        expect(s.decoded.bytes).toBeLessThanOrEqual(8 * 1024);
        expect(s.decoded.rows).toBeGreaterThan(0);
        expect(s.encoded.budgetBytes).toBe(encoded);
      } finally {
        await store.close();
      }
    }
  });
});
