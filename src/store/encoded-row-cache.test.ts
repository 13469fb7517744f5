import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ABSENT_ROW, ENCODED_ENTRY_OVERHEAD_BYTES, EncodedRowCache } from './encoded-row-cache.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const row = (n: number, size = 100) => Buffer.alloc(size, n);
const entryBytes = (key: string, size = 100) => size + key.length + ENCODED_ENTRY_OVERHEAD_BYTES;

function memoryBytes(): number {
  gc();
  gc();
  const u = process.memoryUsage();
  return u.heapUsed + u.external; // external includes the ArrayBuffers
}

describe('EncodedRowCache', () => {
  it('keeps its real memory cost near its budget, also for small rows', () => {
    for (const size of [50, 1200]) {
      const budget = 4 * 1024 * 1024;
      const c = new EncodedRowCache(budget);
      const before = memoryBytes();
      for (let i = 0; i < 100_000; i++)
        c.put(`\u0001\u0000\u0000\u0000\u0005\u0000\u0000https://example.org/${i}`, Buffer.from(new ArrayBuffer(size)));
      const grown = memoryBytes() - before;
      expect(grown).toBeLessThan(budget * 1.2);
      expect(grown).toBeGreaterThan(budget * 0.6);
      c.clear();
    }
  });

  it('hands a row back once: take removes it', () => {
    const c = new EncodedRowCache(1024 * 1024);
    c.put('a', row(1));
    expect(c.take('a')).toEqual(row(1));
    expect(c.take('a')).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('keeps absent rows as ABSENT_ROW', () => {
    const c = new EncodedRowCache(1024 * 1024);
    c.put('gone', ABSENT_ROW);
    expect(c.take('gone')).toBe(ABSENT_ROW);
  });

  it('evicts the oldest rows first and stays within its budget', () => {
    const c = new EncodedRowCache(entryBytes('k00') * 10);
    for (let i = 0; i < 15; i++) c.put(`k${String(i).padStart(2, '0')}`, row(i));
    expect(c.size).toBe(10);
    expect(c.take('k04')).toBeUndefined();
    expect(c.take('k05')).toEqual(row(5));
    expect(c.take('k14')).toEqual(row(14));
  });

  it('replaces a row put again and forgets deleted rows and everything on clear', () => {
    const c = new EncodedRowCache(1024 * 1024);
    c.put('a', row(1));
    c.put('a', row(2));
    expect(c.size).toBe(1);
    expect(c.take('a')).toEqual(row(2));
    c.put('b', row(3));
    c.delete('b');
    expect(c.take('b')).toBeUndefined();
    c.put('c', row(4));
    c.clear();
    expect(c.take('c')).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('refuses rows larger than a quarter of its budget, and everything with a budget of 0', () => {
    const c = new EncodedRowCache(entryBytes('big', 1000) * 2);
    c.put('big', row(1, 1000));
    expect(c.take('big')).toBeUndefined();
    const none = new EncodedRowCache(0);
    none.put('a', row(1));
    expect(none.take('a')).toBeUndefined();
  });

  it('does not keep the bytes of taken rows alive in its eviction queue', async () => {
    const c = new EncodedRowCache(64 * 1024 * 1024);
    const refs: WeakRef<object>[] = [];
    const fill = () => {
      for (let i = 0; i < 50; i++) {
        const r = Buffer.from(new ArrayBuffer(1000));
        refs.push(new WeakRef(r.buffer));
        c.put(`k${i}`, r);
        c.take(`k${i}`);
      }
    };
    fill();
    await new Promise((r) => setImmediate(r)); // WeakRef targets stay alive until the turn ends
    gc();
    expect(refs.filter((w) => w.deref() !== undefined)).toHaveLength(0);
  });
});
