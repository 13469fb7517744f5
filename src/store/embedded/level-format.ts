/**
 * LevelDB 1.20's on-disk formats, read in JS (leveldb/doc/log_format.md, table_format.md;
 * version_edit.cc): CRC32C as LevelDB masks it, the records of a log file (the write-ahead log and
 * the MANIFEST), the MANIFEST's version edits, and a table file's footer and blocks. Pure
 * functions over bytes already read; findings are appended to the caller's `problems` as one line
 * each, naming the file and offset. The verifier (level-verify.ts) walks a directory with them.
 */

// --- CRC32C (Castagnoli), slicing-by-8; LevelDB stores it masked. ----------------------------

const CRC_TABLE = (() => {
  const t = new Int32Array(256 * 8);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n];
    for (let s = 1; s < 8; s++) {
      c = t[c & 0xff] ^ (c >>> 8);
      t[s * 256 + n] = c;
    }
  }
  return t;
})();

export function crc32c(buf: Uint8Array, start = 0, end = buf.length): number {
  const T = CRC_TABLE;
  let crc = ~0;
  let i = start;
  const end8 = end - ((end - start) & 7);
  for (; i < end8; i += 8) {
    const a = (buf[i] | (buf[i + 1] << 8) | (buf[i + 2] << 16) | (buf[i + 3] << 24)) ^ crc;
    crc =
      T[1792 + (a & 0xff)] ^
      T[1536 + ((a >>> 8) & 0xff)] ^
      T[1280 + ((a >>> 16) & 0xff)] ^
      T[1024 + (a >>> 24)] ^
      T[768 + buf[i + 4]] ^
      T[512 + buf[i + 5]] ^
      T[256 + buf[i + 6]] ^
      T[buf[i + 7]];
  }
  for (; i < end; i++) crc = T[(crc ^ buf[i]) & 0xff] ^ (crc >>> 8);
  return ~crc >>> 0;
}

function unmask(masked: number): number {
  const rot = (masked - 0xa282ead8) >>> 0;
  return ((rot >>> 17) | (rot << 15)) >>> 0;
}

// --- Log files (WAL and MANIFEST): 32 KiB blocks of records [crc32c:4][len:2][type:1][data]. ---

const LOG_BLOCK = 32768;
const LOG_HEADER = 7;
const FULL = 1;
const FIRST = 2;
const MIDDLE = 3;
const LAST = 4;

/**
 * The payload length for which the record at `pos` — whose length field runs past the end of the
 * log — is whole after all, or null. A torn append (the writer died mid-record) ends the file
 * inside its record, and its checksum is of bytes never written. A damaged length field (one
 * flipped bit) leaves a whole record behind it, and often acknowledged records after it, which
 * LevelDB would drop silently. The two are told apart by the checksum: it holds for a shorter
 * payload that is followed by the end of the block or by another record whose checksum holds.
 * A torn append passes that only by matching two independent CRC32Cs by chance (or one, within
 * the last 6 bytes of the file).
 */
function damagedLength(buf: Buffer, pos: number, blockEnd: number): number | null {
  const expected = unmask(buf.readUInt32LE(pos));
  const T = CRC_TABLE;
  // Over the type byte, then the payload one byte at a time: each length's checksum in one pass.
  let crc = T[(~0 ^ (buf[pos + 6] as number)) & 0xff] ^ (~0 >>> 8);
  for (let end = pos + LOG_HEADER; end <= blockEnd; end++) {
    if (end > pos + LOG_HEADER) crc = T[(crc ^ (buf[end - 1] as number)) & 0xff] ^ (crc >>> 8);
    if (~crc >>> 0 === expected && wholeRecordAt(buf, end, blockEnd)) return end - pos - LOG_HEADER;
  }
  return null;
}

/** Whether the block ends at `at` (fewer bytes than a header left) or a record with a valid checksum starts there. */
function wholeRecordAt(buf: Buffer, at: number, blockEnd: number): boolean {
  if (blockEnd - at < LOG_HEADER) return true;
  const len = (buf[at + 4] as number) | ((buf[at + 5] as number) << 8);
  if (at + LOG_HEADER + len > blockEnd) return false;
  return unmask(buf.readUInt32LE(at)) === crc32c(buf, at + 6, at + LOG_HEADER + len);
}

