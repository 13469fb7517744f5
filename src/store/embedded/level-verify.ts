/**
 * Offline verification of a LevelDB 1.20 directory, before LevelDB is allowed to open it: what
 * paranoid checks would have caught, which classic-level's build runs without (level-engine.ts
 * says why it matters, docs/durability.md has the full table). Read-only. Also `lastSequence`:
 * the newest write the directory's files record, for the seals of level-seal.ts.
 */
import { type FileHandle, open, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ioError } from './level-errors.js';
import {
  FOOTER_LEN,
  type ManifestState,
  applyVersionEdit,
  missingManifestEntry,
  newManifestState,
  readLogRecords,
  verifyFooter,
  verifyTable,
} from './level-format.js';
import { type KnownTable, footerCrc, pickRechecks } from './level-known-tables.js';
import { isDataFile } from './store-files.js';

export interface LevelVerifyReport {
  /** The MANIFEST CURRENT names, or null for a directory with no database yet. */
  readonly manifest: string | null;
  readonly tables: number;
  readonly tableBytes: number;
  readonly logs: number;
  readonly logBytes: number;
  /** The live tables the MANIFEST lists: number → size. */
  readonly live: ReadonlyMap<number, number>;
  /** Tables whose every block was read and checked. */
  readonly tablesRead: number;
  readonly tableBytesRead: number;
  /**
   * The live tables known good after this verification (level-known-tables.ts): those read whole
   * and found right now, and known ones whose size and footer are unchanged.
   */
  readonly known: ReadonlyMap<number, KnownTable>;
  /** Empty when nothing is wrong. One line per finding, naming the file and offset. */
  readonly problems: readonly string[];
}

/**
 * What to check of the live tables: `'blocks'`, every block's CRC (reads every live table once);
 * `'sizes'`, only that each exists with the MANIFEST's size and a valid footer; `'incremental'`,
 * every block of the tables not in `known`, and of known ones as many as `pickRechecks` takes
 * within `budget` bytes, the sizes and footers of the rest. `known` (default none) are the tables
 * known good before (level-known-tables.ts); the report's `known` is what is known after.
 */
export interface TableCheck {
  readonly tables: 'blocks' | 'sizes' | 'incremental';
  readonly known?: ReadonlyMap<number, KnownTable>;
  /** Bytes of known tables `'incremental'` reads again (default 0). */
  readonly budget?: number;
}

const EMPTY_KNOWN: ReadonlyMap<number, KnownTable> = new Map();

/** The report of a directory that holds no database yet: no table live, none known. */
export const noDatabaseYet = (): LevelVerifyReport => nothing(null, []);
const nothing = (manifest: string | null, problems: string[]): LevelVerifyReport => ({
  manifest,
  tables: 0,
  tableBytes: 0,
  logs: 0,
  logBytes: 0,
  live: new Map(),
  tablesRead: 0,
  tableBytesRead: 0,
  known: EMPTY_KNOWN,
  problems,
});

