/**
 * The `Store` interface: the Bigtable operation set every backend implements (`memory:`,
 * `file:DIR`, `bigtable://…`). Everything above the store layer (oracle, transactions, observers,
 * the server) talks to this interface only.
 *
 * Contract shared by all backends (the conformance suite in `store-conformance.ts` checks it):
 * - Single-row operations are atomic: a concurrent reader sees all of a row mutation or none.
 *   Concurrent writers to one row are serialized.
 * - A promise that resolves means the write is durable for durable backends (survives kill -9),
 *   unless the caller asked for `durability: 'deferred'` (see WriteOptions).
 * - Invalid input throws a `StoreError` and writes nothing (for `mutateRows`, per row).
 * - Reads apply each family's GC rule, so collected cells are never visible even before the
 *   background reclamation removes them.
 */
import { StoreError } from './errors.js';
import { describeType } from '../util/describe-type.js';
import type {
  AtomicRowEntry,
  Bytes,
  Cell,
  CheckAndMutateRequest,
  DropRowRangeRequest,
  FamilyModification,
  MutateRowsEntry,
  MutateRowsResult,
  Mutation,
  ReadModifyWriteRule,
  ReadRowsOptions,
  Row,
  RowFilter,
  RowKeySample,
  TableSpec,
  WriteOptions,
} from './types.js';

export interface Store {
  /** The URL it was opened with, e.g. `file:./data`. */
  readonly url: string;
  /**
   * What one call may carry, as this store enforces it (ROW_KEY_TOO_LARGE, VALUE_TOO_LARGE,
   * TOO_MANY_MUTATIONS): the transaction layer checks a commit against them before it writes
   * anything, so a row too large fails whole instead of leaving some of its locks behind.
   */
  readonly limits: StoreLimits;

  // --- admin -------------------------------------------------------------------------------
  /** Throws TABLE_EXISTS, INVALID_NAME. */
  createTable(name: string, spec: TableSpec): Promise<void>;
  /** Throws TABLE_NOT_FOUND. Deletes all data. */
  deleteTable(name: string): Promise<void>;
  /** Sorted names. */
  listTables(): Promise<string[]>;
  /** Throws TABLE_NOT_FOUND. */
  getTable(name: string): Promise<TableSpec>;
  /** Applies the modifications in order, all or nothing. Dropping a family deletes its data. */
  modifyColumnFamilies(name: string, modifications: readonly FamilyModification[]): Promise<TableSpec>;
  dropRowRange(name: string, request: DropRowRangeRequest): Promise<void>;

  // --- data --------------------------------------------------------------------------------
  /**
   * The filtered row, or null if no cell survives the filter. Its qualifiers and values may be
   * views into the store's cached row: read-only — copy one before writing into it, or the
   * cache (and, on an embedded store, the row's next rewrite) takes the change. The same holds
   * for `readRows`. (Percolator's reads hand out their own copies: docs/transactions.md.)
   */
  readRow(table: string, key: Bytes, filter?: RowFilter): Promise<Row | null>;
  /** Rows in key order (descending if `reversed`); rows left with no cells are skipped. */
  readRows(table: string, options?: ReadRowsOptions): AsyncIterable<Row>;
  /** Atomic within the row. */
  mutateRow(table: string, key: Bytes, mutations: readonly Mutation[], options?: WriteOptions): Promise<void>;
  /**
   * Each entry is atomic on its own; entries are independent (one failing does not stop the
   * others). Returns one result per entry, in input order. Throws only for table-level problems
   * (TABLE_NOT_FOUND) or a closed store.
   */
  mutateRows(table: string, entries: readonly MutateRowsEntry[], options?: WriteOptions): Promise<MutateRowsResult[]>;
  /**
   * Evaluates the predicate on the row and applies the true or false mutations, atomically.
   * Returns whether the predicate matched.
   */
  checkAndMutateRow(table: string, key: Bytes, request: CheckAndMutateRequest): Promise<boolean>;
  /** Applies the rules atomically; returns the new cells of the columns it touched. */
  readModifyWriteRow(table: string, key: Bytes, rules: readonly ReadModifyWriteRule[]): Promise<Row>;
  /** Tablet boundaries with approximate byte offsets. */
  sampleRowKeys(table: string): Promise<RowKeySample[]>;

