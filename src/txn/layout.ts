/**
 * Percolator's column layout on the Bigtable model (Percolator §2.2, Figure 5; docs/format.md §2).
 *
 * A Percolator table is a store table with system families only. A user column `family:qualifier`
 * becomes the qualifier bytes `family:qualifier` inside each system family — a user family name
 * cannot contain ':', so user columns never collide with each other or with system families:
 *
 *   lock   @startTs   lock record: primary cell, kind, wall time + TTL, owner, short value inline
 *   write  @commitTs  write record: start ts, kind put/delete; short values inline
 *          @startTs   rollback record (kind rollback): a late prewrite of that transaction fails
 *   data   @startTs   the value, only when too long to inline
 *   notify @commitTs  dirty hint for observers, in its own locality group: 's' (strong) from a
 *                     committed write of an observed column; 'w' (weak) from tx.notify, under the
 *                     column's weak qualifier (`weakNotifyQualifier`), the newest one only
 *
 * Observer acks are ordinary transactional cells under a reserved column name
 * (`\0ack\0<observer>\0<column>`, see `ackColumn`): they must take part in write-write conflict
 * detection, which is what makes at most one observer commit per change.
 *
 * Records are small binary values with a version byte; decoding failures are CORRUPTED_RECORD.
 */
import { bytesKey } from '../store/bytes.js';
import { TxnError } from './errors.js';
import type { Mutation, RowFilter, TableSpec } from '../store/types.js';

export const LOCK = 'lock';
export const WRITE = 'write';
export const DATA = 'data';
export const NOTIFY = 'notify';
export const NOTIFY_GROUP = 'notify';

/** Values up to this many bytes live in the lock, then the write record; longer ones in `data`. */
export const INLINE_LIMIT = 256;

export const PERCOLATOR_TABLE_SPEC: TableSpec = {
  families: {
    [LOCK]: {},
    [WRITE]: {},
    [DATA]: {},
    [NOTIFY]: { localityGroup: NOTIFY_GROUP },
  },
};

const FAMILY = /^[_a-zA-Z0-9][-_.a-zA-Z0-9]*$/;

/** Reserved (internal) column names start with NUL, which no user family name can. */
export function isReservedColumn(column: string): boolean {
  return typeof column === 'string' && column.charCodeAt(0) === 0;
}

/** The reserved column holding observer `observer`'s ack for `column`. */
export function ackColumn(observer: string, column: string): string {
  return `\u0000ack\u0000${observer}\u0000${column}`;
}

/** `family:qualifier` (or a reserved internal name) → the system qualifier bytes (validated). */
export function encodeColumn(column: string): Uint8Array {
  if (isReservedColumn(column)) return Buffer.from(column, 'utf8');
  return encodeUserColumn(column);
}

/** Like encodeColumn, but rejects reserved names: what user-facing calls use. */
export function encodeUserColumn(column: string): Uint8Array {
  return userColumn(column).q;
}

/** A validated user column: its name, its qualifier bytes and those as a latin1 map key. */
export interface UserColumn {
  readonly column: string;
  readonly q: Uint8Array;
  readonly key: string;
}

/** encodeUserColumn with the qualifier's map key (remembered per column: reads look up by it). */
export function userColumn(column: string): UserColumn {
  const hit = userColumns.get(column);
  if (hit !== undefined) return hit;
  const i = typeof column === 'string' ? column.indexOf(':') : -1;
  if (i <= 0 || !FAMILY.test(column.slice(0, i))) {
    throw new TxnError(
      'INVALID_COLUMN',
      `invalid column ${JSON.stringify(column)}: use family:qualifier with family [_a-zA-Z0-9][-_.a-zA-Z0-9]*`,
      { column },
    );
  }
  const q = Buffer.from(column, 'utf8');
  const c: UserColumn = { column, q, key: bytesKey(q) };
  if (userColumns.size >= 10_000) userColumns.clear();
  userColumns.set(column, c);
  return c;
}

/**
 * Validated, encoded user columns: every read and write encodes its column, and applications use
 * few distinct ones. The buffers are shared, so nothing may write into a qualifier.
 */
