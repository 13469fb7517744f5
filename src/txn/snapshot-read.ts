/**
 * Snapshot reads at a timestamp ts (Percolator Figure 6, Get, lines 8–22), shared by
 * transactions and read-only snapshots.
 *
 * One store read per row fetches, for the requested columns, the locks and write records at or
 * below ts. A lock at or below ts means a transaction that may commit below ts is in flight: the
 * reader resolves it through its primary (roll forward / roll back) and reads again, or, if its
 * owner is alive and within TTL, backs off and retries until `lockWaitMs` runs out (KEY_LOCKED,
 * retryable). Otherwise the newest non-rollback write record at or below ts decides: a put's
 * value is inline in the record (short values) or in `data` at the writer's start ts.
 */
import { bytesEqual, bytesKey, keyBytes } from '../store/bytes.js';
import type { AtomicRowsStore, Store } from '../store/store.js';
import type { Cell, Row, RowFilter, RowRange } from '../store/types.js';
import { resolveLock } from './actions/resolve-lock.js';
import type { LockedCell, ResolveContext } from './actions/types.js';
import { TxnError, describeCell } from './errors.js';
import type { LocalCommits } from './local-commits.js';
import type { MemLocks } from './mem-locks.js';
import {
  DATA,
  LOCK,
  WRITE,
  decodeColumn,
  decodeLock,
  decodeWrite,
  exactColumn,
  readFilter,
  scanFilter,
  type WriteRecord,
} from './layout.js';

export interface ReadContext extends ResolveContext {
  /** How long a read waits for a live transaction's lock before failing with KEY_LOCKED. */
  readonly lockWaitMs: number;
  /** Commits in flight in this process: a reader blocked on one of their locks waits for it. */
  readonly localCommits?: LocalCommits;
  /** One-phase commits in flight in this process (mem-locks.ts): readers wait for those below them. */
  readonly memLocks?: MemLocks;
  /** The store, when it can answer reads synchronously (the embedded backends): reads skip an async hop. */
  readonly syncStore?: AtomicRowsStore;
}

export interface ColumnRef {
  readonly column: string;
  readonly q: Uint8Array;
  /** `q` as a latin1 map key, when the caller has it at hand (layout.ts userColumn). */
  readonly key?: string;
}

interface Interpreted {
  /** Per qualifier (latin1 key): the visible write record, its commit ts and the qualifier. */
  readonly writes: Map<string, [WriteRecord, number, Uint8Array]>;
  readonly locks: LockedCell[];
}

/** A lock cell of `row`, decoded. */
export function lockedCell(table: string, row: Uint8Array, c: Cell): LockedCell {
  return { table, row, column: decodeColumn(c.qualifier), q: c.qualifier, startTs: c.timestamp, lock: decodeLock(c.value) };
}

/** Interprets the lock/write cells of one row for a read at ts (newer cells are ignored). */
function interpret(table: string, row: Uint8Array, cells: readonly Cell[], ts: number): Interpreted {
  const writes = new Map<string, [WriteRecord, number, Uint8Array]>();
  const locks: LockedCell[] = [];
  for (const c of cells) {
    if (c.timestamp > ts) continue;
    if (c.family === LOCK) {
      locks.push(lockedCell(table, row, c));
    } else if (c.family === WRITE) {
      const k = bytesKey(c.qualifier);
      if (writes.has(k)) continue; // newest visible record already found
      const w = decodeWrite(c.value);
      if (w.kind !== 'rollback') writes.set(k, [w, c.timestamp, c.qualifier]);
    }
  }
  return { writes, locks };
}

/**
 * The value a committed write record stands for: inline in the record, or in `data` at the
 * writer's start ts. On a store that reads synchronously (`sync`) the `data` cell is picked from
 * the row's cached cells, without a filter made (and compiled) for each (start ts, column) or an
 * async hop; elsewhere it is read through such a filter, and the result is a promise.
 * Throws (or rejects with) CORRUPTED_RECORD when the `data` cell is missing.
 */
