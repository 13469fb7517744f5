/**
 * ReadRows on the wire: merging CellChunks into rows (split values, reset_row, commit_row, as
 * the v2 ReadRowsResponse documents), putting each row's cells into canonical order (servers may
 * send families in any order), and resuming an interrupted stream after the last row received.
 */
import type { protos } from '@google-cloud/bigtable';
import { asBuffer, compareBytes } from '../bytes.js';
import { CellRecord, NO_LABELS } from '../cells.js';
import { StoreError } from '../errors.js';
import { planRowSet } from '../row-set.js';
import type { Cell, Row, RowRange, RowSet } from '../types.js';
import type { TimestampMapping } from './timestamps.js';

type Chunk = protos.google.bigtable.v2.ReadRowsResponse.ICellChunk;
type ProtoRowSet = protos.google.bigtable.v2.IRowSet;

const EMPTY = Buffer.alloc(0);

/** Canonical order: family name, qualifier bytes, timestamp descending (stable for ties). */
export function sortCells(cells: Cell[]): Cell[] {
  for (let i = 1; i < cells.length; i++) {
    if (cellOrder(cells[i - 1] as Cell, cells[i] as Cell) > 0) {
      cells.sort(cellOrder);
      break;
    }
  }
  return cells;
}

function cellOrder(a: Cell, b: Cell): number {
  if (a.family !== b.family) return a.family < b.family ? -1 : 1;
  const q = compareBytes(a.qualifier, b.qualifier);
  if (q !== 0) return q;
  return b.timestamp - a.timestamp;
}

function corrupt(message: string): StoreError {
  return new StoreError('DATA_CORRUPTED', `malformed ReadRows response: ${message}`);
}

/** Turns a stream of CellChunks into complete rows. */
export class ChunkMerger {
  private key: Buffer | null = null;
  private family: string | null = null;
  private qualifier: Buffer | null = null;
  private cells: Cell[] = [];
  private partial: { ts: number; labels: readonly string[]; parts: Buffer[] } | null = null;

  constructor(private readonly ts: TimestampMapping) {}

  /** Feeds one response's chunks; returns the rows they completed. */
  push(chunks: readonly Chunk[] | null | undefined): Row[] {
    const out: Row[] = [];
    for (const c of chunks ?? []) {
      if (c.resetRow === true) {
        this.reset();
        continue;
      }
      const rowKey = c.rowKey && c.rowKey.length > 0 ? Buffer.from(c.rowKey) : null;
      if (rowKey !== null) {
        if (this.key !== null && !this.key.equals(rowKey)) throw corrupt('a new row key before the previous row was committed');
        this.key = rowKey;
      }
      if (this.key === null) throw corrupt('a chunk without a row key');
      if (this.partial !== null) {
        // Continuation of a split value.
        this.partial.parts.push(Buffer.from(c.value ?? EMPTY));
      } else {
        if (c.familyName !== null && c.familyName !== undefined) {
          this.family = c.familyName.value ?? '';
          if (c.qualifier === null || c.qualifier === undefined) throw corrupt('a family without a qualifier');
        }
        if (c.qualifier !== null && c.qualifier !== undefined) this.qualifier = Buffer.from(c.qualifier.value ?? EMPTY);
        if (this.family === null || this.qualifier === null) throw corrupt('a cell without family or qualifier');
        const labels = c.labels && c.labels.length > 0 ? [...c.labels] : NO_LABELS;
        this.partial = { ts: this.ts.fromWire(c.timestampMicros as string), labels, parts: [Buffer.from(c.value ?? EMPTY)] };
      }
      if (!((c.valueSize ?? 0) > 0)) {
        const p = this.partial;
        const value = p.parts.length === 1 ? (p.parts[0] as Buffer) : Buffer.concat(p.parts);
        this.cells.push(new CellRecord(this.family as string, this.qualifier as Buffer, p.ts, value, p.labels));
        this.partial = null;
      }
      if (c.commitRow === true) {
        if (this.partial !== null) throw corrupt('commit_row inside a split value');
        out.push({ key: this.key, cells: sortCells(this.cells) });
        this.reset();
      }
    }
    return out;
  }

  /** True when no row is half-received. */
  get idle(): boolean {
    return this.key === null;
  }

  reset(): void {
    this.key = null;
    this.family = null;
    this.qualifier = null;
    this.cells = [];
    this.partial = null;
  }
}

function nonEmpty(b: Uint8Array | undefined): Buffer | undefined {
  return b !== undefined && b.byteLength > 0 ? Buffer.from(asBuffer(b)) : undefined;
}

/** Our RowSet → proto (empty bounds dropped: in v2 an empty bound means unbounded). */
export function rowSetToProto(rows: RowSet | undefined): ProtoRowSet | undefined {
  if (rows === undefined) return undefined;
  const rowKeys = (rows.rowKeys ?? []).map((k) => Buffer.from(asBuffer(k)));
  const rowRanges = (rows.rowRanges ?? []).map((r: RowRange) => {
    const out: protos.google.bigtable.v2.IRowRange = {};
    const sc = nonEmpty(r.startKeyClosed);
    const so = nonEmpty(r.startKeyOpen);
    const ec = nonEmpty(r.endKeyClosed);
    const eo = nonEmpty(r.endKeyOpen);
    if (sc) out.startKeyClosed = sc;
    else if (so) out.startKeyOpen = so;
    if (ec) out.endKeyClosed = ec;
    else if (eo) out.endKeyOpen = eo;
    return out;
  });
  if (rowKeys.length === 0 && rowRanges.length === 0) return undefined;
  return { rowKeys, rowRanges };
}

/**
 * The part of `rows` strictly after `last` (before it, when reversed), or null when nothing is
 * left. Used to resume a broken stream; the result is never the empty (= whole table) set.
 */
export function remainingRowSet(rows: RowSet | undefined, last: Uint8Array, reversed: boolean, table: string): ProtoRowSet | null {
  const plan = planRowSet(rows, table);
  const rowKeys: Buffer[] = [];
  const rowRanges: protos.google.bigtable.v2.IRowRange[] = [];
  const lastBuf = Buffer.from(asBuffer(last));
  for (const iv of plan) {
    if (iv.point !== undefined) {
      const c = compareBytes(iv.point, last);
      if (reversed ? c < 0 : c > 0) rowKeys.push(Buffer.from(asBuffer(iv.point)));
      continue;
    }
    if (!reversed) {
      if (iv.lt !== undefined && compareBytes(iv.lt, last) <= 0) continue;
      const startAfterLast = iv.gte === undefined || compareBytes(iv.gte, last) <= 0;
      const r: protos.google.bigtable.v2.IRowRange = startAfterLast
        ? { startKeyOpen: lastBuf }
        : { startKeyClosed: Buffer.from(asBuffer(iv.gte as Uint8Array)) };
      if (iv.lt !== undefined) r.endKeyOpen = Buffer.from(asBuffer(iv.lt));
      rowRanges.push(r);
    } else {
      if (iv.gte !== undefined && compareBytes(iv.gte, last) >= 0) continue;
      const r: protos.google.bigtable.v2.IRowRange = {};
      if (iv.gte !== undefined && iv.gte.byteLength > 0) r.startKeyClosed = Buffer.from(asBuffer(iv.gte));
      if (iv.lt === undefined || compareBytes(iv.lt, last) > 0) r.endKeyOpen = lastBuf;
      else r.endKeyOpen = Buffer.from(asBuffer(iv.lt));
      rowRanges.push(r);
    }
  }
  if (rowKeys.length === 0 && rowRanges.length === 0) return null;
  return { rowKeys, rowRanges };
}