  /** Flushes and releases resources. Further calls throw STORE_CLOSED. Idempotent. */
  close(): Promise<void>;
}

/**
 * The row caches, for an operator sizing them (`serve --row-cache-mib`, its status and /metrics).
 * A lookup is one row's locality group, asked by a read or by a write that rewrites it; each is
 * answered by exactly one of the four: the decoded tier, the encoded tier, a known absence (the
 * key filter), or an engine read (LevelDB's block cache, then the disk).
 */
export interface StoreCacheStats {
  readonly decoded: { readonly budgetBytes: number; readonly bytes: number; readonly rows: number };
  readonly encoded: { readonly budgetBytes: number };
  readonly lookups: { readonly total: number } & { readonly [A in LookupAnswer]: number };
}

/** What answers a row lookup (StoreCacheStats), in the order status pages and /metrics list them. */
export const LOOKUP_ANSWERS = ['decoded', 'encoded', 'absent', 'engine'] as const;
export type LookupAnswer = (typeof LOOKUP_ANSWERS)[number];

/**
 * An extension of the embedded backends (`memory:`, `file:`), which live in one process and write
 * one atomic engine batch per call: a conditional write across rows and tables. It is not part of
 * the Bigtable model (Cloud Bigtable has no multi-row atomicity); Percolator uses it for one-phase
 * commits while no other process can reach the store (docs/transactions.md).
 */
export interface AtomicRowsStore extends Store {
  /**
   * True while the store may be reachable from other processes (`percolator serve`, the checkers'
   * IPC channel): their readers cannot see what this process keeps in memory (the one-phase
   * commits' in-memory locks), so every Percolator of this process commits in two phases. A
   * counted mark: true while any share taken with `markShared` is held.
   */
  readonly shared: boolean;
  /**
   * Takes a share (see `shared`: true from this call on) and returns its release, idempotent. The
   * holder releases it once nothing the store holds can reach another process through what it
   * shared any more (startServer: once its gRPC server has stopped). What such processes wrote
   * stays in the store as ordinary cells, their locks included, which this process's readers and
   * one-phase commits see: that is why the release is safe then. A holder that never releases
   * marks the store shared for good (the checkers' IPC channel).
   */
  markShared(): () => void;
  /**
   * If no entry's predicate matches a cell of its row, applies every entry's mutations in one
   * atomic write (all rows or none, durable when resolved unless deferred); otherwise writes
   * nothing. Returns the index of the first entry whose predicate matched, or -1 when written.
   * Throws: INVALID_ARGUMENT (two entries for one row, bad mutations), TABLE_NOT_FOUND; nothing is
   * written then.
   */
  checkAndMutateRows(entries: readonly AtomicRowEntry[], options?: WriteOptions): Promise<number>;
  /** Resolves once every write issued before the call, deferred ones included, is durable. */
  sync(): Promise<void>;
  /**
   * Why the store refuses writes, or null while it takes them. A `file:` store refuses every
   * write once one failed to reach its log (a full disk, an I/O error; docs/durability.md › *A
   * full disk*) until the disk has room again (it retries by itself, or see `resumeWrites`) or it
   * is reopened. Point reads go on; a scan fails while its range holds a deferred write not yet
   * on disk.
   */
  writeFailure(): StoreError | null;
  /**
   * Writes to `table` entered so far (ever growing) and in flight now, or null for a table that
   * does not exist. Quiescence of a few tables (`waitForQuiescence({ tables })`) asks whether any
   * write reached them during a pass, where the oracle's count would also see other tables' work.
   */
  writeActivity(table: string): { readonly entered: number; readonly inflight: number } | null;
  /**
   * Tries now to take writes again after a failure: null once the store takes them (every
   * acknowledged write, deferred ones included, is then durable), else why it still refuses.
   * Never rejects; null at once for a store that takes writes.
   */
  resumeWrites(): Promise<StoreError | null>;
  /** `readRow`, answered synchronously (the embedded backends read from memory or a sync engine get). */
  readRowSync(table: string, key: Bytes, filter?: RowFilter): Row | null;
  /**
   * The row's cells in the locality groups that hold `families` — canonical order, GC rules
   * applied, but otherwise unfiltered (other families of those groups included; the caller picks).
   * For the transaction layer's point reads, which select their lock and write cells themselves:
   * evaluating a RowFilter was most of a cached read's cost. Pass a constant array (the groups
   * are remembered per array). Throws: TABLE_NOT_FOUND, EMPTY_ROW_KEY and the other row-key checks.
   */
  readCellsSync(table: string, key: Bytes, families: readonly string[]): readonly Cell[];
  /**
   * `derive(readCellsSync(table, key, families))`, kept with the cached row until the row changes
   * or leaves the cache, so a hot row is summarized once (the transaction layer keeps the newest
   * committed version of each column this way). `derive` must be a pure function of the cells and
   * the same function object on every call; the cache charges its result a fixed size. Throws what
   * readCellsSync throws, and what `derive` throws. `key` may be given as its bytesKey (a latin1
   * string, one character per byte): a cached row is then found without making bytes.
   */
  readDerivedSync<T extends object>(
    table: string,
    key: Bytes | string,
    families: readonly string[],
    derive: (cells: readonly Cell[]) => T,
  ): T;
  /** The row caches' budgets, use and lookups since the store opened. O(1). */
  cacheStats(): StoreCacheStats;
}