/**
 * The logical records of a log file, mirroring leveldb::log::Reader with paranoid checks on:
 * a checksum mismatch, a bad length inside a complete block, an unknown type or a broken
 * fragment sequence is a problem; a file that ends inside a record (a crash mid-append) is not,
 * and that record is ignored, exactly as LevelDB ignores it — unless its length field is what is
 * damaged (damagedLength), which LevelDB cannot tell from a torn append and we can.
 */
export function readLogRecords(buf: Buffer, name: string, problems: string[]): Buffer[] {
  const out: Buffer[] = [];
  let frags: Buffer[] | null = null;
  let pos = 0;
  const size = buf.length;
  while (pos < size) {
    const blockEnd = Math.min(size, (Math.floor(pos / LOG_BLOCK) + 1) * LOG_BLOCK);
    const lastBlock = blockEnd === size && size - Math.floor(pos / LOG_BLOCK) * LOG_BLOCK < LOG_BLOCK;
    if (blockEnd - pos < LOG_HEADER) {
      pos = blockEnd; // block trailer (or a header torn at EOF)
      continue;
    }
    const len = buf[pos + 4] | (buf[pos + 5] << 8);
    const type = buf[pos + 6];
    if (pos + LOG_HEADER + len > blockEnd) {
      const held = lastBlock ? damagedLength(buf, pos, blockEnd) : null;
      if (lastBlock && held === null) break; // the writer died mid-record: not a corruption
      problems.push(
        held === null
          ? `${name}: bad record length at offset ${pos}`
          : `${name}: bad record length at offset ${pos} (${len} bytes would run past the end of the log, but its checksum holds for ${held}: a damaged length, not a torn append)`,
      );
      pos = blockEnd;
      frags = null;
      continue;
    }
    if (type === 0 && len === 0) {
      pos = blockEnd; // preallocated zeros (LevelDB skips the rest of the block silently)
      continue;
    }
    const expected = unmask(buf.readUInt32LE(pos));
    const actual = crc32c(buf, pos + 6, pos + LOG_HEADER + len);
    if (expected !== actual) {
      problems.push(`${name}: checksum mismatch in the record at offset ${pos}`);
      pos = blockEnd;
      frags = null;
      continue;
    }
    const data = buf.subarray(pos + LOG_HEADER, pos + LOG_HEADER + len);
    pos += LOG_HEADER + len;
    switch (type) {
      case FULL:
        if (frags !== null) problems.push(`${name}: partial record without end before offset ${pos - LOG_HEADER - len}`);
        frags = null;
        out.push(data);
        break;
      case FIRST:
        if (frags !== null) problems.push(`${name}: partial record without end before offset ${pos - LOG_HEADER - len}`);
        frags = [data];
        break;
      case MIDDLE:
        if (frags === null) problems.push(`${name}: missing start of fragmented record at offset ${pos - LOG_HEADER - len}`);
        else frags.push(data);
        break;
      case LAST:
        if (frags === null) problems.push(`${name}: missing start of fragmented record at offset ${pos - LOG_HEADER - len}`);
        else {
          frags.push(data);
          out.push(Buffer.concat(frags));
        }
        frags = null;
        break;
      default:
        problems.push(`${name}: unknown record type ${type} at offset ${pos - LOG_HEADER - len}`);
        frags = null;
    }
  }
  // A fragmented record still open at EOF is a torn append: ignored, as LevelDB does.
  return out;
}

// --- MANIFEST version edits ------------------------------------------------------------------

