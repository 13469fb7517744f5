/**
 * What the durability checker's parent (durability.ts) and its writer child
 * (durability-writer.ts) agree on: the table, the row keys, the content of every row, and the
 * messages on the IPC channel.
 *
 * Invariants the check relies on:
 * - Every row key is written once per run, ever (keys carry the run id, the child's generation,
 *   the worker and a sequence number), so "present with the right content" can only mean "this
 *   write survived".
 * - A row's content is a pure function of its key (two cells, f:a and f:b, whose values are
 *   derived from the key), so the verifier checks content, not only presence, and a row holding one cell but not
 *   the other proves a torn (non-atomic) row write.
 * - The child sends `ack` for keys only after the store resolved the write that holds them; the
 *   parent counts a key as acknowledged only when that message arrives. So every counted key was
 *   acknowledged before the kill, whatever moment the kill hits.
 */
import type { Mutation } from '../store/types.js';

export const DURABILITY_TABLE = 'durability';
export const DURABILITY_FAMILY = 'f';
export const COLUMNS = ['a', 'b'] as const;
/** Fixed cell timestamp (µs; a multiple of 1000 as Cloud Bigtable requires). */
export const CELL_TIMESTAMP = 1_000_000;

/** Messages child → parent. */
export type WriterMessage =
  /** The first write was acknowledged: the child is in its write loop (the kill timer may start). */
  | { readonly t: 'writing' }
  /** These row keys were acknowledged by the store. */
  | { readonly t: 'ack'; readonly keys: readonly string[] }
  /** A write failed with IO_ERROR (the full-disk mode): its keys are not acknowledged. */
  | { readonly t: 'refused' }
  /** A graceful stop finished: the store was closed. */
  | { readonly t: 'stopped' }
  /** The child failed; it exits after sending this. */
  | { readonly t: 'error'; readonly code: string; readonly message: string };

/** Messages parent → child. */
export type ParentMessage = { readonly t: 'stop' };

export function rowKey(runId: string, generation: number, worker: number, seq: number): string {
  return `${runId}-${String(generation).padStart(4, '0')}-${String(worker).padStart(2, '0')}-${String(seq).padStart(9, '0')}`;
}

/**
 * The value of column `column` of row `key`: 16–271 bytes, a pure function of both (FNV-1a of
 * the pair seeds xorshift32; cheap, so the writer's speed measures the store, not hashing).
 */
export function cellValue(key: string, column: string): Buffer {
  let h = 0x811c9dc5;
  const text = `${key}\0${column}`;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  let x = h | 1;
  const len = 16 + (h >>> 24);
  const out = Buffer.allocUnsafe(len);
  for (let i = 0; i < len; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** The mutations that write row `key` (both cells, in one atomic row mutation). */
export function rowMutations(key: string): Mutation[] {
  return COLUMNS.map((c) => ({
    setCell: {
      familyName: DURABILITY_FAMILY,
      columnQualifier: Buffer.from(c),
      timestampMicros: CELL_TIMESTAMP,
      value: cellValue(key, c),
    },
  }));
}
