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