function committedValue(
  store: Store,
  sync: AtomicRowsStore | undefined,
  table: string,
  row: Uint8Array,
  q: Uint8Array,
  w: WriteRecord,
  readTs: number,
  commitTs: number,
): Uint8Array | null | Promise<Uint8Array | null> {
  if (w.kind !== 'put') return null;
  if (w.value.mode === 'inline') return w.value.value;
  if (w.value.mode === 'none') return new Uint8Array(0);
  if (sync === undefined) {
    return readDataCell(store, table, row, q, w.startTs).then((value) => {
      if (value === undefined) throw missingData(table, row, q, w, readTs, commitTs);
      return Uint8Array.prototype.slice.call(value);
    });
  }
  for (const c of sync.readCellsSync(table, row, DATA_ONLY)) {
    // A copy: the cell is the store's cached row, and a reader may write into what it gets.
    if (c.timestamp === w.startTs && c.family === DATA && bytesEqual(c.qualifier, q)) return Uint8Array.prototype.slice.call(c.value);
  }
  throw missingData(table, row, q, w, readTs, commitTs);
}

/** The `data` cell of column q at `startTs`, through a filter (stores without synchronous reads). */
async function readDataCell(store: Store, table: string, row: Uint8Array, q: Uint8Array, startTs: number): Promise<Uint8Array | undefined> {
  const filter: RowFilter = {
    chain: [exactColumn(DATA, q), { timestampRangeFilter: { startTimestampMicros: startTs, endTimestampMicros: startTs + 1 } }],
  };
  return (await store.readRow(table, row, filter))?.cells[0]?.value;
}

/** The families holding long values (one constant array: the store remembers its groups). */
const DATA_ONLY: readonly string[] = Object.freeze([DATA]);

function missingData(table: string, row: Uint8Array, q: Uint8Array, w: WriteRecord, readTs: number, commitTs: number): TxnError {
  return new TxnError(
    'CORRUPTED_RECORD',
    `committed value of ${describeCell({ table, row, column: decodeColumn(q) })} is missing from data@${w.startTs}`,
    { table, row, column: decodeColumn(q), startTs: w.startTs, commitTs, readTs },
  );
}

/** Resolves every lock; returns true if some owner is still alive (the caller should back off). */
async function resolveAll(store: Store, locks: readonly LockedCell[], ctx: ResolveContext): Promise<LockedCell | null> {
  let blocked: LockedCell | null = null;
  for (const l of locks) {
    if ((await resolveLock(store, l, ctx)) === 'locked') blocked = l;
  }
  return blocked;
}

class Backoff {
  private delay = 1;
  private readonly deadline: number;
  constructor(private readonly ctx: ReadContext) {
    this.deadline = ctx.nowMs() + ctx.lockWaitMs;
  }
  async wait(blocked: LockedCell, ts: number): Promise<void> {
    if (this.ctx.nowMs() >= this.deadline) {
      throw new TxnError('KEY_LOCKED', `${describeCell(blocked)} is locked by live transaction ${blocked.startTs}`, {
        table: blocked.table,
        row: blocked.row,
        column: blocked.column,
        readTs: ts,
        lockTs: blocked.startTs,
        lock: blocked.lock,
      });
    }
    // A commit of this process: woken when it ends (bounded, then the loop looks again).
    if (this.ctx.localCommits !== undefined && (await this.ctx.localCommits.waitFor(blocked.startTs, 100))) return;
    // Backing off is the protocol here (the paper's "BackoffAndMaybeCleanupLock"), not a test wait.
    await new Promise((r) => setTimeout(r, this.delay * (0.5 + Math.random())));
    this.delay = Math.min(this.delay * 2, 64);
  }
}

/**
 * The version a visible (non-rollback) write record gives without another read; undefined for a
 * value kept in `data`, which costs a second read (committedValue).
 */
function versionOf(w: WriteRecord, commitTs: number): VersionAt | undefined {
  if (w.kind !== 'put') return { value: null, commitTs };
  return w.value.mode === 'inline' ? { value: w.value.value, commitTs } : undefined;
}

/** A cell's visible version at ts: its value (null = absent or deleted) and its commit ts. */
export interface VersionAt {
  readonly value: Uint8Array | null;
  /** Commit ts of the visible write record (put or delete), 0 if the column was never written. */
  readonly commitTs: number;
}

/**
 * The newest visible non-rollback write record of each column at ts (index-aligned with
 * `columns`), and those columns' locks at or below ts. `cells` may hold other columns and
 * families of the row (the embedded store's unfiltered point read): only the lock and write cells
 * of `columns` count — a lock on another column of the row must not hold this read up. Cells come
 * in canonical order (family, qualifier, then timestamp descending), so the first visible record
 * of a column is its newest.
 */
