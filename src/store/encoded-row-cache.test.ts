import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ABSENT_ROW, EncodedRowCache, encodedRecordBytes, encodedRingBytes } from './encoded-row-cache.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const row = (n: number, size = 100) => Buffer.alloc(size, n);
/** A budget whose ring holds exactly `n` records of `key.length`-char keys and `size`-byte rows. */
function budgetFor(n: number, key: string, size = 100): number {
  const ring = n * encodedRecordBytes(key, size);
  const budget = Math.ceil((ring * 4) / 3);
  expect(encodedRingBytes(budget)).toBe(ring);
  return budget;
}

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
      // The median of three caches filled: other test files share this process (isolate: false), and
      // memory they release in the background (tens of MiB once) can land between two readings. The
      // caches stay alive until all are measured: a dropped one's ring is freed later, not at once.
      const grown: number[] = [];
      const caches: EncodedRowCache[] = [];
      for (let attempt = 0; attempt < 3; attempt++) {
        const before = memoryBytes();
        const c = new EncodedRowCache(budget);
        caches.push(c);
        for (let i = 0; i < 100_000; i++)
          c.put(`\u0001\u0000\u0000\u0000\u0005\u0000\u0000https://example.org/${i}`, Buffer.from(new ArrayBuffer(size)));
        grown.push(memoryBytes() - before);
      }
      for (const c of caches) c.clear();
      const median = grown.sort((a, b) => a - b)[1] as number;
      expect(median).toBeLessThan(budget * 1.2);
      expect(median).toBeGreaterThan(budget * 0.3);
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
    const c = new EncodedRowCache(budgetFor(10, 'k00'));
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
    const c = new EncodedRowCache(budgetFor(2, 'big', 1000));
    c.put('big', row(1, 1000));
    expect(c.take('big')).toBeUndefined();
    const none = new EncodedRowCache(0);
    none.put('a', row(1));
    expect(none.take('a')).toBeUndefined();
  });

  it('keeps no reference to the rows it is given, and hands back copies of their own', async () => {
    const c = new EncodedRowCache(64 * 1024 * 1024);
    const refs: WeakRef<object>[] = [];
    const fill = () => {
      for (let i = 0; i < 50; i++) {
        const r = Buffer.from(new ArrayBuffer(1000));
        r.fill(i);
        refs.push(new WeakRef(r.buffer));
        c.put(`k${i}`, r);
      }
    };
    fill();
    await new Promise((r) => setImmediate(r)); // WeakRef targets stay alive until the turn ends
    gc();
    expect(refs.filter((w) => w.deref() !== undefined)).toHaveLength(0);
    const out = c.take('k7') as Uint8Array;
    expect(out).toEqual(Buffer.alloc(1000, 7));
    expect(out.buffer.byteLength).toBe(1000);
  });

  it('never caches a key with a char above 0xFF (store keys are byte strings), and still forgets its old row', () => {
    const c = new EncodedRowCache(1024 * 1024);
    c.put('caf\u00e9', row(1));
    expect(c.take('caf\u00e9')).toEqual(row(1));
    c.put('\u0100wide', row(2));
    expect(c.take('\u0100wide')).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('gives up its oldest rows when its index is full, and keeps serving the newest (tiny rows, small budget)', () => {
    // 64 KiB: an index of at most 1 024 slots (half of them used) for a ring that could hold ~3 000 such rows.
    const c = new EncodedRowCache(64 * 1024);
    const key = (i: number) => `r${i}`;
    for (let i = 0; i < 20_000; i++) c.put(key(i), row(i & 0xff, 8));
    expect(c.size).toBeGreaterThan(100);
    expect(c.size).toBeLessThanOrEqual(512);
    for (let i = 19_990; i < 20_000; i++) expect(c.take(key(i))).toEqual(row(i & 0xff, 8));
    expect(c.take(key(0))).toBeUndefined();
  });

  it('never returns a stale or torn row while its ring wraps (randomized against a model)', () => {
    const rand = (() => {
      let x = 20261126;
      return () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
    })();
    const budget = 2 * 64 * 1024;
    const c = new EncodedRowCache(budget);
    const model = new Map<string, Buffer>();
    const recent: string[] = [];
    let hits = 0;
    for (let op = 0; op < 50_000; op++) {
      const key = `row${Math.floor(rand() * 2_000)}`;
      const r = rand();
      if (r < 0.5) {
        const size = rand() < 0.1 ? 0 : 5 + Math.floor(rand() * 600);
        const raw = size === 0 ? ABSENT_ROW : Buffer.alloc(size, op & 0xff);
        c.put(key, raw);
        model.set(key, Buffer.from(raw));
        recent.push(key);
      } else if (r < 0.9) {
        const got = c.take(key);
        if (got !== undefined) {
          hits++;
          expect(Buffer.from(got)).toEqual(model.get(key));
        }
        model.delete(key);
      } else {
        c.delete(key);
        model.delete(key);
      }
      // What was put among the last few rows (less than a lap) and not taken since is still there.
      if (op % 1_000 === 999) {
        for (const k of new Set(recent.slice(-40))) {
          const want = model.get(k);
          if (want === undefined) continue;
          const got = c.take(k);
          expect(got === undefined ? undefined : Buffer.from(got)).toEqual(want);
          model.delete(k);
        }
        recent.length = 0;
      }
    }
    expect(hits).toBeGreaterThan(1_000);
  });
});