const userColumns = new Map<string, UserColumn>();

export function decodeColumn(qualifier: Uint8Array): string {
  return Buffer.from(qualifier).toString('utf8');
}

/**
 * Qualifier prefix of a column's weak notify cells (`notify` family): `\0w\0` then the column's
 * qualifier. A weak notification is kept apart from the column's strong ones so that it can
 * replace the column's older weak notifications without erasing a pending strong one: builds
 * before 2026-11-28 (fourth session) wrote it under the column's own qualifier with the value
 * `w`, where every one stayed until the column's observer ran — under a backlog, hundreds of
 * versions that every rewrite of the row decoded and encoded again. Such cells are still read
 * (by their value) and cleared. A NUL first byte: no user column's qualifier has one, and no
 * reserved column's starts with `\0w\0`.
 */
const WEAK_NOTIFY_PREFIX = Uint8Array.of(0, 0x77, 0);

/** The qualifier of `column`'s weak notify cells. */
export function weakNotifyQualifier(column: string): Uint8Array {
  const q = encodeColumn(column);
  const out = new Uint8Array(WEAK_NOTIFY_PREFIX.length + q.length);
  out.set(WEAK_NOTIFY_PREFIX, 0);
  out.set(q, WEAK_NOTIFY_PREFIX.length);
  return out;
}

/** The column a notify cell's qualifier notifies, and whether the qualifier is a weak one's. */
export function notifiedColumn(qualifier: Uint8Array): { readonly column: string; readonly weakQualifier: boolean } {
  const p = WEAK_NOTIFY_PREFIX;
  if (qualifier.length > p.length && qualifier[0] === p[0] && qualifier[1] === p[1] && qualifier[2] === p[2]) {
    return { column: decodeColumn(qualifier.subarray(p.length)), weakQualifier: true };
  }
  return { column: decodeColumn(qualifier), weakQualifier: false };
}

const STRONG = Buffer.from('s');

/**
 * A strong notification of the column with encoded qualifier `q` at `ts`: its notify cell, set by a
 * commit (at the commit timestamp) and by a secondary's prewrite (at S; prewrite.ts says why).
 */
export function strongNotifyMutation(q: Uint8Array, ts: number): Mutation {
  return { setCell: { familyName: NOTIFY, columnQualifier: q, timestampMicros: ts, value: STRONG } };
}

/**
 * A weak notification of `column` at `ts`: its weak notify cell, replacing the column's older weak
 * ones (one pending weak notification says all they said; a strong one is another cell and stays).
 */
export function weakNotifyMutations(column: string, ts: number, value: Uint8Array): Mutation[] {
  const q = weakNotifyQualifier(column);
  return [
    { deleteFromColumn: { familyName: NOTIFY, columnQualifier: q, timeRange: { startTimestampMicros: 0, endTimestampMicros: ts } } },
    { setCell: { familyName: NOTIFY, columnQualifier: q, timestampMicros: ts, value } },
  ];
}

/**
 * Deletes `column`'s notify cells at or below `maxTs`, strong and weak: what processing a
 * notification read at `maxTs` consumes (a newer notification, written during the run, stays).
 */
export function clearNotifications(column: string, maxTs: number): Mutation[] {
  const timeRange = { startTimestampMicros: 0, endTimestampMicros: maxTs + 1 };
  return [
    { deleteFromColumn: { familyName: NOTIFY, columnQualifier: encodeColumn(column), timeRange } },
    { deleteFromColumn: { familyName: NOTIFY, columnQualifier: weakNotifyQualifier(column), timeRange } },
  ];
}

// ---------------------------------------------------------------------------------------------
// Records

export type WriteKind = 'put' | 'delete';

/** Where a locked or committed value is: nowhere (delete), inline, or in the data family. */
export type ValueRef = { readonly mode: 'none' } | { readonly mode: 'inline'; readonly value: Uint8Array } | { readonly mode: 'data' };

