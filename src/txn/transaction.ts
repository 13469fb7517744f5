/**
 * A Percolator transaction (§2.2): snapshot reads at the start timestamp, writes buffered until
 * commit, then client-coordinated two-phase commit over the store's conditional mutations.
 *
 * Reads see the transaction's own buffered writes first (read-your-writes), then the snapshot.
 * Commit: prewrite the primary's row, then every other row in parallel; take a commit timestamp;
 * commit the primary row (the commit point); then the other rows. A failure before the commit
 * point rolls back what was prewritten (best effort — anything missed is cleaned lazily by
 * readers); after it, the transaction is committed and leftover secondaries are rolled forward
 * by whoever meets them. A failure at the commit point itself may have taken effect (a reply
 * lost): the primary decides before any secondary is touched (settleFailedCommit).
 *
 * GC lease (a remote oracle's registrations can lapse): every read returns only after its start
 * timestamp is known to be held — no GC pass can have collected what it read — and a commit checks
 * again after its prewrites, before the commit point; otherwise LEASE_LOST, nothing committed.
 *
 * Concurrency contract: one transaction object is used by one logical task; its reads may run
 * concurrently with each other, but not with commit.
 */
import { asciiKey, bytesKey, compareBytes, keyBytes, utf8 } from '../store/bytes.js';
import { emptyRowKey } from '../store/validate.js';
import type { AtomicRowsStore, Store } from '../store/store.js';
import type { Mutation, RowFilter, RowRange } from '../store/types.js';
import { describeType } from '../util/describe-type.js';
import { unknownKey } from '../util/options.js';
import { cleanup } from './actions/cleanup.js';
import { commitOnePhase } from './actions/commit-one-phase.js';
import { commitPrimary, commitSecondary } from './actions/commit.js';
import { type LockTemplate, prewrite } from './actions/prewrite.js';
import { rollBackRows } from './actions/roll-back.js';
import { checkRowLimits } from './actions/row-limits.js';
import type { BufferedCell, BufferedRow, SideWrite } from './actions/types.js';
import { TxnError, describeCell } from './errors.js';
import type { CommittedTxn } from './gc-recent.js';
import { LockRefresher } from './lock-refresher.js';
import { RowBuffer } from './row-buffer.js';
import type { TableCheck } from './table-check.js';
import type { MemLocks } from './mem-locks.js';
import { LOCK, clearNotifications, encodeColumn, encodeUserColumn, userColumn, weakNotifyMutations } from './layout.js';

const WEAK = Buffer.from('w');
import {
  type ColumnRef,
  type ReadContext,
  type ScannedRow,
  type VersionAt,
  readRowAt,
  readVersionsAt,
  readResolvedNow,
  readVersionNow,
  tryReadVersion,
  readVersionsNow,
  scanAt,
} from './snapshot-read.js';

export type RowKey = Uint8Array | string;
export type Value = Uint8Array | string;

/** Points in the commit protocol where the crash-injection checkers may stop a process. */
export type ProtocolPoint =
  | 'after-primary-prewrite'
  | 'mid-secondary-prewrites'
  | 'before-primary-commit'
  | 'after-primary-commit'
  | 'mid-secondary-commits'
  | 'after-commit';

/** A cell a commit notified: a change of an observed column, or a weak notification. */
export interface NotifiedWrite {
  readonly table: string;
  readonly row: Uint8Array;
  readonly column: string;
  readonly weak: boolean;
}

export interface TxnEnvironment {
  readonly store: Store;
  readonly read: ReadContext;
  /** Which tables are Percolator tables (table-check.ts): every read and commit checks the tables it names. */
  readonly tables: TableCheck;
  getTimestamp(): Promise<number>;
  readonly owner: string;
  readonly lockTtlMs: number;
  readonly onProtocolPoint?: (point: ProtocolPoint) => void | Promise<void>;
  /** Whether writes to this column must notify observers (the observed-columns registry). */
  isObserved(table: string, column: string): boolean;
  /**
   * Called after a commit that set notify cells, with them and the transaction (local dispatch:
   * the workers of this process take the rows without a scanner having to find them).
   */
  onNotified?(notified: readonly NotifiedWrite[], tx: Transaction): void;
  /** Called after every commit point passed, once the secondaries are done (drives version GC). */
  onCommitted?(commit: CommittedTxn): void;
  /**
   * A secondary commit failed after the commit point. Readers repair most such failures (they
   * roll the secondary forward); LOCK_NOT_FOUND is a broken invariant and is kept as evidence.
   */
  onSecondaryCommitError?(error: unknown): void;
  /**
   * Secondary rows whose commit failed in the store (not decided otherwise): the environment may
   * send them again (secondary-retry.ts) rather than leave them to readers.
   */
  onSecondaryCommitsLeft?(rows: readonly BufferedRow[], startTs: number, commitTs: number): void;
  /**
   * Set when commits may take one phase (commit-one-phase.ts): the store's atomic multi-row
   * extension. Used only while the store is not shared, with `read.memLocks` ordering readers.
   */
  readonly onePhase?: AtomicRowsStore;
}

export function toBytes(v: Value): Uint8Array {
  if (typeof v === 'string') return utf8(v);
  if (v instanceof Uint8Array) return v;
  // A number or an object as a row key reached the store as a TypeError of its own.
  throw new TxnError('INVALID_ARGUMENT', `a row key must be a string or a Uint8Array, not ${describeType(v)}`, {});
}

/**
 * A value to buffer until commit: a string as UTF-8, bytes copied — the caller may reuse its
 * buffer after `set` returns, and must not change what commits. Anything else (an ArrayBuffer,
 * another typed array, a DataView, a number) is INVALID_VALUE: its bytes are ambiguous, and taken
 * as they were they committed the wrong ones.
 */
