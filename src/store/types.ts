/**
 * The Bigtable data model (Bigtable §2; Cloud Bigtable v2 API), as plain TypeScript values.
 *
 * A table is a sparse sorted map (row, family:qualifier, timestamp) → value.
 * - Row keys, qualifiers and values are opaque bytes (`Uint8Array`); rows sort by unsigned bytes.
 * - Family names are strings matching `[_a-zA-Z0-9][-_.a-zA-Z0-9]*` (Cloud Bigtable's rule).
 * - Timestamps are microseconds as non-negative safe integers (< 2^53); versions of one column
 *   sort newest first. `-1` in a SetCell means "the server's clock" (milliseconds × 1000).
 * - Within a row, cells are ordered by family name, then qualifier bytes, then timestamp
 *   descending. Every read returns cells in that order.
 *
 * The shapes of `RowFilter`, `Mutation` and `ReadModifyWriteRule` mirror the v2 protos (camelCase
 * oneof names) so the gRPC server and the bigtable:// client translate them field by field.
 */

export type Bytes = Uint8Array;

/** One version of one column, as returned by reads. */
export interface Cell {
  readonly family: string;
  readonly qualifier: Bytes;
  /** Microseconds. */
  readonly timestamp: number;
  readonly value: Bytes;
  /** Labels applied by `applyLabelTransformer` filters; empty for most reads. */
  readonly labels: readonly string[];
}

/** A row as returned by reads: its key and its cells in canonical order (see header). */
export interface Row {
  readonly key: Bytes;
  readonly cells: readonly Cell[];
}

// ---------------------------------------------------------------------------------------------
// Garbage collection rules (Bigtable §5.3; v2 admin GcRule).

export type GcRule =
  | { readonly maxNumVersions: number }
  /** Versions older than this many microseconds (relative to the server's clock) are removed. */
  | { readonly maxAgeMicros: number }
  /** A cell is removed if it is removed by ALL the rules. */
  | { readonly intersection: readonly GcRule[] }
  /** A cell is removed if it is removed by ANY of the rules. */
  | { readonly union: readonly GcRule[] };

export interface FamilySpec {
  /** No rule (or `undefined`) keeps every version. */
  readonly gcRule?: GcRule;
  /**
   * Families in one locality group are stored together and apart from other groups: a read or
   * scan whose filter can only touch one group never reads the others' data. Default "default".
   */
  readonly localityGroup?: string;
}

export interface TableSpec {
  readonly families: Readonly<Record<string, FamilySpec>>;
}

export type FamilyModification =
  | { readonly id: string; readonly create: FamilySpec }
  | { readonly id: string; readonly update: FamilySpec }
  | { readonly id: string; readonly drop: true };

// ---------------------------------------------------------------------------------------------
// Row sets and ranges.

/**
 * A row range. Bounds are bytes; an absent start is the beginning of the table, an absent end
 * is its end. `startKeyClosed`/`startKeyOpen` are exclusive of each other, as in the proto.
 */
export interface RowRange {
  readonly startKeyClosed?: Bytes;
  readonly startKeyOpen?: Bytes;
  readonly endKeyClosed?: Bytes;
  readonly endKeyOpen?: Bytes;
}

/** Union of explicit keys and ranges. An empty RowSet (no keys, no ranges) means the whole table. */
export interface RowSet {
  readonly rowKeys?: readonly Bytes[];
  readonly rowRanges?: readonly RowRange[];
}

// ---------------------------------------------------------------------------------------------
// Filters (v2 RowFilter). Exactly one property per object.

export interface ColumnRange {
  readonly familyName: string;
  readonly startQualifierClosed?: Bytes;
  readonly startQualifierOpen?: Bytes;
  readonly endQualifierClosed?: Bytes;
  readonly endQualifierOpen?: Bytes;
}

export interface ValueRange {
  readonly startValueClosed?: Bytes;
  readonly startValueOpen?: Bytes;
  readonly endValueClosed?: Bytes;
  readonly endValueOpen?: Bytes;
}

/** [startTimestampMicros, endTimestampMicros); an absent or 0 end means infinity. */
export interface TimestampRange {
  readonly startTimestampMicros?: number;
  readonly endTimestampMicros?: number;
}

export type RowFilter =
  | { readonly chain: readonly RowFilter[] }
  | { readonly interleave: readonly RowFilter[] }
  | {
      readonly condition: {
        readonly predicateFilter: RowFilter;
        /** Absent: the row yields no cells when the predicate matches. */
        readonly trueFilter?: RowFilter;
        /** Absent: the row yields no cells when the predicate does not match. */
        readonly falseFilter?: RowFilter;
      };
    }
  | { readonly sink: true }
  | { readonly passAllFilter: true }
  | { readonly blockAllFilter: true }
  /** RE2, full match, over the raw row key bytes (a string is taken as its UTF-8 bytes). */
  | { readonly rowKeyRegexFilter: Bytes | string }
  /** Keeps each row with this probability (0 < p < 1). */
  | { readonly rowSampleFilter: number }
  /** RE2, full match, over the family name. */
  | { readonly familyNameRegexFilter: string }
  | { readonly columnQualifierRegexFilter: Bytes | string }
  | { readonly columnRangeFilter: ColumnRange }
  | { readonly timestampRangeFilter: TimestampRange }
  | { readonly valueRegexFilter: Bytes | string }
  | { readonly valueRangeFilter: ValueRange }
  | { readonly cellsPerRowOffsetFilter: number }
  | { readonly cellsPerRowLimitFilter: number }
  | { readonly cellsPerColumnLimitFilter: number }
  | { readonly stripValueTransformer: true }
  | { readonly applyLabelTransformer: string };

