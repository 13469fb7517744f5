import { describe, expect, it } from 'vitest';
import { toStoreError } from './grpc-errors.js';
import {
  type BatchEntry,
  CheckAndMutateBatcher,
  type CheckAndMutateResult,
  MAX_BATCH_BYTES,
  MAX_BATCH_ENTRIES,
  MAX_BATCH_MUTATIONS,
} from './check-and-mutate-batcher.js';

/** A fake server: records calls; `batch` answers each request `{ row, match }` with its `match` unless told otherwise. */
function fake(options: { batch?: (requests: readonly object[]) => Promise<readonly BatchEntry[]> } = {}) {
  const batches: object[][] = [];
  const singles: object[] = [];
  const batcher = new CheckAndMutateBatcher(
    (requests) => {
      batches.push([...requests]);
      return options.batch?.(requests) ?? Promise.resolve(requests.map((r) => ({ predicateMatched: (r as { match: boolean }).match })));
    },
    (request) => {
      singles.push(request);
      return Promise.resolve({ predicateMatched: (request as { match: boolean }).match });
    },
  );
  return { batcher, batches, singles };
}

const matched = (r: CheckAndMutateResult): boolean => r.predicateMatched === true;
const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
/** google.rpc.ErrorInfo { reason = 1, domain = 2 } as `percolator serve` encodes it. */
function errorInfo(reason: string): Uint8Array {
  const r = Buffer.from(reason);
  const d = Buffer.from('percolator');
  return Buffer.concat([Buffer.from([0x0a, r.length]), r, Buffer.from([0x12, d.length]), d]);
}