/** The store's atomic multi-row extension, or null for backends without one (bigtable://). */
export function atomicRowsOf(store: Store): AtomicRowsStore | null {
  const s = store as Partial<AtomicRowsStore>;
  return typeof s.checkAndMutateRows === 'function' &&
    typeof s.markShared === 'function' &&
    typeof s.readRowSync === 'function' &&
    typeof s.readCellsSync === 'function' &&
    typeof s.readDerivedSync === 'function'
    ? (store as AtomicRowsStore)
    : null;
}

/** Options every backend accepts (some are ignored where they make no sense). */
export interface StoreOptions {
  readonly limits?: Partial<StoreLimits>;
  /** Tablet split threshold in bytes (default 64 MiB). */
  readonly tabletSplitBytes?: number;
  /** Background GC sweep period in ms (0 disables the timer; GC still applies on read and write). */
  readonly gcIntervalMs?: number;
  /** The clock used for server timestamps and max-age GC, in microseconds. Tests inject one. */
  readonly nowMicros?: () => number;
}

/** Per-call limits; the defaults are Cloud Bigtable's (its quotas page: row keys 4 KB, column qualifiers 16 KB). */
export interface StoreLimits {
  readonly maxRowKeyBytes: number;
  /** A longer qualifier in a mutation or a read-modify-write rule is INVALID_MUTATION. */
  readonly maxQualifierBytes: number;
  /** One cell's value (a SetCell's, or what an append makes). */
  readonly maxValueBytes: number;
  /** One row mutation (MutateRow, a MutateRows entry, each branch of a CheckAndMutateRow). */
  readonly maxMutationsPerRow: number;
}

export const DEFAULT_LIMITS: StoreLimits = {
  maxRowKeyBytes: 4 * 1024,
  maxQualifierBytes: 16 * 1024,
  maxValueBytes: 10 * 1024 * 1024,
  maxMutationsPerRow: 100_000,
};

/** Collects a `readRows` stream into an array. */
export async function collectRows(rows: AsyncIterable<Row>): Promise<Row[]> {
  // A promise of a stream (a missed call to readRows, an `await` too many) was a TypeError "not async iterable".
  if (typeof (rows as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] !== 'function')
    throw new StoreError('INVALID_ARGUMENT', `collectRows needs a readRows stream (an async iterable), not ${describeType(rows)}`);
  const out: Row[] = [];
  for await (const row of rows) out.push(row);
  return out;
}