// ---------------------------------------------------------------------------------------------
// Mutations (v2 Mutation). Applied atomically per row, in order.

export type Mutation =
  | {
      readonly setCell: {
        readonly familyName: string;
        readonly columnQualifier: Bytes;
        /** Microseconds; -1 = server time (ms granularity). */
        readonly timestampMicros: number;
        readonly value: Bytes;
      };
    }
  | {
      readonly deleteFromColumn: {
        readonly familyName: string;
        readonly columnQualifier: Bytes;
        readonly timeRange?: TimestampRange;
      };
    }
  | { readonly deleteFromFamily: { readonly familyName: string } }
  | { readonly deleteFromRow: Record<string, never> };

export type ReadModifyWriteRule =
  | { readonly familyName: string; readonly columnQualifier: Bytes; readonly appendValue: Bytes }
  /** Big-endian signed 64-bit; an absent cell counts as 0. */
  | { readonly familyName: string; readonly columnQualifier: Bytes; readonly incrementAmount: bigint };

// ---------------------------------------------------------------------------------------------
// Operation options and results.

export interface ReadRowsOptions {
  readonly rows?: RowSet;
  readonly filter?: RowFilter;
  /** Maximum number of rows returned (after filtering: rows with no cells are not counted). 0 or absent = no limit. */
  readonly rowsLimit?: number;
  /** Descending row-key order. */
  readonly reversed?: boolean;
}

export interface MutateRowsEntry {
  readonly key: Bytes;
  readonly mutations: readonly Mutation[];
}

/** Per-row outcome of `mutateRows`; `error` is set when that row's mutations were not applied. */
export interface MutateRowsResult {
  readonly index: number;
  readonly error?: import('./errors.js').StoreError;
}

export interface CheckAndMutateRequest extends WriteOptions {
  /** Absent: the condition is "the row has at least one cell". */
  readonly predicateFilter?: RowFilter;
  readonly trueMutations?: readonly Mutation[];
  readonly falseMutations?: readonly Mutation[];
  /**
   * The caller reads the outcome right whether or not an earlier send of this very request was
   * applied (Percolator's protocol actions: a prewrite that finds its own lock succeeded, a
   * commit that finds its own commit record committed). A remote store may then send it again
   * when a connection failure (a reset) left the outcome unknown, instead of failing the call;
   * other stores ignore it. Without it, such a failure is the caller's.
   */
  readonly resendable?: boolean;
}

/**
 * One row of an atomic multi-row conditional write (`AtomicRowsStore.checkAndMutateRows`): the
 * row's mutations are applied only if, for every entry, the predicate matches no cell of its row.
 */
export interface AtomicRowEntry {
  readonly table: string;
  readonly key: Bytes;
  /** Absent (and no `veto`): the entry never vetoes the write. */
  readonly predicateFilter?: RowFilter;
  /**
   * The in-process form of a predicate (the extension never crosses a process boundary): the
   * write is vetoed if `test` returns true for the row's cells of `families` (GC rules applied).
   * Cheaper than a filter that must be compiled for every call. Used instead of predicateFilter.
   */
  readonly veto?: RowVeto;
  readonly mutations: readonly Mutation[];
}

export interface RowVeto {
  readonly families: readonly string[];
  test(cells: readonly Cell[]): boolean;
}

export interface WriteOptions {
  /**
   * 'durable' (default): the promise resolves once the write is durable. 'deferred': it resolves
   * once the write is applied and visible to every reader of this store, and the write becomes
   * durable with the store's next group commit — at the latest before any durable write issued
   * after this promise resolved is acknowledged. A crash can lose a deferred write, so use it only
   * for data that can be recovered (Percolator's locks, and its secondary commits once the primary
   * commit is durable). `bigtable://` defers only against `percolator serve`, whose batch service
   * takes the flag for conditional and plain writes (src/server/batch-protocol.ts); against other
   * servers it writes durably.
   */
  readonly durability?: 'durable' | 'deferred';
}

/** A tablet boundary: rows < `key` hold about `offsetBytes` bytes. The last sample has an empty key. */
export interface RowKeySample {
  readonly key: Bytes;
  readonly offsetBytes: number;
}

export type DropRowRangeRequest = { readonly rowKeyPrefix: Bytes } | { readonly deleteAllDataFromTable: true };
