/**
 * Test fixture: a second Percolator instance whose commits stop at one protocol point until
 * `until` resolves — by default for good: a writer process that died there once it is closed
 * (its lease ends, its locks stay behind).
 */
import type { TimestampSource } from '../oracle/types.js';
import type { Store } from '../store/store.js';
import { Percolator } from './percolator.js';
import type { ProtocolPoint } from './transaction.js';

export interface FrozenWriter {
  readonly writer: Percolator;
  /** Resolves when a commit of `writer` has reached the point (and stays there). */
  readonly reached: Promise<void>;
}

export async function frozenWriter(options: {
  readonly store: Store;
  readonly oracle: TimestampSource;
  readonly point: ProtocolPoint;
  /** Two phases by default: the locks a stopped writer leaves are what these tests are about. */
  readonly commitProtocol?: 'auto' | 'two-phase';
  readonly leaseMs?: number;
  /** When the held commits go on (default: never). */
  readonly until?: Promise<void>;
}): Promise<FrozenWriter> {
  const until = options.until ?? new Promise<void>(() => {});
  let signal!: () => void;
  const reached = new Promise<void>((r) => {
    signal = r;
  });
  const writer = await Percolator.open({
    store: options.store,
    oracle: options.oracle,
    commitProtocol: options.commitProtocol ?? 'two-phase',
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    onProtocolPoint: (p) => {
      if (p !== options.point) return;
      signal();
      return until;
    },
  });
  return { writer, reached };
}