describe('CheckAndMutateBatcher', () => {
  it('sends the calls of one turn of the event loop as one batch, and answers each its own result in order', async () => {
    const { batcher, batches, singles } = fake();
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => batcher.submit({ row: i, match: i % 2 === 0 })));
    expect(results.map(matched)).toEqual([true, false, true, false, true]);
    expect(batches).toHaveLength(1);
    expect(batches[0]?.map((r) => (r as { row: number }).row)).toEqual([0, 1, 2, 3, 4]);
    expect(singles).toHaveLength(0);
    expect(batcher.stats).toEqual({ batches: 1, batchedEntries: 5, singles: 0 });
    // Calls made after the batch went out form the next one.
    await Promise.all([batcher.submit({ row: 5, match: true }), batcher.submit({ row: 6, match: true })]);
    expect(batches).toHaveLength(2);
  });

  it('sends a lone call as a plain CheckAndMutateRow', async () => {
    const { batcher, batches, singles } = fake();
    expect(matched(await batcher.submit({ row: 1, match: true }))).toBe(true);
    expect(batches).toHaveLength(0);
    expect(singles).toHaveLength(1);
  });

  it(`splits a turn's calls into batches of at most ${MAX_BATCH_ENTRIES}`, async () => {
    const { batcher, batches } = fake();
    const n = MAX_BATCH_ENTRIES * 2 + 3;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => batcher.submit({ row: i, match: i === n - 1 })));
    expect(batches.map((b) => b.length)).toEqual([MAX_BATCH_ENTRIES, MAX_BATCH_ENTRIES, 3]);
    expect(results.filter(matched)).toHaveLength(1);
    expect(matched(results[n - 1] as CheckAndMutateResult)).toBe(true);
  });

  it(`keeps a batch's mutations under ${MAX_BATCH_BYTES} bytes; an entry above that goes alone`, async () => {
    const { batcher, batches, singles } = fake();
    const third = Math.floor(MAX_BATCH_BYTES / 3);
    const sizes = [third, third, third, third, MAX_BATCH_BYTES + 1, 10, 10];
    await Promise.all(sizes.map((bytes, i) => batcher.submit({ row: i, match: true }, bytes)));
    expect(batches.map((b) => b.map((r) => (r as { row: number }).row))).toEqual([
      [0, 1, 2],
      [5, 6],
    ]);
    expect(singles.map((r) => (r as { row: number }).row)).toEqual([3, 4]);
  });

  it('goes back to one call per entry, for good, when the server has no batch service (UNIMPLEMENTED)', async () => {
    const { batcher, batches, singles } = fake({
      batch: () => Promise.reject(Object.assign(new Error('12 UNIMPLEMENTED: unknown service'), { code: 12 })),
    });
    const results = await Promise.all([batcher.submit({ row: 1, match: true }), batcher.submit({ row: 2, match: false })]);
    expect(results.map(matched)).toEqual([true, false]);
    expect(batches).toHaveLength(1);
    expect(singles).toHaveLength(2);
    expect(batcher.batching).toBe(false);
    await Promise.all([batcher.submit({ row: 3, match: true }), batcher.submit({ row: 4, match: true })]);
    expect(batches).toHaveLength(1);
    expect(singles).toHaveLength(4);
  });

  it(`keeps a batched call within the server's ${MAX_BATCH_MUTATIONS} mutations, counting both branches`, async () => {
    const { batcher, batches, singles } = fake();
    const half = new Array(MAX_BATCH_MUTATIONS / 4).fill({});
    // Three entries of half the cap each (both branches): two fit in a call, the third starts the next.
    await Promise.all([1, 2, 3].map((row) => batcher.submit({ row, match: true, trueMutations: half, falseMutations: half })));
    expect(batches.map((b) => b.map((r) => (r as { row: number }).row))).toEqual([[1, 2]]);
    expect(singles.map((r) => (r as { row: number }).row)).toEqual([3]);
    // One entry above the cap goes alone (the server's own per-request rule applies to it).
    const over = new Array(MAX_BATCH_MUTATIONS).fill({});
    await Promise.all([
      batcher.submit({ row: 4, match: true, trueMutations: over, falseMutations: [{}] }),
      batcher.submit({ row: 5, match: true }),
      batcher.submit({ row: 6, match: true }),
    ]);
    expect(singles.map((r) => (r as { row: number }).row)).toEqual([3, 4]);
    expect(batches.at(-1)?.map((r) => (r as { row: number }).row)).toEqual([5, 6]);
  });

  it('sends an entry that brings its own way of going alone that way: when alone, and after UNIMPLEMENTED', async () => {
    const own: number[] = [];
    const alone = (row: number) => () => {
      own.push(row);
      return Promise.resolve({});
    };
    const ok = fake();
    expect(await ok.batcher.submit({ row: 1, match: true }, 0, alone(1))).toEqual({});
    expect(own).toEqual([1]);
    expect(ok.singles).toHaveLength(0);
    // In a batch it is an entry like any other.
    await Promise.all([ok.batcher.submit({ row: 2, match: true }, 0, alone(2)), ok.batcher.submit({ row: 3, match: false })]);
    expect(own).toEqual([1]);
    expect(ok.batches.at(-1)?.map((r) => (r as { row: number }).row)).toEqual([2, 3]);
    const old = fake({ batch: () => Promise.reject(Object.assign(new Error('12 UNIMPLEMENTED'), { code: 12 })) });
    await Promise.all([old.batcher.submit({ row: 4, match: true }, 0, alone(4)), old.batcher.submit({ row: 5, match: true })]);
    await old.batcher.submit({ row: 6, match: true }, 0, alone(6));
    expect(own).toEqual([1, 4, 6]);
    expect(old.singles.map((r) => (r as { row: number }).row)).toEqual([5]);
  });

  it('fails every entry with the error of a call that failed as a whole (its writes may or may not have been applied)', async () => {
    const reset = Object.assign(new Error('14 UNAVAILABLE: connection reset'), { code: 14 });
    const { batcher, singles } = fake({ batch: () => Promise.reject(reset) });
    const results = await Promise.allSettled([batcher.submit({ row: 1, match: true }), batcher.submit({ row: 2, match: true })]);
    expect(results.map((r) => (r.status === 'rejected' ? r.reason : null))).toEqual([reset, reset]);
    expect(singles).toHaveLength(0); // nothing is sent again: the batch may have been applied
    expect(batcher.batching).toBe(true);
  });

  it("fails only the entries whose status says so, with the server's stable code", async () => {
    const { batcher } = fake({
      batch: (requests) =>
        Promise.resolve(
          requests.map((_, i) =>
            i === 1
              ? {
                  status: {
                    code: 5,
                    message: 'TABLE_NOT_FOUND: table "t" does not exist',
                    details: [{ type_url: ERROR_INFO, value: errorInfo('TABLE_NOT_FOUND') }],
                  },
                }
              : { predicateMatched: true, status: i === 2 ? { code: 0 } : null },
          ),
        ),
    });
    const results = await Promise.allSettled([0, 1, 2].map((i) => batcher.submit({ row: i, match: true })));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const err = toStoreError((results[1] as PromiseRejectedResult).reason, { table: 't' });
    expect(err.code).toBe('TABLE_NOT_FOUND');
    expect(err.details).toMatchObject({ table: 't', grpcCode: 5 });
  });

  it('fails every entry when the server answers a different number of entries than it was sent', async () => {
    const { batcher } = fake({ batch: () => Promise.resolve([{ predicateMatched: true }]) });
    const results = await Promise.allSettled([batcher.submit({ row: 1, match: true }), batcher.submit({ row: 2, match: true })]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(toStoreError((results[0] as PromiseRejectedResult).reason, {}).code).toBe('IO_ERROR');
  });
});