function interpretColumns(
  table: string,
  row: Uint8Array,
  cells: readonly Cell[],
  ts: number,
  columns: readonly ColumnRef[],
): { writes: ([WriteRecord, number] | undefined)[]; locks: LockedCell[] | null } {
  const writes: ([WriteRecord, number] | undefined)[] = new Array(columns.length);
  let locks: LockedCell[] | null = null;
  // Few columns (the usual point read): match qualifiers directly instead of building string keys.
  let index: Map<string, number> | null = null;
  if (columns.length > 8) {
    index = new Map();
    for (let i = 0; i < columns.length; i++) {
      const k = bytesKey((columns[i] as ColumnRef).q);
      if (!index.has(k)) index.set(k, i); // a column asked twice: its first mention
    }
  }
  for (const c of cells) {
    if (c.timestamp > ts) continue;
    const isLock = c.family === LOCK;
    if (!isLock && c.family !== WRITE) continue;
    let i = -1;
    if (index === null) {
      for (let j = 0; j < columns.length; j++) {
        if (bytesEqual((columns[j] as ColumnRef).q, c.qualifier)) {
          i = j;
          break;
        }
      }
    } else {
      i = index.get(bytesKey(c.qualifier)) ?? -1;
    }
    if (i < 0) continue; // another column of the row
    if (isLock) {
      (locks ??= []).push(lockedCell(table, row, c));
      continue;
    }
    if (writes[i] !== undefined) continue; // newest visible record already found
    const w = decodeWrite(c.value);
    if (w.kind !== 'rollback') writes[i] = [w, c.timestamp];
  }
  // A column asked twice (getMany of the same cell) gets its first mention's record.
  for (let j = 1; j < columns.length; j++) {
    const q = (columns[j] as ColumnRef).q;
    let first = j;
    if (index !== null) first = index.get(bytesKey(q)) ?? j;
    else for (let i = 0; i < j && first === j; i++) if (bytesEqual((columns[i] as ColumnRef).q, q)) first = i;
    if (first !== j) writes[j] = writes[first];
  }
  return { writes, locks };
}

/**
 * readVersionsAt's synchronous fast path on a store that reads synchronously: the versions, when
 * no lock, no in-flight one-phase commit and no long value (a second read) is in the way;
 * undefined otherwise — then the caller takes readVersionsAt, which handles all of those. `row`
 * as bytes or as its bytesKey (rowKeyOf).
 */
export function readVersionsNow(
  table: string,
  row: Uint8Array | string,
  columns: readonly ColumnRef[],
  ts: number,
  ctx: ReadContext,
): VersionAt[] | undefined {
  const store = ctx.syncStore;
  if (store === undefined) return undefined;
  if (
    ctx.memLocks !== undefined &&
    ctx.memLocks.size > 0 &&
    ctx.memLocks.blocking(
      table,
      row,
      columns.map((c) => c.q),
      ts,
    ) !== null
  ) {
    return undefined;
  }
  // From the row's summary (readVersionNow says why), unless the reader is older than a column's
  // newest commit: then from the cells.
  const summary = store.readDerivedSync(table, row, LOCK_AND_WRITE, summarizeRow);
  const out: VersionAt[] = new Array(columns.length);
  let older = false;
  for (let i = 0; i < columns.length; i++) {
    const c = columns[i] as ColumnRef;
    const s = summary.column(c.key ?? bytesKey(c.q), c.q);
    if (s.lockTs <= ts) return undefined;
    if (s.commitTs > ts) older = true;
    else if (s.version === undefined)
      return undefined; // a long value: a second read
    else out[i] = s.version;
  }
  if (!older) return out;
  const bytes = keyBytes(row);
  const { writes } = interpretColumns(table, bytes, store.readCellsSync(table, bytes, LOCK_AND_WRITE), ts, columns);
  for (let i = 0; i < columns.length; i++) {
    const w = writes[i];
    const v = w === undefined ? ABSENT : versionOf(w[0], w[1]);
    if (v === undefined) return undefined;
    out[i] = v;
  }
  return out;
}

/**
 * readVersionsNow for one column, the point read every `get` makes. A reader at or above the
 * column's newest commit (every fresh snapshot, and `Percolator.get`) is answered from the row's
 * summary, which the store keeps with the cached row (summarizeRow): no cell is looked at and no
 * record decoded per read — those cost more than the cached row read itself. `row` as bytes or as
 * its bytesKey (rowKeyOf).
 */
