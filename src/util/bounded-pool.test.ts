import { describe, expect, it } from 'vitest';
import { BoundedPool } from './bounded-pool.js';

describe('BoundedPool', () => {
  it('never runs more than its width at once, and runs everything', async () => {
    const pool = new BoundedPool(3);
    let running = 0;
    let most = 0;
    let done = 0;
    for (let i = 0; i < 20; i++) {
      await pool.add(async () => {
        most = Math.max(most, ++running);
        await new Promise<void>((r) => setImmediate(r));
        running--;
        done++;
      });
    }
    await pool.drain();
    expect(most).toBe(3);
    expect(done).toBe(20);
  });

  it('drain throws the first error after the other tasks settled', async () => {
    const pool = new BoundedPool(4);
    let settled = 0;
    await pool.add(async () => {
      throw new Error('first');
    });
    await pool.add(async () => {
      await new Promise<void>((r) => setImmediate(r));
      settled++;
      throw new Error('second');
    });
    await expect(pool.drain()).rejects.toThrow('first');
    expect(settled).toBe(1);
    expect(pool.failed).toBe(true);
  });
});
