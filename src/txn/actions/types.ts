/**
 * Shapes shared by the protocol actions (one action per file, TiKV-style: functions over a store
 * and a buffer, each documented with Returns / Throws / Idempotent).
 */
import type { Mutation } from '../../store/types.js';
import type { LockRecord, ValueRef, WriteKind } from '../layout.js';

/** A cell of the transaction's write buffer, as prewrite and commit see it. */
export interface BufferedCell {
  readonly column: string;
  /** The encoded system qualifier of `column`. */
  readonly q: Uint8Array;
  readonly kind: WriteKind;
  /** The value for puts (null for deletes). */
  readonly value: Uint8Array | null;
  /** The column is observed: committing it also sets its notify cell. */
  readonly notify: boolean;
}

/** All buffered cells of one row. */
export interface BufferedRow {
  readonly table: string;
  readonly row: Uint8Array;
  readonly cells: readonly BufferedCell[];
  /** `row`'s bytesKey, when the buffer has it already. */
  readonly rowKey?: string;
}

/**
 * Non-transactional cells written with a commit (notify cells only: weak notifications and the
 * clearing of the notifications an observer run has processed). They take no lock and conflict
 * with nothing; written in the commit's atomic write, they land exactly when it does.
 */
export interface SideWrite {
  readonly table: string;
  readonly row: Uint8Array;
  readonly mutations: readonly Mutation[];
}

/** A cell that carries a lock, and that lock. */
export interface LockedCell {
  readonly table: string;
  readonly row: Uint8Array;
  readonly column: string;
  readonly q: Uint8Array;
  readonly startTs: number;
  readonly lock: LockRecord;
}

export type TxnStatus =
  | { readonly state: 'committed'; readonly commitTs: number }
  | { readonly state: 'rolledBack' }
  | { readonly state: 'locked'; readonly lock: LockRecord };

/** The worker liveness registry, as lock resolution needs it. */
export interface LivenessView {
  isAlive(owner: string): Promise<boolean>;
}

/** Everything lock resolution needs besides the store. */
export interface ResolveContext {
  readonly liveness: LivenessView;
  /** Wall clock in ms (injectable for TTL tests). */
  readonly nowMs: () => number;
  /**
   * True for a transaction of this process whose commit has ended (owner: its liveness id): what
   * it left locked is abandoned, however fresh — its commit failed, or its secondary commits did.
   */
  readonly finishedHere?: (owner: string, startTs: number) => boolean;
}

export type { ValueRef };