export function readVersionNow(
  table: string,
  row: Uint8Array | string,
  column: ColumnRef,
  ts: number,
  ctx: ReadContext,
): VersionAt | undefined {
  const store = ctx.syncStore;
  if (store === undefined) return undefined;
  const s = columnNow(store, table, row, column, ts, ctx);
  if (s === undefined) return undefined;
  return s.commitTs <= ts ? s.version : olderVersion(store, table, row, column.q, ts);
}

/**
 * readVersionNow's value as a promise already resolved with it, for `get`: a reader at or above
 * the newest commit gets the one promise made for that version and kept in the row's summary.
 * Resolving a promise with a typed array costs V8 a lookup of `then` along the array's prototype
 * chain (~50 ns, a tenth of a cached point read); a promise resolved before is handed to every
 * reader of the version without it.
 */
export function readResolvedNow(
  table: string,
  row: Uint8Array | string,
  column: ColumnRef,
  ts: number,
  ctx: ReadContext,
): Promise<Uint8Array | null> | undefined {
  const store = ctx.syncStore;
  if (store === undefined) return undefined;
  const s = columnNow(store, table, row, column, ts, ctx);
  if (s === undefined) return undefined;
  if (s.commitTs > ts) {
    const older = olderVersion(store, table, row, column.q, ts);
    return older === undefined ? undefined : Promise.resolve(older.value);
  }
  const v = s.version;
  return v === undefined ? undefined : (s.resolved ??= v.value === null ? RESOLVED_NULL : Promise.resolve(v.value));
}

const RESOLVED_NULL: Promise<null> = Promise.resolve(null);

/** The column's summary, or undefined when a lock (at or below ts) or an in-process commit is in the way. */
function columnNow(
  store: AtomicRowsStore,
  table: string,
  row: Uint8Array | string,
  column: ColumnRef,
  ts: number,
  ctx: ReadContext,
): ColumnSummary | undefined {
  const q = column.q;
  if (ctx.memLocks !== undefined && ctx.memLocks.size > 0 && ctx.memLocks.blocking(table, row, [q], ts) !== null) return undefined;
  const s = store.readDerivedSync(table, row, LOCK_AND_WRITE, summarizeRow).column(column.key ?? bytesKey(q), q);
  return s.lockTs <= ts ? undefined : s; // with a lock in the way, the full read resolves it
}

/** For a snapshot older than the column's newest commit: the newest record at or below ts, from the cells (undefined: a long value). */
function olderVersion(store: AtomicRowsStore, table: string, row: Uint8Array | string, q: Uint8Array, ts: number): VersionAt | undefined {
  for (const c of store.readCellsSync(table, keyBytes(row), LOCK_AND_WRITE)) {
    if (c.timestamp > ts || c.family !== WRITE || !bytesEqual(q, c.qualifier)) continue;
    const w = decodeWrite(c.value);
    if (w.kind === 'rollback') continue;
    return versionOf(w, c.timestamp); // undefined for a long value: a second read
  }
  return ABSENT;
}

/** What a read at or above the newest commit needs of one column's lock and write cells. */
interface ColumnSummary {
  /** The qualifier as a latin1 string. */
  readonly key: string;
  /** Lowest start ts of a lock on the column; Infinity when none. */
  readonly lockTs: number;
  /** Commit ts of the newest write record that is not a rollback; 0 when none. */
  readonly commitTs: number;
  /** That record's version (ABSENT when none); undefined for a value kept in `data`. */
  readonly version: VersionAt | undefined;
  /** `version`'s value as a resolved promise, made by the first readResolvedNow. */
  resolved: Promise<Uint8Array | null> | undefined;
}

/**
 * A row's lock and write cells, summarized per column on a column's first read (a row read once
 * costs one pass over its cells, as without a summary). The store keeps it with its cached row
 * (readDerivedSync) and makes a new one when the row changes; what it remembers depends on the
 * cells alone. The cache charges one column's worth per row: a row of many columns, all read,
 * costs more than its charge (~150–290 bytes a further column).
 */
class RowSummary {
  /** Most rows have one column: it is looked up without a map. */
  private first: ColumnSummary | null = null;
  private rest: Map<string, ColumnSummary> | null = null;

  constructor(private readonly cells: readonly Cell[]) {}

  column(key: string, q: Uint8Array): ColumnSummary {
    const f = this.first;
    if (f !== null && f.key === key) return f;
    let s = this.rest?.get(key);
    if (s === undefined) {
      s = summarizeColumn(this.cells, key, q);
      if (f === null) this.first = s;
      else (this.rest ??= new Map()).set(key, s);
    }
    return s;
  }
}

