/**
 * Encodes rows as serialized `google.bigtable.v2.ReadRowsResponse` messages following the
 * CellChunk protocol (bigtable.proto):
 * - the first chunk of a row carries `row_key`; later chunks of the row leave it empty;
 * - `family_name` is present when the family changes (always on a row's first chunk), and then
 *   `qualifier` is present too; `qualifier` alone is present when only the column changes; a
 *   further version of the same column carries neither;
 * - `timestamp_micros` and `labels` are set on the first chunk of each cell only;
 * - a value longer than `maxChunkValueBytes` is split: every chunk but the last carries
 *   `value_size` = the whole value's length, the last carries `value_size` 0;
 * - the last chunk of the row carries `commit_row` (never together with a non-zero
 *   `value_size`). `reset_row` is never sent: rows are produced whole by the store.
 * Chunks of one row may span several messages; a message is cut once it holds at least
 * `flushBytes`, so no message is much larger than `flushBytes + maxChunkValueBytes`.
 *
 * Hand-written protobuf (field numbers from bigtable.proto) because this is the hot path: the
 * value bytes are not copied until the message is assembled (one copy, in `Buffer.concat`).
 */
import type { Bytes, Row } from '../store/types.js';

export const DEFAULT_MAX_CHUNK_VALUE_BYTES = 1 << 20;
export const DEFAULT_FLUSH_BYTES = 256 << 10;

const TWO_7 = 128;

function varintSize(n: number): number {
  let size = 1;
  while (n >= TWO_7) {
    n = Math.floor(n / TWO_7);
    size++;
  }
  return size;
}

function writeVarint(buf: Buffer, pos: number, n: number): number {
  while (n >= TWO_7) {
    buf[pos++] = (n % TWO_7) | 0x80;
    n = Math.floor(n / TWO_7);
  }
  buf[pos++] = n;
  return pos;
}

function writeBytesField(buf: Buffer, pos: number, tag: number, data: Uint8Array): number {
  buf[pos++] = tag;
  pos = writeVarint(buf, pos, data.byteLength);
  buf.set(data, pos);
  return pos + data.byteLength;
}

/** Size of a wrapper message field (StringValue / BytesValue): outer tag, length, inner field. */
function wrapperSize(data: Uint8Array): number {
  const inner = data.byteLength === 0 ? 0 : 1 + varintSize(data.byteLength) + data.byteLength;
  return 1 + varintSize(inner) + inner;
}

function writeWrapper(buf: Buffer, pos: number, tag: number, data: Uint8Array): number {
  const inner = data.byteLength === 0 ? 0 : 1 + varintSize(data.byteLength) + data.byteLength;
  buf[pos++] = tag;
  pos = writeVarint(buf, pos, inner);
  if (inner > 0) pos = writeBytesField(buf, pos, 0x0a, data);
  return pos;
}

const TAG_CHUNKS = 0x0a; // ReadRowsResponse.chunks = 1
const TAG_ROW_KEY = 0x0a; // CellChunk.row_key = 1
const TAG_FAMILY = 0x12; // family_name = 2
const TAG_QUALIFIER = 0x1a; // qualifier = 3
const TAG_TIMESTAMP = 0x20; // timestamp_micros = 4 (varint)
const TAG_LABELS = 0x2a; // labels = 5
const TAG_VALUE = 0x32; // value = 6
const TAG_VALUE_SIZE = 0x38; // value_size = 7 (varint)
const TAG_COMMIT_ROW = 0x48; // commit_row = 9 (varint)

interface ChunkFields {
  rowKey: Bytes | null;
  family: Uint8Array | null;
  qualifier: Bytes | null;
  timestamp: number;
  labels: readonly string[];
  value: Bytes;
  valueSize: number;
  commit: boolean;
}

export class ReadRowsEncoder {
  private parts: Uint8Array[] = [];
  private pending = 0;
  private readonly ready: Buffer[] = [];
  private readonly familyBytes = new Map<string, Buffer>();
  /** Rows and cells added so far (for metrics). */
  rows = 0;
  cells = 0;

  constructor(
    private readonly maxChunkValueBytes = DEFAULT_MAX_CHUNK_VALUE_BYTES,
    private readonly flushBytes = DEFAULT_FLUSH_BYTES,
  ) {
    if (!(maxChunkValueBytes >= 1)) throw new RangeError('maxChunkValueBytes must be ≥ 1');
  }

