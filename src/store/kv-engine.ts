/**
 * The narrow engine interface the Bigtable model is built on: an ordered byte-key → byte-value
 * map with atomic durable batches. `memory/` and `embedded/` (LevelDB via classic-level) implement
 * it; swapping the LSM engine means writing one more of these.
 *
 * Contract:
 * - Keys compare as unsigned bytes.
 * - `write` applies a batch atomically. When its promise resolves, the batch is durable (for a
 *   durable engine: on disk and fsynced, or covered by a later fsync that has completed). Batches
 *   issued concurrently may be group-committed together; they are applied in call order.
 * - A DEFERRED write (`{ deferred: true }`) resolves as soon as its ops are queued in order and
 *   visible to `get` and `iterate`, before they are durable. They become durable with the group
 *   commit they joined — in particular before any durable write issued after the deferred one
 *   resolved (the log is sequential). A crash can lose them. The caller must not modify a
 *   deferred op's buffers afterwards (they may be held until the group is written).
 * - `get` is synchronous and sees every batch whose `write` has resolved.
 * - `iterate` sees a consistent snapshot taken when it starts.
 * - The engine does not interpret keys or values; the store layer above owns the layout
 *   (docs/format.md).
 */

import type { StoreError } from './errors.js';

export type KvOp =
  { readonly type: 'put'; readonly key: Uint8Array; readonly value: Uint8Array } | { readonly type: 'del'; readonly key: Uint8Array };

export interface KvRange {
  /** Inclusive lower bound; absent = from the first key. */
  readonly gte?: Uint8Array;
  /** Exclusive upper bound; absent = to the last key. */
  readonly lt?: Uint8Array;
  readonly reverse?: boolean;
  /**
   * How many entries the caller expects to use (a hint, not a cap): the first batch is no larger,
   * so a scan for one row does not fetch a full batch. Later batches grow as usual.
   */
  readonly expect?: number;
  /** Only the keys are wanted: entries' values may be empty (a scan of keys reads less). */
  readonly keysOnly?: boolean;
}

export interface KvWriteOptions {
  /** Resolve once applied and visible, before durable (see the contract above). */
  readonly deferred?: boolean;
}

export interface KvEntry {
  readonly key: Uint8Array;
  readonly value: Uint8Array;
}

export interface KvEngine {
  get(key: Uint8Array): Uint8Array | undefined;
  /** Yields entries of the range in order, a batch at a time (batches are never empty). */
  iterate(range: KvRange): AsyncIterable<readonly KvEntry[]>;
  write(ops: readonly KvOp[], options?: KvWriteOptions): Promise<void>;
  /**
   * Approximate bytes the keys in [gte, lt) occupy in the engine's files — from their indexes,
   * without reading the data; writes not yet flushed from memory may be left out. Optional: the
   * store splits tablets by reading their rows when the engine has no estimate.
   */
  approximateSize?(gte: Uint8Array, lt: Uint8Array): Promise<number>;
  /** Deletes every key in the range (not atomic with other writes; durable when resolved). */
  clear(range: KvRange): Promise<void>;
  /**
   * Gives back the disk space that deleted or overwritten keys in [gte, lt) still hold, as far as
   * the engine can (an LSM engine keeps them in its files until a compaction reaches them).
   * Best effort: it never rejects, and a store's data is the same with or without it. Optional:
   * an engine that frees space as it deletes has nothing to do.
   */
  reclaim?(gte: Uint8Array, lt: Uint8Array): Promise<void>;
  /**
   * Closes once every write has landed. With `seal`, a durable engine keeps those bytes beside its
   * data for the next open, bound to the exact data it holds now (see `takeSealed`); engines that
   * cannot bind them ignore it.
   */
  close(seal?: Uint8Array): Promise<void>;
  /**
   * The bytes the previous close sealed — only if the engine can prove that nothing has been
   * written since that close (by any process, any build, before or after a crash); otherwise
   * null. Answers once (later calls: null). Optional: an engine without it never seals.
   */
  takeSealed?(): Uint8Array | null;
  /**
   * Why the engine refuses writes, or null while it takes them: after a write failed (a full disk,
   * an I/O error) a durable engine may refuse every later one until it can write again (see
   * `resumeWrites`) or is reopened. Optional: an engine without it never refuses.
   */
  writeFailure?(): StoreError | null;
  /**
   * Tries now to take writes again after a failure (the engine may also retry by itself). Resolves
   * to null once it takes them — every acknowledged write durable, deferred ones included — or to
   * why it still refuses. Never rejects. Optional, like `writeFailure`.
   */
  resumeWrites?(): Promise<StoreError | null>;
}