export interface LockRecord {
  readonly kind: WriteKind;
  /** Committing this cell also sets its notify cell (the column is observed). */
  readonly notify: boolean;
  readonly primaryTable: string;
  readonly primaryRow: Uint8Array;
  readonly primaryColumn: string;
  /** Wall clock (ms) when the lock was written or last refreshed. */
  readonly wallTimeMs: number;
  readonly ttlMs: number;
  /** Liveness id of the worker that holds it (the paper's Chubby token). */
  readonly owner: string;
  readonly value: ValueRef;
}

export interface WriteRecord {
  readonly kind: WriteKind | 'rollback';
  readonly startTs: number;
  readonly value: ValueRef;
}

const KIND_CODES = { put: 0, delete: 1, rollback: 2 } as const;
const KINDS = ['put', 'delete', 'rollback'] as const;
const MODES = ['none', 'inline', 'data'] as const;
const VERSION = 1;

/** Appends fields to one growing buffer: records are built on every prewrite and commit. */
class Writer {
  private buf = Buffer.allocUnsafe(128);
  private off = 0;
  private room(n: number): void {
    if (this.off + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.off + n));
    this.buf.copy(next, 0, 0, this.off);
    this.buf = next;
  }
  u8(n: number): this {
    this.room(1);
    this.buf[this.off++] = n;
    return this;
  }
  f64(n: number): this {
    this.room(8);
    this.buf.writeDoubleBE(n, this.off);
    this.off += 8;
    return this;
  }
  u32(n: number): this {
    this.room(4);
    this.buf.writeUInt32BE(n, this.off);
    this.off += 4;
    return this;
  }
  bytes(b: Uint8Array): this {
    this.u32(b.byteLength);
    this.room(b.byteLength);
    this.buf.set(b, this.off);
    this.off += b.byteLength;
    return this;
  }
  str(s: string): this {
    const n = Buffer.byteLength(s, 'utf8');
    this.u32(n);
    this.room(n);
    this.buf.write(s, this.off, n, 'utf8');
    this.off += n;
    return this;
  }
  value(v: ValueRef): this {
    this.u8(MODES.indexOf(v.mode));
    if (v.mode === 'inline') this.bytes(v.value);
    return this;
  }
  done(): Uint8Array {
    return this.buf.subarray(0, this.off);
  }
}