const summarizeRow = (cells: readonly Cell[]): RowSummary => new RowSummary(cells);

function summarizeColumn(cells: readonly Cell[], key: string, q: Uint8Array): ColumnSummary {
  let lockTs = Infinity;
  let commitTs = 0;
  let version: VersionAt | undefined = ABSENT;
  // Indexed: for-of here allocated an iterator result a cell (the web index's heap profile).
  for (let i = 0; i < cells.length; i++) {
    const c = cells[i] as Cell;
    const isLock = c.family === LOCK;
    if ((!isLock && c.family !== WRITE) || !bytesEqual(q, c.qualifier)) continue;
    if (isLock) {
      if (c.timestamp < lockTs) lockTs = c.timestamp;
    } else if (c.timestamp > commitTs) {
      const w = decodeWrite(c.value);
      if (w.kind === 'rollback') continue;
      commitTs = c.timestamp;
      version = versionOf(w, c.timestamp);
    }
  }
  return { key, lockTs, commitTs, version, resolved: undefined };
}

/**
 * One column's visible version at ts from one store read, or undefined when a lock on the column
 * (at or below ts) is in the way: nothing is resolved or waited for (Percolator.get then reads at
 * a fresh timestamp). For stores without synchronous reads; readVersionNow is this on the others.
 */
export async function tryReadVersion(
  store: Store,
  table: string,
  row: Uint8Array,
  column: ColumnRef,
  ts: number,
  ctx: ReadContext,
): Promise<VersionAt | undefined> {
  if ((ctx.memLocks?.blocking(table, row, [column.q], ts) ?? null) !== null) return undefined;
  const cells = (await store.readRow(table, row, readFilter([column])))?.cells ?? [];
  const { writes, locks } = interpretColumns(table, row, cells, ts, [column]);
  if (locks !== null) return undefined;
  const w = writes[0];
  if (w === undefined) return ABSENT;
  return versionOf(w[0], w[1]) ?? { value: await committedValue(store, undefined, table, row, column.q, w[0], ts, w[1]), commitTs: w[1] };
}

/** Visible versions of `columns` in one row at ts, in the order given. */
export async function readVersionsAt(
  store: Store,
  table: string,
  row: Uint8Array,
  columns: readonly ColumnRef[],
  ts: number,
  ctx: ReadContext,
): Promise<VersionAt[]> {
  let filter: RowFilter | null = null; // only a remote store needs one
  let backoff: Backoff | null = null;
  let qualifiers: Uint8Array[] | null = null;
  for (;;) {
    // Checked right before the read, which starts synchronously (mem-locks.ts says why).
    const inFlight = ctx.memLocks?.blocking(table, row, (qualifiers ??= columns.map((c) => c.q)), ts) ?? null;
    if (inFlight !== null) {
      await inFlight;
      continue;
    }
    const cells =
      ctx.syncStore !== undefined
        ? ctx.syncStore.readCellsSync(table, row, LOCK_AND_WRITE)
        : ((await store.readRow(table, row, (filter ??= readFilter(columns))))?.cells ?? []);
    const { writes, locks } = interpretColumns(table, row, cells, ts, columns);
    if (locks !== null) {
      const blocked = await resolveAll(store, locks, ctx);
      if (blocked !== null) {
        backoff ??= new Backoff(ctx);
        await backoff.wait(blocked, ts);
      }
      continue;
    }
    const out: VersionAt[] = new Array(columns.length);
    let pending: Promise<void>[] | null = null;
    for (let i = 0; i < columns.length; i++) {
      const w = writes[i];
      if (w === undefined) {
        out[i] = ABSENT;
        continue;
      }
      const [record, commitTs] = w;
      const v = versionOf(record, commitTs);
      if (v !== undefined) {
        out[i] = v;
        continue;
      }
      // Only long values (in `data`) cost a second read.
      const value = committedValue(store, ctx.syncStore, table, row, (columns[i] as ColumnRef).q, record, ts, commitTs);
      if (!(value instanceof Promise)) {
        out[i] = { value, commitTs };
        continue;
      }
      (pending ??= []).push(
        value.then((v) => {
          out[i] = { value: v, commitTs };
        }),
      );
    }
    if (pending !== null) await Promise.all(pending);
    return out;
  }
}

/** The families a point read looks at (one constant array: the store remembers its groups). */
const LOCK_AND_WRITE: readonly string[] = Object.freeze([LOCK, WRITE]);

const ABSENT: VersionAt = Object.freeze({ value: null, commitTs: 0 });