function ownedValue(v: unknown, table: string, column: string): Uint8Array {
  if (typeof v === 'string') return utf8(v);
  if (v instanceof Uint8Array) return Uint8Array.prototype.slice.call(v);
  throw new TxnError('INVALID_VALUE', `a value must be a string or a Uint8Array (a Buffer), not ${describeType(v)}`, { table, column });
}

/**
 * A table name must be a string. Another type reached the store as TABLE_NOT_FOUND at best ("table
 * 5 does not exist"), and a write buffered under it failed only at commit.
 */
export function checkTable(table: unknown): void {
  if (typeof table !== 'string') throw new TxnError('INVALID_ARGUMENT', `a table name must be a string, not ${describeType(table)}`, {});
}

/**
 * An empty row key to write: the store's own EMPTY_ROW_KEY, as a read of one gets from the store,
 * so a caller matches one error whether it read or wrote the row (it was INVALID_COLUMN here).
 */

/** `setJson`'s text: JSON.stringify's, or INVALID_VALUE where it throws (a BigInt, a cycle) or gives none (undefined, a function, a symbol). */
function jsonText(value: unknown, table: string, column: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw new TxnError(
      'INVALID_VALUE',
      `setJson cannot encode the value as JSON: ${e instanceof Error ? e.message : String(e)}`,
      { table, column },
      { cause: e },
    );
  }
  if (text === undefined) throw new TxnError('INVALID_VALUE', `setJson cannot encode ${describeType(value)} as JSON`, { table, column });
  return text;
}

/** A scan's options: an object with a valid `limit` and `columns` an array of column names. */
function checkScanOptions(options: { columns?: readonly string[]; limit?: number }): void {
  if (options === null || typeof options !== 'object') {
    throw new TxnError('INVALID_ARGUMENT', `a scan's options must be an object, not ${describeType(options)}`, {});
  }
  const key = unknownKey(options, SCAN_OPTIONS);
  if (key !== undefined) {
    throw new TxnError('INVALID_ARGUMENT', `a scan has no option ${JSON.stringify(key)} (it takes columns and limit)`, { option: key });
  }
  checkScanLimit(options.limit);
  const columns: unknown = options.columns;
  if (columns === undefined) return;
  if (!Array.isArray(columns))
    throw new TxnError('INVALID_ARGUMENT', `a scan's columns must be an array, not ${describeType(columns)}`, {});
  for (const c of columns) {
    if (typeof c !== 'string') throw new TxnError('INVALID_COLUMN', `a column must be a string, not ${describeType(c)}`, { column: c });
  }
}

/**
 * A row as the store's synchronous point reads take it: an ASCII string as itself (it is its own
 * bytesKey), anything else as bytes. A cache hit then makes no bytes for the row.
 */
export function rowKeyOf(row: RowKey): Uint8Array | string {
  return typeof row === 'string' ? (asciiKey(row) ?? utf8(row)) : row instanceof Uint8Array ? row : toBytes(row);
}

/** The row's bytesKey (`bytes`: the row as bytes, if made): an ASCII string row is its own, without bytes. */
function rowBytesKey(row: RowKey, bytes?: Uint8Array): string {
  return (typeof row === 'string' ? asciiKey(row) : null) ?? bytesKey(bytes ?? toBytes(row));
}

/** Range selection for scans: a prefix, or start (inclusive) / end (exclusive) keys. */
export interface ScanRange {
  readonly prefix?: RowKey;
  readonly start?: RowKey;
  readonly end?: RowKey;
}

const RANGE_KEYS: ReadonlySet<string> = new Set(['prefix', 'start', 'end']);
const SCAN_OPTIONS: ReadonlySet<string> = new Set(['columns', 'limit']);

export function toRowRange(r: ScanRange): RowRange {
  // A number or null was read as "no bounds": the scan covered the whole table.
  if (r === null || typeof r !== 'object')
    throw new TxnError('INVALID_ARGUMENT', `a scan range must be an object, not ${describeType(r)}`, {});
  // A misspelt bound (`prefx`) was no bound: the scan covered the whole table. So was a start or
  // an end beside a prefix, which the prefix overrode.
  const key = unknownKey(r, RANGE_KEYS);
  if (key !== undefined) {
    throw new TxnError('INVALID_ARGUMENT', `a scan range has no option ${JSON.stringify(key)} (it takes prefix, or start and end)`, {
      option: key,
    });
  }
  if (r.prefix !== undefined && (r.start !== undefined || r.end !== undefined))
    throw new TxnError('INVALID_ARGUMENT', 'a scan range takes a prefix, or start and end, not both', {});
  if (r.prefix !== undefined) {
    const p = toBytes(r.prefix);
    let i = p.length - 1;
    while (i >= 0 && p[i] === 0xff) i--;
    if (i < 0) return { startKeyClosed: p };
    const end = Uint8Array.prototype.slice.call(p, 0, i + 1) as Uint8Array;
    end[i] = (end[i] as number) + 1;
    return { startKeyClosed: p, endKeyOpen: end };
  }
  return {
    ...(r.start !== undefined ? { startKeyClosed: toBytes(r.start) } : {}),
    ...(r.end !== undefined ? { endKeyOpen: toBytes(r.end) } : {}),
  };
}

/** One filter object per column selection (layout.ts scanFilter), bounded like layout's read filters. */
const columnFilters = new Map<string, RowFilter>();

/** A scan's `limit`: absent (every row) or a positive integer (`limit: 0` used to yield one row). */
function checkScanLimit(limit: number | undefined): void {
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit > 0)) {
    throw new TxnError('INVALID_ARGUMENT', `a scan's limit must be a positive integer, not ${limit}`, { limit });
  }
}

/** Restricts a scan to some columns: whole families (`family:`) or exact columns. */
function columnsFilter(columns: readonly string[] | undefined): RowFilter | undefined {
  if (columns === undefined || columns.length === 0) return undefined;
  const key = JSON.stringify(columns);
  let f = columnFilters.get(key);
  if (f === undefined) {
    f = buildColumnsFilter(columns);
    if (columnFilters.size >= 10_000) columnFilters.clear();
    columnFilters.set(key, f);
  }
  return f;
}