class Cursor {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  varint(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw new Error('truncated varint');
      const b = this.buf[this.pos++];
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
    throw new Error('varint too long');
  }
  bytes(): Uint8Array {
    const n = this.varint();
    if (this.pos + n > this.buf.length) throw new Error('truncated length-prefixed slice');
    const s = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
}

export interface ManifestState {
  /** Live table files: number → size. */
  readonly live: Map<number, number>;
  logNumber: number;
  prevLogNumber: number;
  lastSequence: number;
  /** Tags seen in any edit: LevelDB refuses a MANIFEST without a next file number, a log number and a last sequence. */
  readonly tags: Set<number>;
}

export function newManifestState(): ManifestState {
  return { live: new Map(), logNumber: 0, prevLogNumber: 0, lastSequence: 0, tags: new Set() };
}

/**
 * What LevelDB's VersionSet::Recover would refuse in a replayed MANIFEST (its error, in its
 * words), or null. A MANIFEST starts with a snapshot of the files and then an edit carrying these
 * numbers: a damaged tail that reads as preallocated zeros, which the log reader skips silently,
 * can drop that edit.
 */
export function missingManifestEntry(m: ManifestState): string | null {
  if (!m.tags.has(3)) return 'no meta-nextfile entry';
  if (!m.tags.has(2)) return 'no meta-lognumber entry';
  if (!m.tags.has(4)) return 'no last-sequence-number entry';
  return null;
}

export function applyVersionEdit(rec: Uint8Array, m: ManifestState): string | null {
  const c = new Cursor(rec);
  try {
    while (!c.done) {
      const tag = c.varint();
      m.tags.add(tag);
      switch (tag) {
        case 1: // comparator
          c.bytes();
          break;
        case 2: // log number
          m.logNumber = c.varint();
          break;
        case 3: // next file number
          c.varint();
          break;
        case 4: // last sequence
          m.lastSequence = c.varint();
          break;
        case 5: // compact pointer: level, internal key
          c.varint();
          c.bytes();
          break;
        case 6: // deleted file: level, number
          c.varint();
          m.live.delete(c.varint());
          break;
        case 7: {
          // new file: level, number, size, smallest, largest
          c.varint();
          const num = c.varint();
          const size = c.varint();
          c.bytes();
          c.bytes();
          m.live.set(num, size);
          break;
        }
        case 9: // prev log number
          m.prevLogNumber = c.varint();
          break;
        default:
          return `unknown tag ${tag}`;
      }
    }
  } catch (e) {
    return (e as Error).message;
  }
  return null;
}

// --- Table files ------------------------------------------------------------------------------

/** Bytes of a table file's footer (its last bytes). */
export const FOOTER_LEN = 48;
const TABLE_MAGIC_LO = 0x8b80fb57;
const TABLE_MAGIC_HI = 0xdb477524;
const BLOCK_TRAILER = 5;

interface Handle {
  readonly offset: number;
  readonly size: number;
}

export function verifyFooter(buf: Buffer, name: string, problems: string[]): { meta: Handle; index: Handle } | null {
  if (buf.length < FOOTER_LEN) {
    problems.push(`${name}: too short to be a table (${buf.length} bytes)`);
    return null;
  }
  const f = buf.length - FOOTER_LEN;
  if (buf.readUInt32LE(f + 40) !== TABLE_MAGIC_LO || buf.readUInt32LE(f + 44) !== TABLE_MAGIC_HI) {
    problems.push(`${name}: bad table magic number (truncated or overwritten footer)`);
    return null;
  }
  try {
    const c = new Cursor(buf.subarray(f, f + 40));
    const meta = { offset: c.varint(), size: c.varint() };
    const index = { offset: c.varint(), size: c.varint() };
    return { meta, index };
  } catch (e) {
    problems.push(`${name}: bad footer: ${(e as Error).message}`);
    return null;
  }
}

/** The block's contents (decompressed), or null after recording a problem. Checks its CRC. */
function readBlock(
  buf: Buffer,
  h: Handle,
  limit: number,
  name: string,
  what: string,
  problems: string[],
  decode: boolean,
): Uint8Array | null {
  if (h.offset + h.size + BLOCK_TRAILER > limit) {
    problems.push(`${name}: ${what} at ${h.offset}+${h.size} runs past the end`);
    return null;
  }
  const end = h.offset + h.size;
  const expected = unmask(buf.readUInt32LE(end + 1));
  if (crc32c(buf, h.offset, end + 1) !== expected) {
    problems.push(`${name}: block checksum mismatch in ${what} at offset ${h.offset}`);
    return null;
  }
  if (!decode) return null;
  const type = buf[end];
  const raw = buf.subarray(h.offset, end);
  if (type === 0) return raw;
  if (type === 1) {
    try {
      return snappyDecompress(raw);
    } catch (e) {
      problems.push(`${name}: ${what} at offset ${h.offset}: ${(e as Error).message}`);
      return null;
    }
  }
  problems.push(`${name}: ${what} at offset ${h.offset} has unknown compression type ${type}`);
  return null;
}

/** The values of a block's entries (each a BlockHandle for index and metaindex blocks). */
function blockValues(block: Uint8Array): Uint8Array[] {
  if (block.length < 4) throw new Error('block too short');
  const dv = new DataView(block.buffer, block.byteOffset, block.byteLength);
  const restarts = dv.getUint32(block.length - 4, true);
  const limit = block.length - 4 - 4 * restarts;
  if (restarts === 0 || limit < 0) throw new Error('bad restart array');
  const c = new Cursor(block.subarray(0, limit));
  const out: Uint8Array[] = [];
  while (!c.done) {
    c.varint(); // shared key bytes
    const nonShared = c.varint();
    const valueLen = c.varint();
    if (c.pos + nonShared + valueLen > limit) throw new Error('entry runs past the block');
    c.pos += nonShared;
    out.push(block.subarray(c.pos, c.pos + valueLen));
    c.pos += valueLen;
  }
  return out;
}

function decodeHandle(v: Uint8Array): Handle {
  const c = new Cursor(v);
  return { offset: c.varint(), size: c.varint() };
}

export function verifyTable(buf: Buffer, name: string, problems: string[]): void {
  const footer = verifyFooter(buf, name, problems);
  if (footer === null) return;
  const limit = buf.length - FOOTER_LEN;
  const before = problems.length;
  const blocks: Handle[] = [footer.meta, footer.index];
  const index = readBlock(buf, footer.index, limit, name, 'index block', problems, true);
  const meta = readBlock(buf, footer.meta, limit, name, 'metaindex block', problems, true);
  if (index === null || meta === null) return;
  try {
    for (const v of blockValues(index)) blocks.push(decodeHandle(v));
    for (const v of blockValues(meta)) blocks.push(decodeHandle(v));
  } catch (e) {
    problems.push(`${name}: unreadable index: ${(e as Error).message}`);
    return;
  }
  blocks.sort((a, b) => a.offset - b.offset);
  // Blocks are written back to back: they must tile [0, footer) exactly.
  let expectAt = 0;
  for (const h of blocks) {
    if (h.offset !== expectAt) {
      problems.push(`${name}: ${h.offset > expectAt ? 'gap' : 'overlap'} before the block at offset ${h.offset}`);
      return;
    }
    expectAt = h.offset + h.size + BLOCK_TRAILER;
  }
  if (expectAt !== limit) {
    problems.push(`${name}: blocks end at ${expectAt}, footer starts at ${limit}`);
    return;
  }
  for (const h of blocks) {
    if (h === footer.index || h === footer.meta) continue;
    readBlock(buf, h, limit, name, 'data block', problems, false);
    if (problems.length - before > 3) return; // enough evidence for one file
  }
}

/** Snappy raw-format decompression (only index and metaindex blocks need it). */
function snappyDecompress(src: Uint8Array): Uint8Array {
  const c = new Cursor(src);
  const n = c.varint();
  const dst = new Uint8Array(n);
  let d = 0;
  let p = c.pos;
  while (p < src.length) {
    const tag = src[p++];
    const kind = tag & 3;
    if (kind === 0) {
      let len = tag >>> 2;
      if (len >= 60) {
        const bytes = len - 59;
        if (p + bytes > src.length) throw new Error('snappy: truncated literal length');
        len = 0;
        for (let i = 0; i < bytes; i++) len += src[p + i] * 2 ** (8 * i);
        p += bytes;
      }
      len += 1;
      if (p + len > src.length || d + len > n) throw new Error('snappy: literal out of bounds');
      dst.set(src.subarray(p, p + len), d);
      p += len;
      d += len;
      continue;
    }
    let len: number;
    let off: number;
    if (kind === 1) {
      if (p + 1 > src.length) throw new Error('snappy: truncated copy');
      len = ((tag >>> 2) & 7) + 4;
      off = ((tag >>> 5) << 8) | src[p];
      p += 1;
    } else if (kind === 2) {
      if (p + 2 > src.length) throw new Error('snappy: truncated copy');
      len = (tag >>> 2) + 1;
      off = src[p] | (src[p + 1] << 8);
      p += 2;
    } else {
      if (p + 4 > src.length) throw new Error('snappy: truncated copy');
      len = (tag >>> 2) + 1;
      off = (src[p] | (src[p + 1] << 8) | (src[p + 2] << 16)) + src[p + 3] * 2 ** 24;
      p += 4;
    }
    if (off === 0 || off > d || d + len > n) throw new Error('snappy: copy out of bounds');
    for (let i = 0; i < len; i++, d++) dst[d] = dst[d - off];
  }
  if (d !== n) throw new Error(`snappy: decompressed ${d} bytes, header says ${n}`);
  return dst;
}
