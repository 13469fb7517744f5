import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../util/seeded-random.js';
import { RowLatches } from './row-latch.js';

describe('RowLatches', () => {
  it('never lets two holders of a key overlap, and every holder finishes (random multi-key writers)', async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const rnd = mulberry32(seed);
      const latches = new RowLatches();
      const holders = new Map<string, number>();
      let overlaps = 0;
      let done = 0;
      const tasks: Promise<void>[] = [];
      for (let id = 0; id < 300; id++) {
        const n = 1 + Math.floor(rnd() * 4);
        const keys = Array.from({ length: n }, () => `k${Math.floor(rnd() * 12)}`);
        const unique = [...new Set(keys)];
        const yields = Math.floor(rnd() * 3);
        const body = async () => {
          for (const k of unique) {
            if (holders.has(k)) overlaps++;
            holders.set(k, id);
          }
          for (let y = 0; y < yields; y++) await Promise.resolve();
          for (const k of unique) {
            if (holders.get(k) !== id) overlaps++;
            holders.delete(k);
          }
          done++;
        };
        // Some arrive together, some after others have started.
        if (rnd() < 0.3) await Promise.resolve();
        tasks.push(unique.length === 1 && rnd() < 0.5 ? latches.run(unique[0] as string, body) : latches.runMany(unique, body));
      }
      await Promise.all(tasks);
      expect(overlaps).toBe(0);
      expect(done).toBe(300);
      expect(latches.size).toBe(0);
    }
  });

  it('takes all of a writer’s keys at once: a key named twice is held once, writers naming keys in opposite orders finish in the order they came', async () => {
    const latches = new RowLatches();
    const order: string[] = [];
    const a = latches.runMany(['a', 'a', 'b'], async () => {
      order.push('first in');
      await Promise.resolve();
      order.push('first out');
    });
    const b = latches.runMany(['b', 'c', 'a'], async () => {
      order.push('second');
    });
    const c = latches.run('c', async () => {
      order.push('third');
    });
    await Promise.all([a, b, c]);
    // Registered in this order, each waits only for those registered before it.
    expect(order).toEqual(['first in', 'first out', 'second', 'third']);
    expect(latches.size).toBe(0);
  });

  it('releases every key when the holder throws', async () => {
    const latches = new RowLatches();
    await expect(latches.runMany(['a', 'b'], () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(latches.size).toBe(0);
    let ran = false;
    await latches.runMany(['b', 'a'], async () => {
      ran = true;
    });
    expect(ran).toBe(true);
  });
});