function buildColumnsFilter(columns: readonly string[]): RowFilter {
  const branches: RowFilter[] = columns.map((c) => {
    if (c.endsWith(':')) {
      const family = c.slice(0, -1);
      encodeColumn(`${family}:x`);
      const escaped = family.replace(/\./g, '\\.');
      return { columnQualifierRegexFilter: `${escaped}:(?s:.*)` };
    }
    const q = encodeColumn(c);
    return {
      interleave: [
        { columnRangeFilter: { familyName: LOCK, startQualifierClosed: q, endQualifierClosed: q } },
        { columnRangeFilter: { familyName: 'write', startQualifierClosed: q, endQualifierClosed: q } },
      ],
    };
  });
  return branches.length === 1 ? (branches[0] as RowFilter) : { interleave: branches };
}

/** A registration's `held` (oracle/types.ts): whether the oracle still counts the start timestamp. */
export type LeaseCheck = () => boolean | Promise<boolean>;

export class Snapshot {
  protected finished = false;
  /** Internal readers (the observer runner) may read reserved columns such as acks. */
  allowReserved = false;

  constructor(
    protected readonly env: TxnEnvironment,
    readonly startTs: number,
    protected readonly lease: LeaseCheck | null = null,
  ) {}

  /**
   * Undefined when the start timestamp is known to be held (or cannot lapse); a promise that
   * settles once the oracle confirmed it; throws LEASE_LOST (or the promise rejects with it)
   * when it is not held: a GC pass may have collected what this snapshot reads.
   */
  protected checkLease(): Promise<void> | undefined {
    if (this.lease === null) return undefined;
    const held = this.lease();
    if (held === true) return undefined;
    if (held === false) throw this.leaseLost(undefined);
    return held.then(
      (ok) => {
        if (!ok) throw this.leaseLost(undefined);
      },
      (e: unknown) => {
        throw this.leaseLost(e);
      },
    );
  }

  private leaseLost(cause: unknown): TxnError {
    return new TxnError(
      'LEASE_LOST',
      `transaction ${this.startTs}: the oracle no longer counts its start timestamp (its lease reports lapsed${
        cause === undefined ? ' and the GC watermark passed it' : ', and the oracle could not be asked'
      }): GC may have collected what it reads, so it returns nothing more and commits nothing; run it again`,
      { startTs: this.startTs },
      cause === undefined ? undefined : { cause },
    );
  }

  /** A read's promise, settled only once the lease is confirmed (no wrapping where leases cannot lapse). */
  private leased<T>(read: Promise<T>): Promise<T> {
    if (this.lease === null) return read;
    return read.then((v) => {
      const pending = this.checkLease();
      return pending === undefined ? v : pending.then(() => v);
    });
  }

  /** The column with its qualifier bytes (validated; reserved names only for internal readers; remembered for user columns). */
  private columnRef(column: string): ColumnRef {
    return this.allowReserved ? { column, q: encodeColumn(column) } : userColumn(column);
  }

  /**
   * Ends the snapshot's reads (Percolator's `release()` of a snapshot): later reads fail with
   * TXN_FINISHED instead of reading below a watermark that may have moved past them, where GC
   * may have collected what they would read (they returned null).
   */
  endReads(): void {
    this.finished = true;
  }

  protected checkActive(): void {
    if (this.finished) throw new TxnError('TXN_FINISHED', `transaction ${this.startTs} has already finished`, { startTs: this.startTs });
  }