/** Checks the MANIFEST, the logs LevelDB will replay, and the live tables as `check` says. */
export async function verifyLevelDir(dir: string, check: TableCheck = { tables: 'blocks' }): Promise<LevelVerifyReport> {
  const problems: string[] = [];
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return nothing(null, problems);
    throw ioError('cannot list the store directory', dir, e);
  }
  if (!names.includes('CURRENT')) {
    problems.push(...(await dataWithoutCurrent(dir, names)));
    return nothing(null, problems);
  }
  const current = (await readOrIoError(dir, 'CURRENT')).toString('latin1');
  if (!/^MANIFEST-\d+\n$/.test(current)) {
    problems.push(`CURRENT does not name a MANIFEST: ${JSON.stringify(current.slice(0, 40))}`);
    return nothing(null, problems);
  }
  const manifestName = current.slice(0, -1);
  const manifestBuf = await readOrNull(dir, manifestName);
  if (manifestBuf === null) {
    problems.push(`${manifestName} (named by CURRENT) is missing`);
    return nothing(manifestName, problems);
  }

  // Replay the MANIFEST's version edits.
  const m = newManifestState();
  const { live } = m;
  const records = readLogRecords(manifestBuf, manifestName, problems);
  for (const rec of records) {
    const err = applyVersionEdit(rec, m);
    if (err !== null) problems.push(`${manifestName}: bad version edit: ${err}`);
  }
  if (records.length === 0 && problems.length === 0) problems.push(`${manifestName} holds no version edit`);
  const missing = records.length === 0 ? null : missingManifestEntry(m);
  if (missing !== null && problems.length === 0) problems.push(`${manifestName}: ${missing} (an edit at its end is lost or zeroed)`);
  const { logNumber, prevLogNumber } = m;

  let tableBytes = 0;
  let tablesRead = 0;
  let tableBytesRead = 0;
  const known = new Map<number, KnownTable>();
  const prior = check.known ?? EMPTY_KNOWN;
  const whole = check.tables === 'incremental' ? pickRechecks(live, prior, check.budget ?? 0) : null;
  const now = Date.now();
  // Each table is read into this one buffer and checked before the next is read: a fresh buffer a
  // table cost a page fault every 4 KiB (~17 µs each on a VM: a third of verifying a store).
  const scratch: Scratch = { buf: Buffer.alloc(0) };
  for (const [num, size] of live) {
    const base = String(num).padStart(6, '0');
    const read = check.tables === 'blocks' || whole?.has(num) === true;
    // LevelDB 1.20 writes .ldb and still reads the legacy .sst name.
    let name = `${base}.ldb`;
    let buf = await readTable(dir, name, read, scratch);
    if (buf === null) {
      name = `${base}.sst`;
      buf = await readTable(dir, name, read, scratch);
    }
    if (buf === null) {
      problems.push(`table ${base}.ldb listed in ${manifestName} is missing`);
      continue;
    }
    tableBytes += size;
    const actualSize = read ? buf.length : (buf as TailRead).fileSize;
    if (actualSize !== size) {
      problems.push(`${name}: size ${actualSize}, ${manifestName} says ${size}`);
      continue;
    }
    const before = problems.length;
    if (!read) {
      verifyFooter(buf, name, problems);
      const was = prior.get(num);
      if (was === undefined || problems.length > before) continue;
      // A known number and size with another footer is another file: read it whole after all
      // (unless only sizes are checked: then it is just no longer known).
      if (was.footerCrc === footerCrc(buf)) {
        known.set(num, was);
        continue;
      }
      if (check.tables === 'sizes') continue;
      buf = await readTable(dir, name, true, scratch);
      if (buf === null || buf.length !== size) {
        problems.push(`${name}: changed while it was read`);
        continue;
      }
    }
    tablesRead++;
    tableBytesRead += size;
    verifyTable(buf, name, problems);
    if (problems.length === before) known.set(num, { size, footerCrc: footerCrc(buf.subarray(buf.length - FOOTER_LEN)), since: now });
  }

  // The logs LevelDB will replay (DBImpl::Recover): number >= log_number, or == prev_log_number.
  let logs = 0;
  let logBytes = 0;
  const logNames = names
    .map((n) => /^(\d+)\.log$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null && (Number(m[1]) >= logNumber || Number(m[1]) === prevLogNumber))
    .map((m) => m[0])
    .sort();
  // The log named in the MANIFEST is the one LevelDB was appending to; LevelDB deletes it only
  // after the MANIFEST moved past it. Without it, LevelDB would silently start without its writes.
  if (logNumber > 0 && !names.includes(`${String(logNumber).padStart(6, '0')}.log`)) {
    problems.push(`the current log ${String(logNumber).padStart(6, '0')}.log named in ${manifestName} is missing`);
  }
  for (const name of logNames) {
    const buf = await readOrNull(dir, name);
    if (buf === null) continue;
    logs++;
    logBytes += buf.length;
    for (const rec of readLogRecords(buf, name, problems)) {
      if (rec.length < 12) problems.push(`${name}: write batch record too small (${rec.length} bytes)`);
    }
  }
  return { manifest: manifestName, tables: live.size, tableBytes, logs, logBytes, live, tablesRead, tableBytesRead, known, problems };
}

/**
 * What a directory without CURRENT holds that a new database would lose (LevelDB would silently
 * start one over it): its tables and logs, and any MANIFEST that lists tables or writes. Empty:
 * what a creation that stopped before writing CURRENT leaves (a MANIFEST of no data at most).
 * A MANIFEST's unreadable tail is ignored, as LevelDB ignores one: such a creation may leave it.
 */
export async function dataWithoutCurrent(dir: string, names: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  const dataFiles = names.filter(isDataFile);
  if (dataFiles.length > 0) {
    problems.push(`CURRENT is missing but ${dataFiles.length} data files exist (${dataFiles.slice(0, 3).join(', ')})`);
  }
  for (const name of names.filter((n) => /^MANIFEST-\d+$/.test(n))) {
    const buf = await readOrNull(dir, name);
    if (buf === null) continue;
    const m = newManifestState();
    for (const rec of readLogRecords(buf, name, [])) applyVersionEdit(rec, m);
    if (m.live.size > 0 || m.lastSequence > 0) {
      problems.push(`CURRENT is missing but ${name} lists ${m.live.size} tables and writes up to sequence ${m.lastSequence}`);
    }
  }
  return problems;
}

