/**
 * One batched gRPC call carrying a turn's waiters, with the fallbacks every batching client here
 * shares (the lock service's `Batch`, `CheckAndMutateRows` of `percolator serve`):
 * - a server without the call answers UNIMPLEMENTED, having applied nothing: if `unsupported()`
 *   agrees, each waiter goes alone (and, by the caller's flag, every later one);
 * - any other failure of the call fails every waiter with that error (which entries were applied
 *   is unknown, as after a lost reply);
 * - an answer with another number of entries than waiters is not what the protocol allows, and
 *   fails every waiter with INTERNAL for the same reason;
 * - otherwise each waiter gets its own entry (`settle`).
 * Every waiter is settled exactly once, by `single`, `settle` or its `reject`.
 */
import { status } from '@grpc/grpc-js';

export interface BatchWaiter {
  reject(e: unknown): void;
}

export interface SendBatchOptions<W extends BatchWaiter, E> {
  /** The batched call: one entry per waiter, in order. */
  call(): Promise<readonly E[]>;
  /** Sends one waiter alone and settles it. */
  single(w: W): void;
  /** Called on UNIMPLEMENTED: true to send the waiters alone (the caller stops batching), false to fail them. */
  unsupported(): boolean;
  /** The message of the INTERNAL error for an answer of `got` entries. */
  mismatch(got: number): string;
  /** Settles a waiter with its entry. */
  settle(w: W, entry: E): void;
}

export async function sendBatch<W extends BatchWaiter, E>(waiters: readonly W[], options: SendBatchOptions<W, E>): Promise<void> {
  let entries: readonly E[];
  try {
    entries = await options.call();
  } catch (e) {
    if ((e as { code?: unknown } | null)?.code === status.UNIMPLEMENTED && options.unsupported()) {
      for (const w of waiters) options.single(w);
    } else {
      for (const w of waiters) w.reject(e);
    }
    return;
  }
  if (entries.length !== waiters.length) {
    const e = Object.assign(new Error(options.mismatch(entries.length)), { code: status.INTERNAL });
    for (const w of waiters) w.reject(e);
    return;
  }
  waiters.forEach((w, i) => options.settle(w, entries[i] as E));
}