class Reader {
  private off = 0;
  private readonly buf: Buffer;
  constructor(
    value: Uint8Array,
    private readonly what: string,
  ) {
    this.buf = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
  private need(n: number): void {
    if (this.off + n > this.buf.length) throw new TxnError('CORRUPTED_RECORD', `truncated ${this.what} record`, { what: this.what });
  }
  u8(): number {
    this.need(1);
    return this.buf[this.off++] as number;
  }
  f64(): number {
    this.need(8);
    const n = this.buf.readDoubleBE(this.off);
    this.off += 8;
    return n;
  }
  u32(): number {
    this.need(4);
    const n = this.buf.readUInt32BE(this.off);
    this.off += 4;
    return n;
  }
  bytes(): Uint8Array {
    const n = this.u32();
    this.need(n);
    const b = this.buf.subarray(this.off, this.off + n);
    this.off += n;
    return b;
  }
  str(): string {
    return Buffer.from(this.bytes()).toString('utf8');
  }
  value(): ValueRef {
    const mode = MODES[this.u8()];
    if (mode === undefined) throw new TxnError('CORRUPTED_RECORD', `bad value mode in ${this.what} record`, { what: this.what });
    if (mode === 'inline') return { mode, value: this.bytes() };
    return { mode };
  }
  end(): void {
    if (this.off !== this.buf.length) throw new TxnError('CORRUPTED_RECORD', `trailing bytes in ${this.what} record`, { what: this.what });
  }
}

export function encodeLock(l: LockRecord): Uint8Array {
  return new Writer()
    .u8(VERSION)
    .u8(KIND_CODES[l.kind])
    .u8(l.notify ? 1 : 0)
    .str(l.primaryTable)
    .bytes(l.primaryRow)
    .str(l.primaryColumn)
    .f64(l.wallTimeMs)
    .u32(l.ttlMs)
    .str(l.owner)
    .value(l.value)
    .done();
}

export function decodeLock(value: Uint8Array): LockRecord {
  const r = new Reader(value, 'lock');
  if (r.u8() !== VERSION) throw new TxnError('CORRUPTED_RECORD', 'unknown lock record version', {});
  const kind = KINDS[r.u8()];
  if (kind === undefined || kind === 'rollback') throw new TxnError('CORRUPTED_RECORD', 'bad lock kind', {});
  const lock: LockRecord = {
    kind,
    notify: r.u8() === 1,
    primaryTable: r.str(),
    primaryRow: r.bytes(),
    primaryColumn: r.str(),
    wallTimeMs: r.f64(),
    ttlMs: r.u32(),
    owner: r.str(),
    value: r.value(),
  };
  r.end();
  return lock;
}

export function encodeWrite(w: WriteRecord): Uint8Array {
  // Written in place at its exact size: one buffer a record (every committed cell has one), no Writer.
  const ref = w.value;
  const inline = ref.mode === 'inline' ? ref.value : null;
  const out = Buffer.allocUnsafe(WRITE_HEADER + (inline === null ? 0 : 4 + inline.byteLength));
  out[0] = VERSION;
  out[1] = KIND_CODES[w.kind];
  out.writeDoubleBE(w.startTs, 2);
  out[10] = MODES.indexOf(ref.mode);
  if (inline !== null) {
    out.writeUInt32BE(inline.byteLength, WRITE_HEADER);
    out.set(inline, WRITE_HEADER + 4);
  }
  return out;
}

/** Scratch for reading big-endian doubles without a Buffer or DataView per record. */
const F64 = new Float64Array(1);
const F64_BYTES = new Uint8Array(F64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const NO_VALUE: ValueRef = Object.freeze({ mode: 'none' });
const IN_DATA: ValueRef = Object.freeze({ mode: 'data' });
/** version, kind, startTs, value mode */
const WRITE_HEADER = 11;

function corruptWrite(message: string): TxnError {
  return new TxnError('CORRUPTED_RECORD', message, { what: 'write' });
}

/**
 * Decodes a write record (the format of encodeWrite). Write records are decoded on every
 * snapshot read, so this reads the bytes in place: no Reader, no Buffer per field; the only
 * allocations are the record and, for an inline value, its view. (A WeakMap memo per value
 * object cost more than it saved: cached rows are re-created by every write, so most lookups
 * missed and paid for an ephemeron-table insertion.)
 */
export function decodeWrite(v: Uint8Array): WriteRecord {
  const n = v.byteLength;
  if (n < WRITE_HEADER) throw corruptWrite('truncated write record');
  if (v[0] !== VERSION) throw new TxnError('CORRUPTED_RECORD', 'unknown write record version', {});
  const kind = KINDS[v[1] as number];
  if (kind === undefined) throw new TxnError('CORRUPTED_RECORD', 'bad write kind', {});
  if (LITTLE_ENDIAN) for (let i = 0; i < 8; i++) F64_BYTES[i] = v[9 - i] as number;
  else for (let i = 0; i < 8; i++) F64_BYTES[i] = v[2 + i] as number;
  const startTs = F64[0] as number;
  const mode = MODES[v[10] as number];
  if (mode === undefined) throw corruptWrite('bad value mode in write record');
  let end = WRITE_HEADER;
  let value: ValueRef;
  if (mode === 'inline') {
    if (n < WRITE_HEADER + 4) throw corruptWrite('truncated write record');
    const len = (((v[11] as number) << 24) | ((v[12] as number) << 16) | ((v[13] as number) << 8) | (v[14] as number)) >>> 0;
    end = WRITE_HEADER + 4 + len;
    if (end > n) throw corruptWrite('truncated write record');
    // A copy, not a view: this value is handed to readers, and a view would let one that writes
    // into it change the store's cached row — and, with the row's next rewrite, what is on disk.
    value = { mode, value: Uint8Array.prototype.slice.call(v, WRITE_HEADER + 4, end) as Buffer };
  } else {
    value = mode === 'none' ? NO_VALUE : IN_DATA;
  }
  if (end !== n) throw corruptWrite('trailing bytes in write record');
  return { kind, startTs, value };
}

/** How a value is carried in the lock: inline if short, else in `data`. */
export function valueRefFor(kind: WriteKind, value: Uint8Array | null): ValueRef {
  if (kind === 'delete' || value === null) return { mode: 'none' };
  return value.byteLength <= INLINE_LIMIT ? { mode: 'inline', value } : { mode: 'data' };
}

// ---------------------------------------------------------------------------------------------
// Filters

export function exactColumn(family: string, q: Uint8Array): RowFilter {
  return { columnRangeFilter: { familyName: family, startQualifierClosed: q, endQualifierClosed: q } };
}

/**
 * Lock and write cells of the columns, every version: a snapshot read keeps those at or below its
 * timestamp itself. Leaving the timestamp out of the filter makes the filter depend only on the
 * columns, so one filter object (and its compiled form, cached by the store) serves every read
 * of those columns. Versions are bounded by GC.
 */
export function readFilter(columns: readonly { readonly column: string; readonly q: Uint8Array }[]): RowFilter {
  // Keyed by the column names (no per-read encoding); one map per arity so keys cannot collide.
  const single = columns.length === 1;
  const key = single ? (columns[0] as { column: string }).column : JSON.stringify(columns.map((c) => c.column));
  const cache = single ? singleReadFilters : multiReadFilters;
  let f = cache.get(key);
  if (f === undefined) {
    const branches: RowFilter[] = [];
    for (const c of columns) {
      branches.push(exactColumn(LOCK, c.q));
      branches.push(exactColumn(WRITE, c.q));
    }
    f = { interleave: branches };
    if (cache.size >= 10_000) cache.clear();
    cache.set(key, f);
  }
  return f;
}

const singleReadFilters = new Map<string, RowFilter>();
const multiReadFilters = new Map<string, RowFilter>();

const SCAN_FAMILIES: RowFilter = { familyNameRegexFilter: `${LOCK}|${WRITE}` };
const scanFilters = new WeakMap<RowFilter, RowFilter>();

/**
 * Lock and write cells of every column, or of those `columnFilter` selects (scans). No timestamp
 * cut: the reader drops cells above its ts itself (snapshot-read.ts `interpret`), so a scan's
 * filter depends only on its column selection and is one object per selection — an embedded store
 * compiles a filter once per object, and compiling one per scan was 1.8 % of the web index.
 */
export function scanFilter(columnFilter?: RowFilter): RowFilter {
  if (columnFilter === undefined) return SCAN_FAMILIES;
  let f = scanFilters.get(columnFilter);
  if (f === undefined) {
    f = { chain: [SCAN_FAMILIES, columnFilter] };
    scanFilters.set(columnFilter, f);
  }
  return f;
}

/** Matches when a prewrite at `startTs` must fail: any lock, or a write at or after startTs. */
export function prewriteConflictFilter(qualifiers: readonly Uint8Array[], startTs: number): RowFilter {
  const branches: RowFilter[] = [];
  for (const q of qualifiers) {
    branches.push(exactColumn(LOCK, q));
    branches.push({ chain: [exactColumn(WRITE, q), { timestampRangeFilter: { startTimestampMicros: startTs } }] });
  }
  return branches.length === 1 ? (branches[0] as RowFilter) : { interleave: branches };
}

/** Matches when the lock of `startTs` is present on column q. */
export function lockAtFilter(q: Uint8Array, startTs: number): RowFilter {
  return { chain: [exactColumn(LOCK, q), { timestampRangeFilter: { startTimestampMicros: startTs, endTimestampMicros: startTs + 1 } }] };
}

/** Every lock and write cell of one column (status checks). */
export function columnStatusFilter(q: Uint8Array): RowFilter {
  return { interleave: [exactColumn(LOCK, q), exactColumn(WRITE, q)] };
}