async function readOrIoError(dir: string, name: string): Promise<Buffer> {
  try {
    return await readFile(join(dir, name));
  } catch (e) {
    throw ioError(`cannot read ${name}`, dir, e);
  }
}

type TailRead = Buffer & { fileSize: number };

/** A table file whole (into `scratch`), or its footer and size only; null if it does not exist. */
const readTable = (dir: string, name: string, whole: boolean, scratch: Scratch): Promise<Buffer | null> =>
  whole ? readOrNull(dir, name, false, scratch) : readOrNull(dir, name, true);

/** A buffer reused by successive whole-file reads, grown as needed. */
interface Scratch {
  buf: Buffer;
}

/** All of the file open as `fh` (to its size when asked, or less if it shrank), in `scratch.buf`: valid until the next read into it. */
async function readInto(fh: FileHandle, scratch: Scratch): Promise<Buffer> {
  const { size } = await fh.stat();
  if (scratch.buf.length < size) scratch.buf = Buffer.allocUnsafeSlow(Math.max(size, 2 * scratch.buf.length));
  let got = 0;
  while (got < size) {
    const { bytesRead } = await fh.read(scratch.buf, got, size - got, got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return scratch.buf.subarray(0, got);
}

/**
 * The file, or null if it does not exist. With `footerOnly`, its last 48 bytes and its size. With
 * `scratch`, the file is read into that buffer (valid until the next read into it).
 */
async function readOrNull(dir: string, name: string, footerOnly = false, scratch?: Scratch): Promise<Buffer | null> {
  const path = join(dir, name);
  try {
    if (!footerOnly && scratch === undefined) return await readFile(path);
    const fh = await open(path, 'r');
    try {
      if (!footerOnly) return await readInto(fh, scratch as Scratch);
      const { size } = await fh.stat();
      const len = Math.min(FOOTER_LEN, size);
      const buf = Buffer.alloc(len) as TailRead;
      await fh.read(buf, 0, len, size - len);
      buf.fileSize = size;
      return buf;
    } finally {
      await fh.close();
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw ioError(`cannot read ${name}`, dir, e);
  }
}

/**
 * The newest sequence number the directory's files record: the MANIFEST's `last_sequence` and,
 * in every log, each write batch's first sequence plus its count minus one (a batch header is
 * sequence:u64le count:u32le). Read while LevelDB holds the directory with nothing in flight, it
 * is the sequence of the last write; read after an open, the MANIFEST alone has it (the open
 * records it). Never too high: a file moved or cut mid-read makes it lower, or null (unreadable).
 * Sequences stay below 2^53 for any database a process can write (one per op).
 */
export async function lastSequence(dir: string): Promise<number | null> {
  const problems: string[] = [];
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return null;
  }
  let newest = 0;
  for (const name of names) {
    if (!/^\d+\.log$/.test(name)) continue;
    const buf = await readFile(join(dir, name)).catch(() => null);
    if (buf === null) continue; // deleted by a flush meanwhile: the MANIFEST has its sequence
    for (const rec of readLogRecords(buf, name, problems)) {
      if (rec.length < 12) continue;
      const last = Number(rec.readBigUInt64LE(0)) + rec.readUInt32LE(8) - 1;
      if (last > newest) newest = last;
    }
  }
  const m = await currentManifest(dir);
  return m === null || problems.length > 0 ? null : Math.max(newest, m.lastSequence);
}

/** The live tables the current MANIFEST lists (number → size); null if it cannot be read or parsed. */
export async function liveTables(dir: string): Promise<ReadonlyMap<number, number> | null> {
  return (await currentManifest(dir))?.live ?? null;
}

/** The CRC of table `num`'s footer (level-known-tables.ts), or null unless it is there at `size`. */
export async function tableFooterCrc(dir: string, num: number, size: number): Promise<number | null> {
  const tail = await readOrNull(dir, `${String(num).padStart(6, '0')}.ldb`, true).catch(() => null);
  return tail === null || (tail as TailRead).fileSize !== size || tail.length !== FOOTER_LEN ? null : footerCrc(tail);
}

/** The current MANIFEST replayed, or null if CURRENT or it cannot be read or has a damaged record. */
async function currentManifest(dir: string): Promise<ManifestState | null> {
  const current = await readFile(join(dir, 'CURRENT')).catch(() => null);
  if (current === null) return null;
  const name = current.toString('latin1').trim();
  const manifest = await readFile(join(dir, name)).catch(() => null);
  if (manifest === null) return null;
  const problems: string[] = [];
  const m = newManifestState();
  for (const rec of readLogRecords(manifest, name, problems)) if (applyVersionEdit(rec, m) !== null) return null;
  return problems.length > 0 ? null : m;
}