  /** The value of a cell at the snapshot, or null. */
  get(table: string, row: RowKey, column: string): Promise<Uint8Array | null> {
    // The point read, straight to the snapshot read (no grouping), and on an embedded store
    // answered synchronously when nothing is in the way (no async layer at all; at or above the
    // newest commit with the version's promise, already resolved: readResolvedNow).
    try {
      this.checkActive();
      checkTable(table);
      if (!this.env.tables.has(table)) return this.getInUnchecked(table, row, column);
      const own = this.buffered(table, row, column);
      if (own !== undefined) return Promise.resolve(own);
      const ref = this.columnRef(column);
      const now = readResolvedNow(table, rowKeyOf(row), ref, this.startTs, this.env.read);
      if (now !== undefined) return this.leased(now);
      return this.leased(
        readVersionsAt(this.env.store, table, toBytes(row), [ref], this.startTs, this.env.read).then((v) => v[0]?.value ?? null),
      );
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** `get` in a table not yet known to be a Percolator table: the arguments first (as on the known path), then the table. */
  private async getInUnchecked(table: string, row: RowKey, column: string): Promise<Uint8Array | null> {
    this.columnRef(column);
    rowKeyOf(row);
    await this.env.tables.check(table);
    return this.get(table, row, column);
  }

  /**
   * The value of a cell at the snapshot and the commit timestamp of the write that made it
   * (`commitTs`: 0 if the column was never written; null for a value this transaction wrote
   * itself). Everything committed at or below `commitTs` is in this snapshot, so an application
   * can tell whether another transaction's snapshot (its start timestamp) already saw this write.
   */
  async getVersion(
    table: string,
    row: RowKey,
    column: string,
  ): Promise<{ readonly value: Uint8Array | null; readonly commitTs: number | null }> {
    this.checkActive();
    checkTable(table);
    const key = toBytes(row);
    const ref = this.columnRef(column);
    if (!this.env.tables.has(table)) await this.env.tables.check(table);
    const own = this.buffered(table, row, column);
    if (own !== undefined) return { value: own, commitTs: null };
    const v =
      readVersionNow(table, key, ref, this.startTs, this.env.read) ??
      (await readVersionsAt(this.env.store, table, key, [ref], this.startTs, this.env.read))[0];
    if (this.lease !== null) await this.checkLease();
    return { value: v?.value ?? null, commitTs: v?.commitTs ?? 0 };
  }

  async getString(table: string, row: RowKey, column: string): Promise<string | null> {
    const v = await this.get(table, row, column);
    return v === null ? null : Buffer.from(v).toString('utf8');
  }

  async getJson<T = unknown>(table: string, row: RowKey, column: string): Promise<T | null> {
    const s = await this.getString(table, row, column);
    return s === null ? null : (JSON.parse(s) as T);
  }

  /** `get` from one store read, or undefined when a lock is in the way (tryReadVersion). Internal (Percolator.get). */
  async tryGet(table: string, row: RowKey, column: string): Promise<Uint8Array | null | undefined> {
    this.checkActive();
    checkTable(table);
    const key = toBytes(row);
    const ref = this.columnRef(column);
    if (!this.env.tables.has(table)) await this.env.tables.check(table);
    const own = this.buffered(table, row, column);
    if (own !== undefined) return own;
    const v = await tryReadVersion(this.env.store, table, key, ref, this.startTs, this.env.read);
    if (this.lease !== null) await this.checkLease();
    return v?.value;
  }

  /** Several cells, one store read per distinct row, in parallel. Values in the order asked. */
  async getMany(table: string, cells: readonly { row: RowKey; column: string }[]): Promise<(Uint8Array | null)[]> {
    this.checkActive();
    checkTable(table);
    if (!Array.isArray(cells)) throw new TxnError('INVALID_ARGUMENT', 'getMany needs an array of { row, column }', { table });
    for (const c of cells) {
      if (c === null || typeof c !== 'object') {
        throw new TxnError('INVALID_ARGUMENT', `getMany needs an array of { row, column }, not of ${describeType(c)}`, { table });
      }
      // Rows are grouped by their bytes below, which takes only bytes: any other row is refused here.
      if (typeof c.row !== 'string' && !(c.row instanceof Uint8Array)) toBytes(c.row);
    }
    if (cells.length === 1) {
      // The common point read, without the grouping machinery below.
      const c = cells[0] as { row: RowKey; column: string };
      return [await this.get(table, c.row, c.column)];
    }
    const out: (Uint8Array | null)[] = new Array(cells.length).fill(null);
    // Grouped by the key as given: a string row is converted once, not once per column. (A row
    // given both as a string and as bytes is read twice, with the same result.)
    type Entry = { row: Uint8Array | string; refs: ColumnRef[]; slots: number[] };
    const byString = new Map<string, Entry>();
    const byBytes = new Map<string, Entry>();
    const mayOwn = this.hasBuffered();
    cells.forEach((c, i) => {
      const own = mayOwn ? this.buffered(table, c.row, c.column) : undefined;
      if (own !== undefined) {
        out[i] = own;
        return;
      }
      const isString = typeof c.row === 'string';
      const groups = isString ? byString : byBytes;
      const k = isString ? (c.row as string) : bytesKey(c.row as Uint8Array);
      let e = groups.get(k);
      if (e === undefined) groups.set(k, (e = { row: isString ? rowKeyOf(k) : (c.row as Uint8Array), refs: [], slots: [] }));
      e.refs.push(this.columnRef(c.column));
      e.slots.push(i);
    });
    if (!this.env.tables.has(table)) await this.env.tables.check(table);
    // Rows the embedded store answers synchronously are filled in place; the rest (locks, long
    // values, a remote store) go through the full read, in parallel.
    let pending: Promise<void>[] | null = null;
    try {
      for (const e of [...byString.values(), ...byBytes.values()]) {
        const now = readVersionsNow(table, e.row, e.refs, this.startTs, this.env.read);
        if (now !== undefined) {
          e.slots.forEach((slot, j) => {
            out[slot] = (now[j] as VersionAt).value;
          });
          continue;
        }
        (pending ??= []).push(
          readRowAt(this.env.store, table, keyBytes(e.row), e.refs, this.startTs, this.env.read).then((values) => {
            e.slots.forEach((slot, j) => {
              out[slot] = values[j] ?? null;
            });
          }),
        );
      }
    } catch (e) {
      // A later row's bad key throws here: the reads already started must not reject unhandled.
      for (const p of pending ?? []) p.catch(() => undefined);
      throw e;
    }
    if (pending !== null) await Promise.all(pending);
    if (this.lease !== null) await this.checkLease();
    return out;
  }

  /**
   * Rows of a range at the snapshot, with their visible columns (optionally only `columns`:
   * exact `family:qualifier` names or whole families as `family:`).
   */
  async *scan(
    table: string,
    range: ScanRange = {},
    options: { columns?: readonly string[]; limit?: number } = {},
  ): AsyncGenerator<ScannedRow> {
    this.checkActive();
    checkTable(table);
    checkScanOptions(options);
    const rows = toRowRange(range);
    const filter = columnsFilter(options.columns);
    if (!this.env.tables.has(table)) await this.env.tables.check(table);
    if (this.lease === null) {
      yield* scanAt(this.env.store, table, rows, this.startTs, this.env.read, filter, options.limit);
      return;
    }
    for await (const row of scanAt(this.env.store, table, rows, this.startTs, this.env.read, filter, options.limit)) {
      await this.checkLease();
      yield row;
    }
    // The end of the range is a read too: the rows GC took would be missing from it.
    await this.checkLease();
  }

  /** Buffered value for read-your-writes: undefined = not written by this transaction. */
  protected buffered(_table: string, _row: RowKey, _column: string): Uint8Array | null | undefined {
    return undefined;
  }

  /** Whether `buffered` can answer anything (most reads come before a transaction writes). */
  protected hasBuffered(): boolean {
    return false;
  }
}

export class Transaction extends Snapshot {
  private readonly rows = new Map<string, RowBuffer>();
  private readonly weak: { table: string; row: Uint8Array; column: string }[] = [];
  /** What the commit notified (reportNotified). */
  private notified: readonly NotifiedWrite[] = [];
  /** Notification clearings to write with a one-phase commit (clearNotificationsOnCommit). */
  private clears: SideWrite[] | null = null;
  /** A one-phase commit wrote `clears`. */
  private clearsWritten = false;
  private committed: number | null = null;
  private durability: 'durable' | 'deferred' = 'durable';
  /** Who commits this transaction, when it is not its user's to commit (reserveCommit). */
  private commitOwner: string | null = null;
  /** Tables written to (or notified in) that were not known to be Percolator tables then: checked at commit. */
  private unchecked: Set<string> | null = null;

  /**
   * Internal (the observer runner, `Percolator.transaction`): the transaction is committed by the
   * caller, with what it adds (an observer's ack), through the function returned; a commit() from
   * the code it runs is INVALID_ARGUMENT and leaves the transaction as it was. An observer's own
   * commit landed its writes without the ack, then failed the run: each retry committed them again
   * (found 2026-12-01: three commits of one change before the cell was parked). In
   * `db.transaction`, one landed its writes and then the wrapper's own commit threw TXN_FINISHED.
   * `owner` completes the refusal's message: "is committed by OWNER, not by the code it runs".
   */
  reserveCommit(owner: string): () => Promise<number | null> {
    this.commitOwner = owner;
    return () => {
      this.commitOwner = null;
      return this.commit();
    };
  }

  /**
   * Internal (the observer runner): the commit resolves once visible and becomes durable with the
   * store's next group commit (embedded stores; others write durably anyway). For transactions
   * whose commit no one outside is told of: the store's log is sequential, so a crash keeps a
   * prefix of it — an observer's lost commit takes the clearing of its notification with it, and
   * the observer runs again — and any durable commit issued later makes this one durable first.
   */
  deferDurability(): void {
    this.durability = 'deferred';
  }

  /** Buffers a write (visible to this transaction's reads at once, to others after commit). */
  set(table: string, row: RowKey, column: string, value: Value): void {
    this.put(table, row, column, 'put', ownedValue(value, table, column));
  }

  /** `set` of the value's JSON text; INVALID_VALUE for a value JSON cannot encode (undefined, a function, a BigInt, a cycle). */
  setJson(table: string, row: RowKey, column: string, value: unknown): void {
    this.set(table, row, column, jsonText(value, table, column));
  }

  delete(table: string, row: RowKey, column: string): void {
    this.put(table, row, column, 'delete', null);
  }

  /**
   * A weak notification (Percolator §2.4): sets only the notify cell of `column`, typically a
   * notify-only column no one writes, so its observers run. It takes no lock and conflicts with
   * no writer. A two-phase commit writes it before the commit point, so an aborted transaction
   * may leave one behind (a one-phase commit writes it in its own atomic write): observers of
   * weakly notified columns may run more than once per notification.
   */
  notify(table: string, row: RowKey, column: string): void {
    this.checkActive();
    checkTable(table);
    encodeUserColumn(column);
    const key = toBytes(row);
    if (key.byteLength === 0) throw emptyRowKey(table);
    if (!this.env.tables.has(table)) (this.unchecked ??= new Set()).add(table);
    this.weak.push({ table, row: key, column });
  }

  /**
   * Internal (the worker): deletes `column`'s notify cells up to `maxTs` in this transaction's
   * commit write, so an observer run's commit and the clearing of what it processed are one row
   * write. Only a one-phase commit can carry it: returns false otherwise, and the caller clears
   * the notifications itself after the commit. Nothing is cleared if the transaction does not
   * commit (aborts, conflicts, or writes nothing). True is a request, not a promise: the store
   * may be shared (`percolator serve` starting) before the commit chooses its protocol, which
   * then takes two phases without the clearing — `clearedOnCommit` says what the commit did.
   */
  clearNotificationsOnCommit(table: string, row: Uint8Array, column: string, maxTs: number): boolean {
    this.checkActive();
    if (this.onePhase() === null) return false;
    (this.clears ??= []).push({ table, row, mutations: clearNotifications(column, maxTs) });
    return true;
  }

  /** Internal (the worker): whether the commit wrote the clearings `clearNotificationsOnCommit` asked for. */
  get clearedOnCommit(): boolean {
    return this.clearsWritten;
  }

  /** The store and in-memory locks of a one-phase commit, or null when commits take two phases. */
  private onePhase(): { store: AtomicRowsStore; memLocks: MemLocks } | null {
    const store = this.env.onePhase;
    const memLocks = this.env.read.memLocks;
    return store !== undefined && memLocks !== undefined && !store.shared ? { store, memLocks } : null;
  }

  /** Internal writes (observer acks) may use reserved column names. */
  setInternal(table: string, row: Uint8Array, column: string, value: Uint8Array): void {
    this.put(table, row, column, 'put', value, true);
  }

  private put(table: string, row: RowKey, column: string, kind: 'put' | 'delete', value: Uint8Array | null, internal = false): void {
    this.checkActive();
    checkTable(table);
    const q = internal ? encodeColumn(column) : encodeUserColumn(column);
    const key = toBytes(row);
    if (key.byteLength === 0) throw emptyRowKey(table);
    // `set` is synchronous: a table not known yet is checked at commit, before anything is written.
    if (!this.env.tables.has(table)) (this.unchecked ??= new Set()).add(table);
    const rk = rowBytesKey(row, key);
    const k = `${table}\u0000${rk}`;
    const r = this.rows.get(k);
    const cell: BufferedCell = { column, q, kind, value, notify: !internal && this.env.isObserved(table, column) };
    if (r === undefined) this.rows.set(k, new RowBuffer(table, key, rk, cell));
    else r.set(cell);
  }

  protected override hasBuffered(): boolean {
    return this.rows.size > 0;
  }

  protected override buffered(table: string, row: RowKey, column: string): Uint8Array | null | undefined {
    if (this.rows.size === 0) return undefined;
    const r = this.rows.get(`${table}\u0000${rowBytesKey(row)}`);
    const c = r?.get(column);
    if (c === undefined) return undefined;
    // A copy: what the caller does with it must not change what commits.
    return c.kind === 'delete' || c.value === null ? null : Uint8Array.prototype.slice.call(c.value);
  }

  /**
   * The snapshot's rows of the range with this transaction's own writes laid over them, in row
   * order: a row it wrote appears (or changes, or disappears when it deleted every column), like
   * every other read of a transaction (read-your-writes).
   */
  override scan(
    table: string,
    range: ScanRange = {},
    options: { columns?: readonly string[]; limit?: number } = {},
  ): AsyncGenerator<ScannedRow> {
    // Without own rows in the range (most scans: observers read before they write), the
    // snapshot's scan itself, with no generator layered over it.
    const mine = this.rows.size === 0 ? [] : this.ownRowsIn(table, toRowRange(range));
    return mine.length === 0 ? super.scan(table, range, options) : this.scanOver(mine, table, range, options);
  }

  private async *scanOver(
    mine: readonly RowBuffer[],
    table: string,
    range: ScanRange,
    options: { columns?: readonly string[]; limit?: number },
  ): AsyncGenerator<ScannedRow> {
    this.checkActive();
    checkScanOptions(options);
    const wanted = options.columns !== undefined && options.columns.length > 0 ? options.columns : null;
    const overlay = (columns: Map<string, Uint8Array>, r: RowBuffer): Map<string, Uint8Array> => {
      for (const c of r.cells) {
        if (wanted !== null && !wanted.some((w) => (w.endsWith(':') ? c.column.startsWith(w) : c.column === w))) continue;
        if (c.kind === 'delete' || c.value === null) columns.delete(c.column);
        else columns.set(c.column, Uint8Array.prototype.slice.call(c.value));
      }
      return columns;
    };
    const limit = options.limit;
    let emitted = 0;
    let i = 0;
    // The snapshot's scan without the limit: rows this transaction deleted do not count.
    for await (const r of super.scan(table, range, wanted === null ? {} : { columns: wanted })) {
      for (; i < mine.length && compareBytes((mine[i] as RowBuffer).row, r.row) < 0; i++) {
        const own = overlay(new Map(), mine[i] as RowBuffer);
        if (own.size === 0) continue;
        yield { row: (mine[i] as RowBuffer).row, columns: own };
        if (++emitted === limit) return;
      }
      let columns = r.columns;
      if (i < mine.length && compareBytes((mine[i] as RowBuffer).row, r.row) === 0) columns = overlay(columns, mine[i++] as RowBuffer);
      if (columns.size === 0) continue;
      yield { row: r.row, columns };
      if (++emitted === limit) return;
    }
    for (; i < mine.length; i++) {
      const own = overlay(new Map(), mine[i] as RowBuffer);
      if (own.size === 0) continue;
      yield { row: (mine[i] as RowBuffer).row, columns: own };
      if (++emitted === limit) return;
    }
  }

  /** This transaction's buffered rows of `table` inside `range`, in row order. */
  private ownRowsIn(table: string, range: RowRange): RowBuffer[] {
    const out: RowBuffer[] = [];
    for (const r of this.rows.values()) {
      if (r.table !== table) continue;
      if (range.startKeyClosed !== undefined && compareBytes(r.row, range.startKeyClosed) < 0) continue;
      if (range.endKeyOpen !== undefined && compareBytes(r.row, range.endKeyOpen) >= 0) continue;
      out.push(r);
    }
    return out.sort((a, b) => compareBytes(a.row, b.row));
  }

  /** Number of buffered cells. */
  get size(): number {
    let n = 0;
    for (const r of this.rows.values()) n += r.cells.length;
    return n;
  }

  /** The commit timestamp once committed (null for read-only or not yet committed). */
  get commitTs(): number | null {
    return this.committed;
  }

  /** Drops the buffer without writing anything (nothing is locked before commit). */
  abort(): void {
    this.finished = true;
  }

  /**
   * Two-phase commit. Returns the commit timestamp (null if nothing was written).
   * Throws WRITE_CONFLICT / KEY_LOCKED / TXN_ABORTED (retryable) — nothing was committed then;
   * TOO_MANY_MUTATIONS / VALUE_TOO_LARGE — a row or a value the store cannot take (row-limits.ts),
   * found before anything was written; NOT_A_PERCOLATOR_TABLE or the store's TABLE_NOT_FOUND — a
   * table written to is none (table-check.ts), found before anything was written; a store error —
   * nothing was committed either;
   * COMMIT_UNDETERMINED — committed or not, the store could not say (readers settle it);
   * INVALID_ARGUMENT — the transaction is `db.transaction`'s or an observer's, whose commit is
   * theirs (reserveCommit): nothing was written and the transaction is still open.
   */
  async commit(): Promise<number | null> {
    this.checkActive();
    if (this.commitOwner !== null)
      throw new TxnError('INVALID_ARGUMENT', `transaction ${this.startTs} is committed by ${this.commitOwner}, not by the code it runs`, {
        startTs: this.startTs,
      });
    this.finished = true;
    if (this.unchecked !== null) for (const t of this.unchecked) await this.env.tables.check(t);
    try {
      return await this.commitWrites();
    } catch (e) {
      // A table remembered good may have been recreated without the system families since: the
      // store's FAMILY_NOT_FOUND for an internal family becomes NOT_A_PERCOLATOR_TABLE (table-check.ts).
      throw await this.env.tables.explain(e, this.tablesWritten());
    }
  }

  /** The distinct tables this transaction writes to or notifies in. */
  private tablesWritten(): string[] {
    const tables = new Set<string>();
    for (const r of this.rows.values()) tables.add(r.table);
    for (const w of this.weak) tables.add(w.table);
    return [...tables];
  }

  private async commitWrites(): Promise<number | null> {
    if (this.rows.size === 0) {
      // Nothing to commit, but what it read reached the caller as this transaction's snapshot.
      if (this.lease !== null) await this.checkLease();
      if (this.weak.length > 0) await this.writeWeakNotifications(await this.env.getTimestamp());
      this.reportNotified([]);
      return null;
    }
    const env = this.env;
    // The buffers themselves: nothing writes to them once the transaction has finished.
    const rows: BufferedRow[] = [...this.rows.values()];
    const primaryRow = rows[0] as BufferedRow;
    const primaryCell = primaryRow.cells[0] as BufferedCell;
    const template: LockTemplate = {
      primaryTable: primaryRow.table,
      primaryRow: primaryRow.row,
      primaryColumn: primaryCell.column,
      wallTimeMs: env.read.nowMs(),
      ttlMs: env.lockTtlMs,
      owner: env.owner,
    };
    // A row the store cannot take whole fails here, before any lock of either protocol is written.
    checkRowLimits(rows, env.store.limits);
    // Readers of this process blocked on our locks are woken when the commit ends (local-commits.ts).
    const onePhase = this.onePhase();
    if (onePhase !== null) {
      // One atomic write cannot be taken back: the lease is checked before it.
      if (this.lease !== null) await this.checkLease();
      return this.commitInOnePhase(env, onePhase.store, onePhase.memLocks, rows);
    }
    const ended = env.read.localCommits?.begin(this.startTs);
    try {
      return await this.twoPhaseCommit(env, rows, primaryRow, primaryCell, template, rows.slice(1));
    } finally {
      ended?.();
    }
  }

  /**
   * One atomic store write for the whole transaction (commit-one-phase.ts). The in-memory locks
   * are taken before the commit ts exists and dropped once the write is visible, so every reader
   * that may have to see this commit waits for it (mem-locks.ts).
   */
  private async commitInOnePhase(
    env: TxnEnvironment,
    store: AtomicRowsStore,
    memLocks: MemLocks,
    rows: readonly BufferedRow[],
  ): Promise<number> {
    const release = memLocks.acquire(this.startTs, rows);
    let commitTs: number;
    try {
      commitTs = await env.getTimestamp();
      // Weak notifications carry the commit ts (as in two-phase commit) and are part of the one
      // atomic write: an observer that sees one finds the commit it signals.
      const side = this.weakNotifications(commitTs);
      if (this.clears !== null) side.push(...this.clears);
      if (env.onProtocolPoint !== undefined) await env.onProtocolPoint('before-primary-commit');
      await commitOnePhase(store, rows, this.startTs, commitTs, this.durability, side);
      this.committed = commitTs;
      this.clearsWritten = this.clears !== null;
    } finally {
      release();
    }
    if (env.onProtocolPoint !== undefined) await env.onProtocolPoint('after-commit');
    env.onCommitted?.({ startTs: this.startTs, rows, complete: true });
    this.reportNotified(rows);
    return commitTs;
  }

  private async twoPhaseCommit(
    env: TxnEnvironment,
    rows: readonly BufferedRow[],
    primaryRow: BufferedRow,
    primaryCell: BufferedCell,
    template: LockTemplate,
    secondaries: readonly BufferedRow[],
  ): Promise<number> {
    // Rows our locks may be on: prewritten, or whose prewrite failed in the store (it may have
    // been applied all the same). A conflict (TxnError) is a prewrite that wrote nothing.
    const locked: BufferedRow[] = [];
    const lock = (r: BufferedRow) =>
      prewrite(env.store, r, this.startTs, template).then(
        () => void locked.push(r),
        (e: unknown) => {
          if (!(e instanceof TxnError)) locked.push(r);
          throw e;
        },
      );
    const refresher = refresherOf(env).track(primaryRow, primaryCell, template, this.startTs);
    try {
      // The primary and the secondaries are prewritten concurrently (one round trip, not two):
      // a reader that meets a secondary lock before the primary's exists rolls the primary back
      // (rollback record at startTs), and then our primary prewrite fails on that record.
      const outcomes = await Promise.allSettled([
        lock(primaryRow).then(async () => {
          if (env.onProtocolPoint !== undefined) await env.onProtocolPoint('after-primary-prewrite');
        }),
        inParallel(secondaries, async (r, i) => {
          await lock(r);
          if (i === 0 && env.onProtocolPoint !== undefined) await env.onProtocolPoint('mid-secondary-prewrites');
        }),
      ]);
      const failed = outcomes.find((o) => o.status === 'rejected');
      if (failed !== undefined) {
        await this.rollBack(locked);
        throw failed.reason;
      }
      let atCommitPoint = false;
      try {
        // Held now, after every read and prewrite: nothing they met was collected — not even a
        // rollback record at our start that should have stopped our primary's late prewrite.
        if (this.lease !== null) await this.checkLease();
        const commitTs = await env.getTimestamp();
        // Weak notifications carry the commit timestamp and land before the commit point: an
        // observer that sees one starts above commitTs, so it meets our primary lock (and waits
        // for the outcome) or our committed data — never a snapshot without it. If we abort
        // instead, the notification is spurious, which weak notifications allow.
        await this.writeWeakNotifications(commitTs);
        if (env.onProtocolPoint !== undefined) await env.onProtocolPoint('before-primary-commit');
        atCommitPoint = true;
        this.committed = await commitPrimary(env.store, primaryRow, 0, this.startTs, commitTs, this.durability);
      } catch (e) {
        if (atCommitPoint) this.committed = await this.settleFailedCommit(primaryRow, rows, e);
        else {
          await this.rollBack(rows);
          throw e;
        }
      }
    } finally {
      refresher.stop();
    }
    const commitTs = this.committed;
    if (env.onProtocolPoint !== undefined) await env.onProtocolPoint('after-primary-commit');
    // Past the commit point: failures here are repaired by readers (roll forward). The first
    // secondary goes alone (the crash checkers stop a process right after it), the rest
    // concurrently.
    let complete = true;
    const left: BufferedRow[] = [];
    const failed =
      (r: BufferedRow) =>
      (e: unknown): void => {
        complete = false;
        if (!(e instanceof TxnError)) left.push(r);
        env.onSecondaryCommitError?.(e);
      };
    await Promise.all([
      secondaries.length === 0
        ? undefined
        : commitSecondary(env.store, secondaries[0] as BufferedRow, this.startTs, commitTs)
            .catch(failed(secondaries[0] as BufferedRow))
            .then(async () => {
              if (env.onProtocolPoint !== undefined) await env.onProtocolPoint('mid-secondary-commits');
            }),
      ...secondaries.slice(1).map((r) => commitSecondary(env.store, r, this.startTs, commitTs).catch(failed(r))),
    ]);
    if (left.length > 0) env.onSecondaryCommitsLeft?.(left, this.startTs, commitTs);
    if (env.onProtocolPoint !== undefined) await env.onProtocolPoint('after-commit');
    env.onCommitted?.({ startTs: this.startTs, rows, complete });
    this.reportNotified(rows);
    return commitTs;
  }

  /**
   * Remembers what a commit of `rows` notified — the observed columns it wrote, then its weak
   * notifications (one walk over the cells) — and tells the environment, if anything.
   */
  private reportNotified(rows: readonly BufferedRow[]): void {
    const out: NotifiedWrite[] = [];
    for (const r of rows) for (const c of r.cells) if (c.notify) out.push({ table: r.table, row: r.row, column: c.column, weak: false });
    for (const w of this.weak) out.push({ table: w.table, row: w.row, column: w.column, weak: true });
    this.notified = out;
    if (out.length > 0) this.env.onNotified?.(out, this);
  }

  /**
   * Internal (the worker): after the commit, what it notified — the observed columns it wrote,
   * then its weak notifications; empty before the commit. The worker hands these rows to its own
   * runners at once, without a scanner having to find them.
   */
  notifiedWrites(): readonly NotifiedWrite[] {
    return this.notified;
  }

  /**
   * Internal (the worker): anything to commit — a cell written or deleted, or a weak
   * notification. An observer run that wrote nothing is not committed.
   */
  hasWrites(): boolean {
    return this.rows.size > 0 || this.weak.length > 0;
  }

  /** The weak notifications' notify cells at `ts`. */
  private weakNotifications(ts: number): SideWrite[] {
    return this.weak.map((w) => ({
      table: w.table,
      row: w.row,
      mutations: weakNotifyMutations(w.column, ts, WEAK),
    }));
  }

  private async writeWeakNotifications(ts: number): Promise<void> {
    if (this.weak.length === 0) return;
    const byTable = new Map<string, { key: Uint8Array; mutations: readonly Mutation[] }[]>();
    for (const w of this.weakNotifications(ts)) {
      let list = byTable.get(w.table);
      if (list === undefined) byTable.set(w.table, (list = []));
      list.push({ key: w.row, mutations: w.mutations });
    }
    for (const [table, entries] of byTable) {
      for (const r of await this.env.store.mutateRows(table, entries)) if (r.error) throw r.error;
    }
  }

  /**
   * Best-effort roll back of our own locks (roll-back.ts), for a transaction that can never
   * commit: it never tried its commit point (nobody else ever commits a primary), or its primary
   * is rolled back. Whatever a failure leaves, readers roll back from the primary.
   */
  private async rollBack(rows: readonly BufferedRow[]): Promise<void> {
    if (rows.length > 0) await rollBackRows(this.env.store, rows, this.startTs).catch(() => undefined);
  }

  /**
   * After the commit point failed — or may have: a store that goes out of reach (a server
   * killed, a connection reset) can apply the primary's commit and lose its reply. The primary
   * decides: its cleanup is conditioned on our lock, as the commit is, so it either rolls the
   * transaction back for good or finds our commit record. Rolled back: the other locks are
   * dropped (best effort; readers drop what is left) and `cause` is rethrown. Committed: its
   * commit timestamp is returned and the commit goes on with the secondaries. Unreadable (the
   * store still out of reach): every lock stays for readers to settle from the primary, and
   * COMMIT_UNDETERMINED is thrown. Never rolls a secondary back before the primary: a secondary
   * dropped under a committed primary is a torn transaction.
   */
  private async settleFailedCommit(primaryRow: BufferedRow, rows: readonly BufferedRow[], cause: unknown): Promise<number> {
    const primary = primaryRow.cells[0] as BufferedCell;
    let fate: Awaited<ReturnType<typeof cleanup>>;
    try {
      fate = await cleanup(this.env.store, primaryRow.table, primaryRow.row, primary.q, this.startTs);
    } catch (e) {
      const ref = { table: primaryRow.table, row: primaryRow.row, column: primary.column };
      throw new TxnError(
        'COMMIT_UNDETERMINED',
        `transaction ${this.startTs}: its commit failed and whether it took effect is unknown (the primary ${describeCell(ref)} could not be read); readers settle it from the primary`,
        { ...ref, startTs: this.startTs },
        { cause: new AggregateError([cause, e], 'the commit, then the check of its primary, failed') },
      );
    }
    if (fate !== 'rolledBack') return fate.committed;
    await this.rollBack(rows);
    throw cause;
  }
}

const refreshers = new WeakMap<TxnEnvironment, LockRefresher>();

/** The one lock refresher of an environment (created on first use). */
function refresherOf(env: TxnEnvironment): LockRefresher {
  let r = refreshers.get(env);
  if (r === undefined) refreshers.set(env, (r = new LockRefresher(env.store, env.lockTtlMs, env.read.nowMs)));
  return r;
}

/** Runs fn over items with bounded parallelism; rejects with the first error after all settle. */
async function inParallel<T>(items: readonly T[], fn: (item: T, index: number) => Promise<void>, width = 64): Promise<void> {
  let next = 0;
  let firstError: unknown = null;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      try {
        await fn(items[i] as T, i);
      } catch (e) {
        firstError ??= e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  if (firstError !== null) throw firstError;
}