  addRow(row: Row): void {
    const n = row.cells.length;
    if (n === 0) return;
    this.rows++;
    this.cells += n;
    let prevFamily: string | null = null;
    let prevQualifier: Bytes | null = null;
    for (let i = 0; i < n; i++) {
      const c = row.cells[i]!;
      const familyChanged = c.family !== prevFamily;
      const qualifierChanged = familyChanged || prevQualifier === null || Buffer.compare(c.qualifier, prevQualifier) !== 0;
      const lastCell = i === n - 1;
      const v = c.value;
      const head = {
        rowKey: i === 0 ? row.key : null,
        family: familyChanged ? this.family(c.family) : null,
        qualifier: qualifierChanged ? c.qualifier : null,
      };
      if (v.byteLength <= this.maxChunkValueBytes) {
        this.chunk({ ...head, timestamp: c.timestamp, labels: c.labels, value: v, valueSize: 0, commit: lastCell });
      } else {
        for (let off = 0; off < v.byteLength; off += this.maxChunkValueBytes) {
          const end = Math.min(off + this.maxChunkValueBytes, v.byteLength);
          const firstPiece = off === 0;
          const lastPiece = end === v.byteLength;
          this.chunk({
            rowKey: firstPiece ? head.rowKey : null,
            family: firstPiece ? head.family : null,
            qualifier: firstPiece ? head.qualifier : null,
            timestamp: firstPiece ? c.timestamp : 0,
            labels: firstPiece ? c.labels : [],
            value: v.subarray(off, end),
            valueSize: lastPiece ? 0 : v.byteLength,
            commit: lastPiece && lastCell,
          });
        }
      }
      prevFamily = c.family;
      prevQualifier = c.qualifier;
    }
  }

  /** Complete messages ready to send (each a serialized ReadRowsResponse). */
  takeReady(): Buffer[] {
    return this.ready.splice(0, this.ready.length);
  }

  /** Everything not yet sent, as one last message (null when nothing is pending). */
  finish(): Buffer | null {
    this.cut();
    const rest = this.takeReady();
    if (rest.length === 0) return null;
    return rest.length === 1 ? rest[0]! : Buffer.concat(rest);
  }

  /** Bytes buffered in the message being built. */
  get pendingBytes(): number {
    return this.pending;
  }

  private family(name: string): Buffer {
    let b = this.familyBytes.get(name);
    if (b === undefined) {
      b = Buffer.from(name, 'utf8');
      if (this.familyBytes.size < 10_000) this.familyBytes.set(name, b);
    }
    return b;
  }

  private chunk(f: ChunkFields): void {
    const labelBytes = f.labels.map((l) => Buffer.from(l, 'utf8'));
    let body = 0;
    if (f.rowKey !== null) body += 1 + varintSize(f.rowKey.byteLength) + f.rowKey.byteLength;
    if (f.family !== null) body += wrapperSize(f.family);
    if (f.qualifier !== null) body += wrapperSize(f.qualifier);
    if (f.timestamp !== 0) body += 1 + varintSize(f.timestamp);
    for (const l of labelBytes) body += 1 + varintSize(l.byteLength) + l.byteLength;
    const valueHeader = f.value.byteLength > 0 ? 1 + varintSize(f.value.byteLength) : 0;
    body += valueHeader + f.value.byteLength;
    const trailer = (f.valueSize > 0 ? 1 + varintSize(f.valueSize) : 0) + (f.commit ? 2 : 0);
    body += trailer;

    const headSize = 1 + varintSize(body) + body - f.value.byteLength - trailer;
    const head = Buffer.allocUnsafe(headSize);
    let p = 0;
    head[p++] = TAG_CHUNKS;
    p = writeVarint(head, p, body);
    if (f.rowKey !== null) p = writeBytesField(head, p, TAG_ROW_KEY, f.rowKey);
    if (f.family !== null) p = writeWrapper(head, p, TAG_FAMILY, f.family);
    if (f.qualifier !== null) p = writeWrapper(head, p, TAG_QUALIFIER, f.qualifier);
    if (f.timestamp !== 0) {
      head[p++] = TAG_TIMESTAMP;
      p = writeVarint(head, p, f.timestamp);
    }
    for (const l of labelBytes) p = writeBytesField(head, p, TAG_LABELS, l);
    if (f.value.byteLength > 0) {
      head[p++] = TAG_VALUE;
      p = writeVarint(head, p, f.value.byteLength);
    }
    this.parts.push(head);
    if (f.value.byteLength > 0) this.parts.push(f.value);
    if (trailer > 0) {
      const t = Buffer.allocUnsafe(trailer);
      let q = 0;
      if (f.valueSize > 0) {
        t[q++] = TAG_VALUE_SIZE;
        q = writeVarint(t, q, f.valueSize);
      }
      if (f.commit) {
        t[q++] = TAG_COMMIT_ROW;
        t[q++] = 1;
      }
      this.parts.push(t);
    }
    this.pending += headSize + f.value.byteLength + trailer;
    if (this.pending >= this.flushBytes) this.cut();
  }

  private cut(): void {
    if (this.parts.length === 0) return;
    this.ready.push(Buffer.concat(this.parts, this.pending));
    this.parts = [];
    this.pending = 0;
  }
}