/** Values of `columns` in one row at ts (null = absent or deleted), in the order given. */
export async function readRowAt(
  store: Store,
  table: string,
  row: Uint8Array,
  columns: readonly ColumnRef[],
  ts: number,
  ctx: ReadContext,
): Promise<(Uint8Array | null)[]> {
  return (await readVersionsAt(store, table, row, columns, ts, ctx)).map((v) => v.value);
}

export interface ScannedRow {
  readonly row: Uint8Array;
  /** Visible columns and their values (absent and deleted columns are omitted). */
  readonly columns: Map<string, Uint8Array>;
}

/**
 * The store's rows of `range`, read in pages when the caller wants at most `wanted()` more rows:
 * a remote store streams what it is asked for in messages of many kilobytes, so an unlimited read
 * stopped after a few rows would still have read and sent a screenful (Cloud Bigtable bills every
 * row read). The first page asks for what is wanted (every row may be visible), each next one for
 * 8× more than the last (rows without a visible column are skipped); without `wanted`, one read.
 */
async function* limitedRows(store: Store, table: string, range: RowRange, filter: RowFilter, wanted?: () => number): AsyncGenerator<Row> {
  if (wanted === undefined) {
    yield* store.readRows(table, { rows: { rowRanges: [range] }, filter });
    return;
  }
  let page = Math.max(1, wanted());
  let from: RowRange = range;
  for (;;) {
    let rows = 0;
    let last: Uint8Array | null = null;
    for await (const r of store.readRows(table, { rows: { rowRanges: [from] }, filter, rowsLimit: page })) {
      rows++;
      last = r.key;
      yield r;
    }
    // The range's closed end read: what is left is empty (a store may refuse it as a range).
    if (rows < page || last === null || (range.endKeyClosed !== undefined && bytesEqual(last, range.endKeyClosed))) return;
    from = { ...endOf(range), startKeyOpen: last };
    page = Math.min(Math.max(page * 8, wanted()), SCAN_MAX_PAGE);
  }
}

/** A limited scan's largest page (limitedRows). */
const SCAN_MAX_PAGE = 4_096;

/** The end bound of `range`, alone. */
function endOf(range: RowRange): RowRange {
  if (range.endKeyClosed !== undefined) return { endKeyClosed: range.endKeyClosed };
  if (range.endKeyOpen !== undefined) return { endKeyOpen: range.endKeyOpen };
  return {};
}

/**
 * Rows of a range at ts. `columnFilter` (optional) restricts the qualifiers, e.g. to a family.
 * A row holding locks is re-read through readRowAt after resolution.
 */
export async function* scanAt(
  store: Store,
  table: string,
  range: RowRange,
  ts: number,
  ctx: ReadContext,
  columnFilter?: RowFilter,
  limit?: number,
): AsyncGenerator<ScannedRow> {
  let emitted = 0;
  // Every one-phase commit that may land below ts ends before the scan's snapshot is taken; any
  // that starts later commits above ts (mem-locks.ts).
  for (let w = ctx.memLocks?.blockingTable(table, ts) ?? null; w !== null; w = ctx.memLocks?.blockingTable(table, ts) ?? null) await w;
  for await (const r of limitedRows(
    store,
    table,
    range,
    scanFilter(columnFilter),
    limit === undefined ? undefined : () => limit - emitted,
  )) {
    const { writes, locks } = interpret(table, r.key, r.cells, ts);
    const columns = new Map<string, Uint8Array>();
    if (locks.length > 0) {
      // Re-read every column of this row that has a lock or a record, resolving the locks.
      const refs = new Map<string, ColumnRef>();
      for (const c of r.cells) refs.set(bytesKey(c.qualifier), { column: decodeColumn(c.qualifier), q: c.qualifier });
      const list = [...refs.values()];
      const values = await readRowAt(store, table, r.key, list, ts, ctx);
      list.forEach((c, i) => {
        const v = values[i];
        if (v !== null && v !== undefined) columns.set(c.column, v);
      });
    } else {
      for (const [w, commitTs, q] of writes.values()) {
        const read = committedValue(store, ctx.syncStore, table, r.key, q, w, ts, commitTs);
        const v = read instanceof Promise ? await read : read;
        if (v !== null) columns.set(decodeColumn(q), v);
      }
    }
    if (columns.size === 0) continue;
    yield { row: r.key, columns };
    if (limit !== undefined && ++emitted >= limit) return;
  }
}
