import { describe, expect, it } from 'vitest';
import { Queue } from './queue.js';

describe('Queue', () => {
  it('returns elements in insertion order across its internal compactions', () => {
    const q = new Queue<number>();
    const expected: number[] = [];
    let next = 0;
    // Interleave pushes and shifts so the consumed prefix is dropped many times.
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 300; i++) {
        q.push(next);
        expected.push(next++);
      }
      for (let i = 0; i < 250; i++) expect(q.shift()).toBe(expected.shift());
      expect(q.size).toBe(expected.length);
    }
    while (expected.length > 0) expect(q.shift()).toBe(expected.shift());
    expect(q.shift()).toBeUndefined();
    expect(q.size).toBe(0);
  });

  it('retains only accepted elements, in order', () => {
    const q = new Queue<number>();
    for (let i = 0; i < 10; i++) q.push(i);
    q.shift();
    q.retain((x) => x % 2 === 0);
    expect(q.size).toBe(4);
    expect([q.shift(), q.shift(), q.shift(), q.shift(), q.shift()]).toEqual([2, 4, 6, 8, undefined]);
  });

  it('drains everything in order', () => {
    const q = new Queue<number>();
    for (let i = 0; i < 5; i++) q.push(i);
    q.shift();
    expect(q.size).toBe(4);
    expect(q.drain()).toEqual([1, 2, 3, 4]);
    expect(q.size).toBe(0);
    expect(q.shift()).toBeUndefined();
  });
});
