/**
 * Known tables: the table files of a LevelDB directory that are known to have been whole, kept
 * beside it so that an open need not read every block of a large store again (level-verify.ts,
 * `verify: 'incremental'`). LevelDB never changes a table file once written and never reuses a
 * file number, so a table known good stays so unless the disk damages it at rest; that residual
 * risk is why each open still re-reads a share of the known tables, oldest check first
 * (`pickRechecks`), and docs/durability.md says what it leaves uncaught.
 *
 * A table is known good when an open read every block and found each checksum right, or when a
 * process that held the directory saw its own LevelDB write it (LevelDB syncs a table before the
 * MANIFEST lists it) and closed cleanly. An entry names the file by number, size and a CRC of its
 * footer, so a file replaced by another (a restore, a copy) is not mistaken for the one checked.
 *
 * File `PERCOLATOR-TABLES`: crc32:u32be (of the rest) version:u32be(=1) count:u32be, then per
 * table number:u64be size:u64be footerCrc:u32be since:f64be (ms since the epoch). Written to a
 * temporary name and renamed, not fsynced: a file lost or torn by a crash is refused by its CRC or
 * absent, and then the next open reads every table, as if none were known. Written by an open
 * once LevelDB holds the directory, and by a close once LevelDB let it go (level-engine.ts).
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

export const KNOWN_TABLES_FILE = 'PERCOLATOR-TABLES';
const VERSION = 1;
const HEADER = 12;
const ENTRY = 28;

export interface KnownTable {
  readonly size: number;
  /** CRC32 of the table's last 48 bytes (its footer). */
  readonly footerCrc: number;
  /** When it was last known good: read whole, or written by the process that closed (ms). */
  readonly since: number;
}

/** CRC32 of a table file's footer, as `KnownTable.footerCrc`. */
export const footerCrc = (footer: Uint8Array): number => crc32(footer);

/** The known tables of `dir`; empty when the file is absent, torn, of another version or unreadable. */
export async function readKnownTables(dir: string): Promise<Map<number, KnownTable>> {
  const out = new Map<number, KnownTable>();
  const buf = await readFile(join(dir, KNOWN_TABLES_FILE)).catch(() => null);
  if (buf === null || buf.length < HEADER) return out;
  if (buf.readUInt32BE(0) !== crc32(buf.subarray(4)) || buf.readUInt32BE(4) !== VERSION) return out;
  const count = buf.readUInt32BE(8);
  if (buf.length !== HEADER + count * ENTRY) return out;
  for (let at = HEADER; at < buf.length; at += ENTRY) {
    out.set(Number(buf.readBigUInt64BE(at)), {
      size: Number(buf.readBigUInt64BE(at + 8)),
      footerCrc: buf.readUInt32BE(at + 16),
      since: buf.readDoubleBE(at + 20),
    });
  }
  return out;
}

/** Replaces the known tables of `dir` with `tables`. Throws on I/O errors. */
export async function writeKnownTables(dir: string, tables: ReadonlyMap<number, KnownTable>): Promise<void> {
  const out = Buffer.alloc(HEADER + tables.size * ENTRY);
  out.writeUInt32BE(VERSION, 4);
  out.writeUInt32BE(tables.size, 8);
  let at = HEADER;
  for (const [num, t] of tables) {
    out.writeBigUInt64BE(BigInt(num), at);
    out.writeBigUInt64BE(BigInt(t.size), at + 8);
    out.writeUInt32BE(t.footerCrc, at + 16);
    out.writeDoubleBE(t.since, at + 20);
    at += ENTRY;
  }
  out.writeUInt32BE(crc32(out.subarray(4)), 0);
  const tmp = join(dir, `${KNOWN_TABLES_FILE}.tmp`);
  await writeFile(tmp, out);
  await rename(tmp, join(dir, KNOWN_TABLES_FILE));
}

/**
 * Which live tables an incremental verification reads whole: every table not known (or known at
 * another size), and then known ones, oldest check first, while the bytes read stay within
 * `budget` (at least the oldest, unless `budget` is 0) — so an open costs about `budget` beyond
 * the tables it has never seen, and over successive opens every table is read again. Returns the
 * numbers to read whole.
 */
export function pickRechecks(live: ReadonlyMap<number, number>, known: ReadonlyMap<number, KnownTable>, budget: number): Set<number> {
  const whole = new Set<number>();
  const candidates: number[] = [];
  let left = budget;
  for (const [num, size] of live) {
    if (known.get(num)?.size === size) candidates.push(num);
    else {
      whole.add(num);
      left -= size;
    }
  }
  candidates.sort((a, b) => (known.get(a) as KnownTable).since - (known.get(b) as KnownTable).since || a - b);
  for (const num of candidates) {
    const size = live.get(num) as number;
    // The oldest is read even beyond the budget (but not with none): a table larger than the
    // budget must not stop the rotation for good.
    if (size > left && !(budget > 0 && num === candidates[0])) break;
    whole.add(num);
    left -= size;
  }
  return whole;
}
