/**
 * The `file:DIR` engine: KvEngine over LevelDB (`classic-level@3`, LevelDB 1.20 underneath).
 *
 * Durability contract (why the write path looks the way it does):
 * - A `write` promise resolves only after the LevelDB batch holding its ops was written with
 *   `sync: true`, i.e. appended to LevelDB's log and fsynced. So an acknowledged write survives
 *   `kill -9` and power loss; a write whose promise has not resolved may or may not survive, and
 *   since each call's ops go into one LevelDB batch (one log record), it survives whole or not at
 *   all.
 * - GROUP COMMIT: an fsync costs the same for 1 op or 10 000, so writes are not synced one by one.
 *   Calls arriving while a batch is being synced accumulate into the next group; one group = one
 *   native batch = one log record = one fsync, and every caller in the group shares one promise
 *   (no per-call closures). At most one group is in flight, so groups (and the calls inside a
 *   group) apply in call order. A new group is flushed on `setImmediate`, not synchronously, so
 *   callers woken by the previous group's completion (their continuations run as microtasks)
 *   still join it.
 * - The hot path bypasses abstract-level's public `batch()`: it clones and re-encodes every op in
 *   JS (measured 4–5× slower). Instead ops go straight into a native chained batch (`_put`/`_del`,
 *   one N-API call each, ~1 µs/op) as soon as `write` is called. Because the native binding
 *   silently writes an EMPTY slice for anything that is not a Uint8Array, `write` type-checks
 *   every op first and rejects the whole call before touching the batch (so one bad caller
 *   cannot poison the group it would have joined).
 * - `get` uses `getSync` (~4–6 µs, vs ~80 µs for the async get's thread-pool round trip). It sees
 *   every batch whose promise resolved. LevelDB applies a batch to the memtable only after its log
 *   record was synced, so a reader can see a group slightly before its promise resolves, but
 *   never before it is durable.
 * - Keys and values are copied into the native batch during the `write` call, so callers may
 *   reuse their buffers as soon as `write` returns (except a deferred write's values, see below).
 * - DEFERRED writes (Percolator's locks and secondary commits, which the protocol can recover):
 *   the ops join the open group like any other and the call resolves at once. Until LevelDB has
 *   applied that group, an OVERLAY (key → newest deferred value, and the group holding it) makes
 *   them visible: `get` consults it first, and `iterate` waits until every group holding a
 *   deferred op is written before it opens its LevelDB snapshot. Durability comes from the group's
 *   fsync; a later durable write is in the same or a later group, so when it is acknowledged the
 *   deferred ops before it are durable too. If a group holding deferred ops fails, they stay in
 *   the overlay, acknowledged and visible, until writing resumes (below) and writes them first.
 * - A FAILED WRITE (a full disk, a file-size limit, an I/O error) stops writing through this
 *   handle: the failed group's durable callers get its IO_ERROR, and every group queued behind it
 *   and every later write or clear is refused with an IO_ERROR naming it; point reads go on, and
 *   scans too unless their range holds a deferred op not yet written. LevelDB 1.20 does not stop by
 *   itself after a failed log append: it has counted the record's bytes as written, while stdio
 *   wrote part of them and dropped the rest, so once the disk had room again its next records
 *   landed misaligned in the log — acknowledged, then unreadable at the next open (DATA_CORRUPTED;
 *   LevelDB alone would drop them). Refusing leaves the log ending in the torn record, which the
 *   next open discards as it does after a crash.
 * - RESUMING (`resumeWrites`, also retried on a timer with backoff while writes are refused) — only
 *   after a lack of room (no space, a file-size limit, a quota: the failed record is torn, and a
 *   replay drops it); after a failed fsync or a device error the record may be whole in the page
 *   cache, so writes stay refused until the process reopens the store (`details.resumable`). Once
 *   the file system has room for the memtable's flush, a compaction of a range that holds no key
 *   makes LevelDB move to a new log (a new writer, aligned) and flush the memtable to a table,
 *   after which it deletes the old log, torn record and all. A failed flush or compaction (on a
 *   full disk, a compaction usually fails too) stops LevelDB's writes for good (its background
 *   error): then the old log stays, and the engine REOPENS — closes its handle and opens a new one
 *   on the same files, which replays the log without the torn record and clears the error. New
 *   scans wait for the reopen, the reopen waits (up to 5 s, else it tries later) for the scans
 *   already open, and point reads fail with IO_ERROR (`details.reopening`) while there is no
 *   handle. Only then are the deferred ops the failure left unwritten written, as one synced batch
 *   ahead of anything else, and writes taken again. No attempt is made without the room (a
 *   failed open leaves no handle until a later attempt). A close while writes are refused tries
 *   once to resume; deferred ops still unwritten then are lost, as in a crash before their group's
 *   fsync. If the reopen's recovery dropped data (LevelDB's LOG says so), the engine is broken for
 *   good: DATA_CORRUPTED for every call.
 * - A DIRECTORY THAT WENT AWAY (removed, moved or replaced while open; dir-identity.ts): LevelDB
 *   goes on appending and fsyncing into files no path reaches, lost when the process ends. So a
 *   group is acknowledged only if, after its fsync, `dir` still names the directory opened; else
 *   its callers get IO_ERROR (`details.removed`) and writes are refused for good, as after a
 *   failed fsync. `writeFailure()` (a health check) looks too, so an idle server reports it.
 * - `iterate` uses a LevelDB iterator, which reads from an implicit snapshot taken when the
 *   iterator is created (on the consumer's first `next()`); it is closed in `finally`, so a
 *   consumer's early `break` releases it.
 *
 * Corruption (docs/durability.md has the full table): LevelDB 1.20 as built by classic-level runs
 * with `paranoid_checks = false` and `verify_checksums = false`, and classic-level exposes neither.
 * With those defaults LevelDB *silently drops* log records whose checksum fails during recovery
 * (then deletes the log), and reads table blocks without checking their CRC. So before LevelDB is
 * allowed to open the directory, `verifyLevelDir` (level-verify.ts) re-checks in JS what paranoid
 * mode would have checked: CURRENT → MANIFEST (every record's CRC), every live table file (exists,
 * size matches the MANIFEST, footer magic, CRC32C of every block, blocks tile the file — by
 * default only for tables not known good and a rotating share of the rest: level-known-tables.ts),
 * and every log LevelDB is about to replay (every record's CRC, fragment structure). A log that
 * merely ends early (a torn final record) is what a crash leaves behind and is accepted, as
 * LevelDB does. After opening, the engine also scans LevelDB's own info `LOG` for "dropping …
 * Corruption" lines as a backstop and leaves a `PERCOLATOR-CORRUPTION` marker so the finding
 * survives the log's deletion. Values also carry the store layer's CRC, so bit rot after open is
 * caught when read.
 *
 * Seals (level-seal.ts): `close(seal)` leaves bytes beside the files with the newest sequence
 * number they record (`lastSequence`), and the next open hands them out (`takeSealed`) only if
 * the newest sequence after LevelDB opened is still that one — no write by anyone in between.
 *
 * Errors are StoreErrors: STORE_LOCKED (another process or engine holds the directory),
 * DATA_CORRUPTED (with the dir and the engine's or verifier's message), STORE_CLOSED, IO_ERROR.
 * Nothing is swallowed but a failed `reclaim`, which changes no data (see there).
 */
import { readdir, readFile, stat, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeDirs } from '../../util/make-dirs.js';
import { ClassicLevel, type Iterator as LevelIterator } from 'classic-level';
import { bytesKey, keyBytes } from '../bytes.js';
import { StoreError } from '../errors.js';
import type { KvEngine, KvEntry, KvOp, KvRange, KvWriteOptions } from '../kv-engine.js';
import { ioError, mapError } from './level-errors.js';
import { warnIfLevelDbUnfixed } from './leveldb-fix.js';
import { DirIdentity } from './dir-identity.js';
import { heldError, lockHolder } from './level-lock.js';
import { takeSeal, writeSeal } from './level-seal.js';
import { CORRUPTION_MARKER, isStoreEntry, logFiles } from './store-files.js';
import { type LevelCompaction, parseLevelStats } from './level-stats.js';
import { LEVELDB_MMAP_LIMIT, holdMmapSlots } from './mmap-ballast.js';
import { type KnownTable, readKnownTables, writeKnownTables } from './level-known-tables.js';
import {
  type LevelVerifyReport,
  dataWithoutCurrent,
  lastSequence,
  liveTables,
  noDatabaseYet,
  tableFooterCrc,
  verifyLevelDir,
} from './level-verify.js';

// ---------------------------------------------------------------------------------------------
// Public API

export interface LevelEngineOptions {
  /** LevelDB memtable / log size before a flush to a table file. Default 32 MiB. */
  readonly writeBufferSize?: number;
  /** LRU cache of uncompressed blocks. Default 64 MiB. */
  readonly cacheSize?: number;
  /**
   * Table files kept open. Default 1 000 when the mmap ballast holds LevelDB's mapping slots (then
   * tables are read with `pread` into the block cache and cost only their index and filter blocks
   * while open), else 100: LevelDB memory-maps open tables (up to 1 000 per process), pages of
   * mapped files it reads count in the process's RSS, and this bounds that part to about
   * maxOpenFiles × maxFileSize.
   */
  readonly maxOpenFiles?: number;
  /**
   * Build the process's mmap ballast (mmap-ballast.ts) before opening, so this and every later
   * store of the process reads its tables with `pread`. Default true; ~0.5 s once per process.
   */
  readonly mmapBallast?: boolean;
  /** Target table file size. Default 4 MiB (LevelDB's 2 MiB makes many small files). */
  readonly maxFileSize?: number;
  /** Uncompressed block size. Default 4 KiB (LevelDB's default; good for point reads). */
  readonly blockSize?: number;
  /** Snappy compression of table blocks. Default true. */
  readonly compression?: boolean;
  /**
   * Whether to create the database where the directory holds none (no `CURRENT`).
   * `if-empty` (default): only in a directory that is missing or empty, or holds only what a
   * creation that stopped before writing `CURRENT` leaves (LOCK, LOG, a MANIFEST); one holding
   * other files is NOT_A_STORE and nothing is written, so `file:.` never strews a database among a
   * project's files. False: never — for processes that only read (the CLI's get, scan, search,
   * wait). True: wherever the directory is, among any files (LevelDB's own behaviour).
   * Whatever this says, a directory without `CURRENT` holding tables, logs or a MANIFEST that
   * lists any data (a store that lost `CURRENT`) is DATA_CORRUPTED: LevelDB would start a new
   * database over it. Without (a creation that stopped before writing `CURRENT` leaves at most a
   * MANIFEST of no data), the directory counts as empty.
   */
  readonly create?: boolean | 'if-empty';
  /**
   * What to verify before LevelDB opens the directory (see the header):
   * `incremental` (default) = MANIFEST + logs + every block of the live tables not known good
   * (level-known-tables.ts) and of `recheckBytes` of known ones, oldest check first, + the sizes
   * and footers of the rest; `full` = every block of every live table (reads the whole database:
   * ~0.5 GB/s); `logs` = MANIFEST + logs + table sizes and footers; `none`.
   */
  readonly verify?: 'incremental' | 'full' | 'logs' | 'none';
  /** Bytes of known tables an incremental verification reads again. Default 32 MiB. */
  readonly recheckBytes?: number;
  /** A group is sealed (a new one started) beyond this many ops… Default 100 000. */
  readonly maxGroupOps?: number;
  /** …or this many key+value bytes. Default 32 MiB. A single call is never split. */
  readonly maxGroupBytes?: number;
}

export interface LevelEngineStats {
  /** `write` calls with at least one op. */
  readonly writes: number;
  /** Ops across those calls. */
  readonly ops: number;
  /** Native batches written (= fsyncs). `writes / batches` is the group-commit factor. */
  readonly batches: number;
  /** Key and value bytes of those ops (what LevelDB logs, then compacts). */
  readonly bytes: number;
  /** `get` calls that LevelDB answered (those the deferred overlay answered are not counted). */
  readonly reads: number;
  /** Table files the open's verification read whole (every block checked), and their bytes. */
  readonly tablesVerified: number;
  readonly tableBytesVerified: number;
}

export interface LevelEngine extends KvEngine {
  readonly dir: string;
  /** Counters since open. */
  stats(): LevelEngineStats;
  /** LevelDB's own flush and compaction counters since open (`leveldb.stats`, level-stats.ts). */
  compaction(): LevelCompaction;
  takeSealed(): Uint8Array | null;
  /** Why writes are refused (a failed write, the directory gone), or null: they are taken. */
  writeFailure(): StoreError | null;
}

export { CORRUPTION_MARKER };

export async function openLevelEngine(dir: string, options: LevelEngineOptions = {}): Promise<LevelEngine> {
  warnIfLevelDbUnfixed();
  if (typeof dir !== 'string' || dir.length === 0) {
    throw new StoreError('INVALID_ARGUMENT', 'openLevelEngine needs a directory', { dir });
  }
  const create = options.create ?? 'if-empty';
  const isDir = await stat(dir).then(
    (st) => st.isDirectory(),
    () => null, // missing (or unreadable: the open below says which)
  );
  if (isDir === false) throw new StoreError('NOT_A_STORE', `${dir} is not a directory; nothing was created`, { dir });
  const found = await stat(join(dir, 'CURRENT')).then(
    (st) => st.isFile(),
    (e: NodeJS.ErrnoException) => {
      // Only a missing CURRENT means "no store": an unreadable directory is not an empty one.
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return false;
      throw ioError(`cannot read the store directory ${dir}`, dir, e);
    },
  );
  const entries = found ? [] : await readdir(dir).catch(() => [] as string[]);
  const foreign = entries.filter((name) => !isStoreEntry(name));
  if (create === 'if-empty' && foreign.length > 0) {
    throw new StoreError('NOT_A_STORE', `${dir} holds files and no store (${foreign.slice(0, 3).join(', ')}); nothing was created`, {
      dir,
      foreign: foreign.slice(0, 20),
    });
  }
  const orphans = found ? [] : await dataWithoutCurrent(dir, entries);
  // Before "no store": a store that lost its CURRENT is a damaged store, which a user must not
  // take for an absent one (and, say, recreate over it).
  if (orphans.length > 0) {
    throw new StoreError('DATA_CORRUPTED', `store ${dir} is corrupted: ${orphans.join('; ')}; nothing was created`, {
      dir,
      problems: orphans,
    });
  }
  // `absent`: nothing there at all — a caller may say how one is made (the worker does).
  if (!found && create === false) throw new StoreError('NOT_A_STORE', `no store at ${dir} (nothing was created)`, { dir, absent: true });
  try {
    await makeDirs(dir);
  } catch (e) {
    throw ioError(`cannot create the store directory ${dir}`, dir, e);
  }

  const holder = await lockHolder(dir);
  if (holder !== null) throw await heldError(dir, holder);

  const marker = await readFile(join(dir, CORRUPTION_MARKER), 'utf8').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return null;
    throw ioError(`cannot read ${CORRUPTION_MARKER}`, dir, e);
  });
  if (marker !== null) {
    throw new StoreError(
      'DATA_CORRUPTED',
      `store ${dir} was found corrupted earlier (${marker.trim()}); inspect it, then delete ${join(dir, CORRUPTION_MARKER)} to accept the loss`,
      { dir, engineMessage: marker.trim() },
    );
  }

  // Started before the verification so the two overlap; awaited before LevelDB opens any table.
  const ballast = options.mmapBallast === false ? Promise.resolve(null) : holdMmapSlots();

  const verify = options.verify ?? 'incremental';
  // A new store's tables are all written by this process: the close records them as known.
  let report: LevelVerifyReport | null = found ? null : noDatabaseYet();
  // Without CURRENT there is nothing more to verify than dataWithoutCurrent checked above.
  if (verify !== 'none' && found) {
    const tables = verify === 'full' ? 'blocks' : verify === 'logs' ? 'sizes' : 'incremental';
    report = await verifyLevelDir(dir, { tables, known: await readKnownTables(dir), budget: options.recheckBytes ?? 32 * MiB });
    if (report.problems.length > 0) {
      // Another process may have opened the directory after our probe and be writing files we
      // read half-done: then it is locked, not corrupted. We never hand a corrupted directory to
      // LevelDB: its recovery would drop the bad log records and delete the evidence.
      const again = await lockHolder(dir);
      if (again !== null) throw await heldError(dir, again);
      throw new StoreError('DATA_CORRUPTED', `store ${dir} is corrupted: ${report.problems.slice(0, 5).join('; ')}`, {
        dir,
        engineMessage: report.problems.join('\n'),
        problems: report.problems,
      });
    }
  }

  const slotsHeld = (await ballast) !== null;
  const db = newLevel(dir, options, slotsHeld, true);
  // A reopen never creates: a directory emptied under a running store must not become a new one.
  const handle = (): Level => newLevel(dir, options, slotsHeld, false);
  try {
    await db.open();
  } catch (e) {
    throw mapError(e, dir, 'open', false);
  }

  const dropped = await recoveryDrops(dir);
  if (dropped.length > 0) {
    // The DATA_CORRUPTED below is the error that matters; a failing close must not replace it.
    await db.close().catch(() => undefined);
    throw await droppedError(dir, dropped);
  }

  // A seal is trusted only if nothing was written after it (level-seal.ts); reading the sequence
  // now, with the directory locked and LevelDB's open recorded in the MANIFEST, closes the gap
  // between our check and our open.
  const sequence = await lastSequence(dir);
  const sealed = sequence === null ? null : await takeSeal(dir, sequence);
  // What this open checked stays known if the process dies; like a seal, it is only a shortcut.
  if (report !== null) await writeKnownTables(dir, report.known).catch(() => undefined);
  return new LevelEngineImpl(db, handle, dir, options, sealed, DirIdentity.of(dir), report);
}

type Level = ClassicLevel<Uint8Array, Uint8Array>;

/** A handle on the database in `dir`, not yet opened (`create`: LevelDB may create it where there is none). */
function newLevel(dir: string, options: LevelEngineOptions, slotsHeld: boolean, create: boolean): Level {
  return new ClassicLevel<Uint8Array, Uint8Array>(dir, {
    keyEncoding: 'view',
    valueEncoding: 'view',
    createIfMissing: create,
    errorIfExists: false,
    compression: options.compression ?? true,
    // Memory budgets (docs/durability.md): ~64 MiB of block cache, up to 2 × 32 MiB of memtables,
    // and no mapped table files (the ballast holds the slots) — or, without it, at most ~100 × 4 MiB
    // of them, whatever the size of the database.
    cacheSize: options.cacheSize ?? 64 * MiB,
    writeBufferSize: options.writeBufferSize ?? 32 * MiB,
    maxOpenFiles: options.maxOpenFiles ?? (slotsHeld ? LEVELDB_MMAP_LIMIT : 100),
    maxFileSize: options.maxFileSize ?? 4 * MiB,
    blockSize: options.blockSize ?? 4096,
  });
}

/**
 * Backstop after LevelDB opened: the records it reported dropping during recovery (its LOG), as a
 * DATA_CORRUPTED error, with the marker left so the finding outlives the LOG.
 */
async function droppedError(dir: string, dropped: readonly string[]): Promise<StoreError> {
  const text = dropped.join('\n');
  const markerError = await writeFile(
    join(dir, CORRUPTION_MARKER),
    `${new Date().toISOString()} LevelDB recovery dropped data:\n${text}\n`,
  ).then(
    () => null,
    (e: unknown) => (e instanceof Error ? e.message : String(e)),
  );
  const note = markerError === null ? '' : ` (and the ${CORRUPTION_MARKER} marker could not be written: ${markerError})`;
  return new StoreError('DATA_CORRUPTED', `LevelDB dropped corrupted log records while recovering ${dir}: ${dropped[0]}${note}`, {
    dir,
    engineMessage: text,
  });
}

// ---------------------------------------------------------------------------------------------
// The engine

const MiB = 1024 * 1024;

/** The parts of classic-level's ChainedBatch we drive directly (see header). */
interface NativeBatch {
  _put(key: Uint8Array, value: Uint8Array): void;
  _del(key: Uint8Array): void;
  _write(options: { sync: boolean }): Promise<void>;
}

/** One group commit: the calls that share one native batch, one fsync and one promise. */
interface Group {
  readonly batch: NativeBatch;
  ops: number;
  bytes: number;
  /** Overlay keys of the deferred ops in this group (null: none). */
  deferredKeys: string[] | null;
  readonly promise: Promise<void>;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
}

type State = 'open' | 'closing' | 'closed';

const RESOLVED = Promise.resolve();
/** A range no store key falls in (they start 0x00 or 0x01, key-layout.ts): compacting it compacts only the memtable. */
const NO_KEY_FIRST = Uint8Array.from([0xff, 0xff, 0xff, 0xfe]);
const NO_KEY_LAST = Uint8Array.from([0xff, 0xff, 0xff, 0xff]);
/** Room a resume needs besides what the logs hold (the new log, the MANIFEST's record, slack). */
const RESUME_MARGIN_BYTES = 4 * 1024 * 1024;
const FIRST_RESUME_DELAY_MS = 1_000;
/** How long a reopen waits for open scans to end before it gives up (until the next attempt). */
const REOPEN_SCAN_WAIT_MS = 5_000;
const MAX_RESUME_DELAY_MS = 10_000;
const NO_VALUE = new Uint8Array(0);
const SYNC = { sync: true } as const;

class LevelEngineImpl implements LevelEngine {
  private state: State = 'open';
  /** Groups not yet written, oldest first; the last one is open for more calls. */
  private readonly queue: Group[] = [];
  private inFlight: Group | null = null;
  private flushScheduled = false;
  private closePromise: Promise<void> | null = null;
  private drainWaiters: (() => void)[] = [];
  private nWrites = 0;
  private nOps = 0;
  private nBytes = 0;
  private nReads = 0;
  private nBatches = 0;
  private readonly maxGroupOps: number;
  private readonly maxGroupBytes: number;
  private readonly flushNow = (): void => this.flush();
  /** Deferred ops LevelDB has not applied yet: latin1 key → newest value (undefined = deleted). */
  private readonly overlay = new Map<string, { readonly value: Uint8Array | undefined; readonly group: Group }>();
  /** The newest group holding deferred ops, until it is written. */
  private lastDeferred: Group | null = null;
  /** Set when a group failed to write: every later write is refused until writing resumes (reads go on). */
  private writesRefused: StoreError | null = null;
  /** The resume attempt under way, shared by every caller. */
  private resuming: Promise<StoreError | null> | null = null;
  private resumeTimer: NodeJS.Timeout | null = null;
  private resumeDelayMs = FIRST_RESUME_DELAY_MS;
  /** LevelDB iterators open (a reopen waits for them to end). */
  private openIterators = 0;
  private iteratorWaiters: (() => void)[] = [];
  /** Set while a reopen is under way: new scans wait for it. */
  private reopening: Promise<void> | null = null;
  /**
   * Set while there is no open LevelDB handle (a reopen's swap, or one that could not open): calls
   * fail with it. A reopen whose recovery dropped data sets it, and the refusal, to that
   * DATA_CORRUPTED for good (not resumable: nothing is tried any more).
   */
  private handleGone: StoreError | null = null;

  constructor(
    private db: Level,
    /** A new handle on the same directory (a reopen). */
    private readonly handle: () => Level,
    readonly dir: string,
    options: LevelEngineOptions,
    private sealed: Uint8Array | null,
    /** What `dir` was at open (dir-identity.ts); null if it could not be read then (nothing is checked). */
    private readonly identity: DirIdentity | null,
    /** The open's verification; null if it verified nothing (`verify: 'none'`, a new store). */
    private readonly verified: LevelVerifyReport | null,
  ) {
    this.maxGroupOps = options.maxGroupOps ?? 100_000;
    this.maxGroupBytes = options.maxGroupBytes ?? 32 * MiB;
  }

  stats(): LevelEngineStats {
    return {
      writes: this.nWrites,
      ops: this.nOps,
      batches: this.nBatches,
      bytes: this.nBytes,
      reads: this.nReads,
      tablesVerified: this.verified?.tablesRead ?? 0,
      tableBytesVerified: this.verified?.tableBytesRead ?? 0,
    };
  }

  compaction(): LevelCompaction {
    if (this.state !== 'open') throw this.closedError();
    if (this.handleGone !== null) throw this.handleGone;
    return parseLevelStats(this.db.getProperty('leveldb.stats'));
  }

  private closedError(): StoreError {
    return new StoreError('STORE_CLOSED', `the store at ${this.dir} is closed`, { dir: this.dir });
  }

  get(key: Uint8Array): Uint8Array | undefined {
    if (this.state !== 'open') throw this.closedError();
    if (this.handleGone !== null) throw this.handleGone;
    if (this.overlay.size !== 0) {
      const e = this.overlay.get(bytesKey(key));
      if (e !== undefined) return e.value;
    }
    this.nReads++;
    try {
      return this.db.getSync(key);
    } catch (e) {
      throw mapError(e, this.dir, 'get', this.state !== 'open');
    }
  }

  async *iterate(range: KvRange): AsyncIterable<readonly KvEntry[]> {
    if (this.state !== 'open') throw this.closedError();
    // The snapshot must include acknowledged deferred ops: wait until LevelDB has them.
    if (this.lastDeferred !== null) await this.lastDeferred.promise.catch(() => undefined);
    while (this.reopening !== null) await this.reopening;
    if (this.state !== 'open') throw this.closedError();
    if (this.handleGone !== null) throw this.handleGone;
    if (this.writesRefused !== null && this.overlay.size !== 0) this.refuseStalledScan(range);
    // highWaterMarkBytes bounds what one native nextv() buffers (default 16 KiB, ~100 small
    // entries per thread-pool round trip); 1 MiB lets the growing batch size take effect.
    const values = range.keysOnly !== true;
    const opts: { gte?: Uint8Array; lt?: Uint8Array; reverse: boolean; keys: true; values: boolean; highWaterMarkBytes: number } = {
      reverse: range.reverse === true,
      keys: true,
      values,
      highWaterMarkBytes: MiB,
    };
    if (range.gte !== undefined) opts.gte = range.gte;
    if (range.lt !== undefined) opts.lt = range.lt;
    let it: LevelIterator<ClassicLevel<Uint8Array, Uint8Array>, Uint8Array, Uint8Array>;
    try {
      it = this.db.iterator<Uint8Array, Uint8Array>(opts);
    } catch (e) {
      throw mapError(e, this.dir, 'iterate', this.state !== 'open');
    }
    this.openIterators++;
    try {
      let n = range.expect !== undefined && range.expect > 0 ? Math.min(64, range.expect) : 64;
      for (;;) {
        let entries: [Uint8Array, Uint8Array][];
        try {
          entries = await it.nextv(n);
        } catch (e) {
          throw mapError(e, this.dir, 'iterate', this.state !== 'open');
        }
        const len = entries.length;
        if (len === 0) return;
        const out: KvEntry[] = new Array(len);
        for (let i = 0; i < len; i++) {
          const e = entries[i];
          out[i] = { key: e[0], value: values ? e[1] : NO_VALUE };
        }
        yield out;
        if (n < 4096) n = Math.min(4096, Math.max(64, n * 2)); // small first batches for short scans, big ones for long scans
      }
    } finally {
      // Closing an iterator the db already closed (close() mid-iteration) is a no-op.
      await it
        .close()
        .catch((e: unknown) => {
          if (this.state === 'open') throw mapError(e, this.dir, 'iterate', false);
        })
        .finally(() => {
          if (--this.openIterators === 0 && this.iteratorWaiters.length > 0) {
            const waiters = this.iteratorWaiters;
            this.iteratorWaiters = [];
            for (const w of waiters) w();
          }
        });
    }
  }

  write(ops: readonly KvOp[], options?: KvWriteOptions): Promise<void> {
    if (this.state !== 'open') return Promise.reject(this.closedError());
    if (this.writesRefused !== null) return Promise.reject(this.writesRefused);
    const n = ops.length;
    // Validate the whole call before any op reaches the shared native batch.
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      const op = ops[i];
      if (!(op.key instanceof Uint8Array)) return Promise.reject(badOp(i, 'key is not a Uint8Array'));
      if (op.type === 'put') {
        if (!(op.value instanceof Uint8Array)) return Promise.reject(badOp(i, 'value is not a Uint8Array'));
        bytes += op.key.byteLength + op.value.byteLength;
      } else if (op.type === 'del') {
        bytes += op.key.byteLength;
      } else {
        return Promise.reject(badOp(i, `unknown op type ${String((op as { type: unknown }).type)}`));
      }
    }
    if (n === 0) {
      // A barrier: resolves once everything written before it is durable.
      const last = this.queue.length > 0 ? this.queue[this.queue.length - 1] : this.inFlight;
      return last === null ? RESOLVED : last.promise;
    }
    let g = this.queue.length > 0 ? this.queue[this.queue.length - 1] : undefined;
    if (g === undefined || g.ops + n > this.maxGroupOps || g.bytes + bytes > this.maxGroupBytes) {
      let created: Group;
      try {
        created = this.newGroup();
      } catch (e) {
        return Promise.reject(mapError(e, this.dir, 'write', false));
      }
      g = created;
    }
    const b = g.batch;
    for (let i = 0; i < n; i++) {
      const op = ops[i];
      if (op.type === 'put') b._put(op.key, op.value);
      else b._del(op.key);
    }
    g.ops += n;
    g.bytes += bytes;
    this.nWrites++;
    this.nOps += n;
    this.nBytes += bytes;
    if (!this.flushScheduled && this.inFlight === null) {
      this.flushScheduled = true;
      setImmediate(this.flushNow);
    }
    if (options?.deferred !== true) return g.promise;
    const keys = (g.deferredKeys ??= []);
    for (let i = 0; i < n; i++) {
      const op = ops[i] as KvOp;
      const k = bytesKey(op.key);
      this.overlay.set(k, { value: op.type === 'put' ? op.value : undefined, group: g });
      keys.push(k);
    }
    this.lastDeferred = g;
    return RESOLVED;
  }

  private newGroup(): Group {
    const batch = this.nativeBatch();
    let resolve!: () => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // Deferred writers never await the promise; their ops stay in the overlay if it fails.
    promise.catch(() => undefined);
    const g: Group = { batch, ops: 0, bytes: 0, deferredKeys: null, promise, resolve, reject };
    this.queue.push(g);
    return g;
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.inFlight !== null) return;
    const g = this.queue.shift();
    if (g === undefined) {
      this.notifyDrained();
      return;
    }
    if (this.writesRefused !== null) {
      // Queued before a group failed: never written, so refused as a whole (settle goes on to the next).
      this.settle(g, this.writesRefused);
      return;
    }
    this.inFlight = g;
    this.nBatches++;
    let p: Promise<void>;
    try {
      p = g.batch._write(SYNC);
    } catch (e) {
      p = Promise.reject(e);
    }
    p.then(
      // Written and fsynced — but acknowledged only if into the directory that is still at `dir`.
      () => this.settle(g, this.dirLost()),
      (e: unknown) => this.settle(g, mapError(e, this.dir, 'write', false)),
    );
  }

  /** A native batch we write ourselves (see the header). */
  private nativeBatch(): NativeBatch {
    const batch = this.db.batch() as unknown as NativeBatch;
    // Registered with the db by its constructor; we never call its public write()/close(), which
    // would detach it, so detach now (the native batch is freed when the object is collected).
    this.db.detachResource(batch as unknown as Parameters<ClassicLevel['detachResource']>[0]);
    return batch;
  }

  private settle(g: Group, err: StoreError | null): void {
    this.inFlight = null;
    if (err !== null && this.writesRefused === null) {
      this.writesRefused = refusedError(this.dir, err);
      if (this.writesRefused.details.resumable === true) this.scheduleResume();
    }
    if (g.deferredKeys !== null) {
      // Unwritten deferred ops were acknowledged: they stay in the overlay until resumeWrites writes them.
      if (err === null) for (const k of g.deferredKeys) if (this.overlay.get(k)?.group === g) this.overlay.delete(k);
      if (this.lastDeferred === g) this.lastDeferred = null;
    }
    if (err === null) g.resolve();
    else g.reject(err);
    if (this.queue.length > 0) {
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(this.flushNow);
      }
    } else {
      this.notifyDrained();
    }
  }

  private notifyDrained(): void {
    if (this.inFlight !== null || this.queue.length > 0) return;
    const waiters = this.drainWaiters;
    if (waiters.length === 0) return;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }

  /** Resolves when no group is queued or in flight (failures are reported to their callers). */
  private drained(): Promise<void> {
    if (this.inFlight === null && this.queue.length === 0) return RESOLVED;
    return new Promise((res) => this.drainWaiters.push(res));
  }

  async approximateSize(gte: Uint8Array, lt: Uint8Array): Promise<number> {
    if (this.state !== 'open') throw this.closedError();
    if (this.handleGone !== null) throw this.handleGone;
    try {
      return await this.db.approximateSize(gte, lt);
    } catch (e) {
      throw mapError(e, this.dir, 'approximateSize', this.state !== 'open');
    }
  }

  async clear(range: KvRange): Promise<void> {
    if (this.state !== 'open') throw this.closedError();
    // Writes issued before clear() must be cleared too: let them land first.
    await this.drained();
    if (this.state !== 'open') throw this.closedError();
    if (this.writesRefused !== null) throw this.writesRefused;
    const opts: { gte?: Uint8Array; lt?: Uint8Array } = {};
    if (range.gte !== undefined) opts.gte = range.gte;
    if (range.lt !== undefined) opts.lt = range.lt;
    try {
      await this.db.clear(opts);
    } catch (e) {
      throw mapError(e, this.dir, 'clear', this.state !== 'open');
    }
    // db.clear writes its deletions without sync. A synced write after them makes them durable
    // (LevelDB's log is sequential). It deletes a key inside the range (already deleted), so it
    // changes nothing; an empty range needs no barrier.
    const first = range.gte ?? new Uint8Array(0);
    if (range.lt !== undefined && Buffer.compare(first, range.lt) >= 0) return;
    await this.write([{ type: 'del', key: first }]);
  }

  /**
   * Compacts the range through every level, so deletions and overwrites there drop the values
   * they hide: without it a deleted table's bytes stay until compactions happen to reach them
   * (measured: 100 MB of rows deleted, 104 MB on disk after close and reopen). Takes time in
   * proportion to the table files overlapping the range; writes and reads go on meanwhile.
   * A failure is not reported: the deletions it follows are durable, and a compaction that fails
   * leaves LevelDB's background error, which the next write meets and the failed-write path above
   * handles (the space then comes back with a later compaction).
   */
  async reclaim(gte: Uint8Array, lt: Uint8Array): Promise<void> {
    if (this.state !== 'open' || this.handleGone !== null || this.writesRefused !== null) return;
    try {
      await this.db.compactRange(gte, lt);
    } catch {
      // See above: durable deletions, and any lasting failure surfaces at the next write.
    }
  }

  writeFailure(): StoreError | null {
    if (this.writesRefused === null && this.state === 'open') {
      // Asked by health checks: a store whose directory went away refuses before its next write does.
      const lost = this.dirLost();
      if (lost !== null) this.writesRefused = refusedError(this.dir, lost);
    }
    return this.writesRefused;
  }

  /** IO_ERROR (`details.removed`) when the path no longer names the directory opened (dir-identity.ts), else null. */
  private dirLost(): StoreError | null {
    const why = this.identity?.lost() ?? null;
    if (why === null) return null;
    return new StoreError(
      'IO_ERROR',
      `the store directory ${this.dir} is not the one opened: ${why}; LevelDB's writes would go to files no path reaches, lost when the process ends: stop the process (what was in the directory went with it: restore it from a backup, or start a new store)`,
      { dir: this.dir, removed: true },
    );
  }

  resumeWrites(): Promise<StoreError | null> {
    if (this.state === 'closed') return Promise.resolve(this.writesRefused ?? this.closedError());
    if (this.writesRefused === null) return Promise.resolve(null);
    if (this.resuming === null) {
      this.resuming = this.tryResume().finally(() => {
        this.resuming = null;
      });
    }
    return this.resuming;
  }

  /** See the header's RESUMING. Never rejects: every failure leaves writes refused. */
  private async tryResume(): Promise<StoreError | null> {
    await this.drained();
    if (this.state === 'closed' || this.writesRefused === null || this.writesRefused.details.resumable !== true) return this.writesRefused;
    try {
      const before = await logFiles(this.dir);
      // The flush writes about what the logs hold; a little more for the new log and the MANIFEST.
      let need = RESUME_MARGIN_BYTES;
      for (const size of before.values()) need += size;
      const fsStats = await statfs(this.dir);
      if (fsStats.bavail * fsStats.bsize < need) return this.writesRefused;
      if (this.handleGone === null) await this.db.compactRange(NO_KEY_FIRST, NO_KEY_LAST);
      const after = await logFiles(this.dir);
      // The old logs still there: LevelDB could not move on (its background error, after a failed
      // flush or compaction, stops every write for good) — only a new handle clears that.
      if ([...before.keys()].some((name) => after.has(name)) && !(await this.reopen())) return this.writesRefused;
    } catch {
      return this.writesRefused; // statfs, listing or compaction failed: still refused, retried later
    }
    if (this.overlay.size !== 0) {
      const batch = this.nativeBatch();
      for (const [k, e] of this.overlay) {
        if (e.value === undefined) batch._del(keyBytes(k));
        else batch._put(keyBytes(k), e.value);
      }
      try {
        this.nBatches++;
        await batch._write(SYNC);
      } catch (e) {
        // Torn in the new log: the next attempt moves to another one first.
        this.writesRefused = refusedError(this.dir, mapError(e, this.dir, 'write', false));
        return this.writesRefused;
      }
      this.overlay.clear();
    }
    this.writesRefused = null;
    this.resumeDelayMs = FIRST_RESUME_DELAY_MS;
    if (this.resumeTimer !== null) clearTimeout(this.resumeTimer);
    this.resumeTimer = null;
    return null;
  }

  /**
   * Closes LevelDB's handle and opens a new one on the same files: that clears LevelDB's background
   * error and replays the log (the torn record at its end dropped, as after a crash). Scans wait for
   * it, point reads fail during the swap itself. False when it could not be done now.
   */
  private async reopen(): Promise<boolean> {
    let done!: () => void;
    this.reopening = new Promise<void>((res) => (done = res));
    try {
      if (!(await this.iteratorsEnd(REOPEN_SCAN_WAIT_MS)) || this.state === 'closed') return false;
      this.handleGone = new StoreError(
        'IO_ERROR',
        `the store at ${this.dir} is being reopened after a failed write; try again`,
        { dir: this.dir, reopening: true },
        { cause: this.writesRefused },
      );
      if (this.db.status === 'open') {
        try {
          await this.db.close();
        } catch {
          if (this.db.status === 'open') this.handleGone = null; // still usable: try again later
          return false;
        }
      }
      const db = this.handle();
      try {
        await db.open();
      } catch {
        return false; // no handle until a later attempt opens one (handleGone stays)
      }
      this.db = db; // before anything else can throw: this handle holds the directory's lock now
      let dropped: string[];
      try {
        dropped = await recoveryDrops(this.dir);
      } catch (e) {
        this.handleGone = e instanceof StoreError ? e : ioError('cannot read LevelDB info LOG', this.dir, e);
        return false; // unchecked, so unused: the next attempt reopens again
      }
      if (dropped.length > 0) {
        const corrupted = await droppedError(this.dir, dropped);
        this.handleGone = corrupted;
        this.writesRefused = corrupted; // no `resumable`: never retried
        return false;
      }
      this.handleGone = null;
      return true;
    } finally {
      this.reopening = null;
      done();
    }
  }

  /** True once no LevelDB iterator is open, false if some still are after `ms`. */
  private iteratorsEnd(ms: number): Promise<boolean> {
    if (this.openIterators === 0) return Promise.resolve(true);
    return new Promise((res) => {
      const timer = setTimeout(() => res(false), ms);
      this.iteratorWaiters.push(() => {
        clearTimeout(timer);
        res(true);
      });
    });
  }

  /** Retries resumeWrites with backoff while writes are refused (unref'd: it keeps no process alive). */
  private scheduleResume(): void {
    if (this.resumeTimer !== null || this.state !== 'open' || this.writesRefused?.details.resumable !== true) return;
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = null;
      void this.resumeWrites().then((still) => {
        if (still === null) return;
        this.resumeDelayMs = Math.min(MAX_RESUME_DELAY_MS, this.resumeDelayMs * 2);
        this.scheduleResume();
      });
    }, this.resumeDelayMs);
    this.resumeTimer.unref();
  }

  /** Throws when the range holds a deferred op a failed write left unwritten: LevelDB's snapshot lacks it. */
  private refuseStalledScan(range: KvRange): void {
    const gte = range.gte === undefined ? null : bytesKey(range.gte);
    const lt = range.lt === undefined ? null : bytesKey(range.lt);
    for (const k of this.overlay.keys()) {
      if ((gte === null || k >= gte) && (lt === null || k < lt)) {
        throw new StoreError(
          'IO_ERROR',
          `a scan of the store at ${this.dir} waits for writing to resume: it would miss acknowledged writes not yet on disk (${this.writesRefused?.message ?? ''})`,
          { ...this.writesRefused?.details, dir: this.dir, refused: true },
          { cause: this.writesRefused },
        );
      }
    }
  }

  takeSealed(): Uint8Array | null {
    const s = this.sealed;
    this.sealed = null;
    return s;
  }

  close(seal?: Uint8Array): Promise<void> {
    if (this.closePromise === null) this.closePromise = this.doClose(seal);
    return this.closePromise;
  }

  /**
   * Adds to the known tables those LevelDB wrote since the open (live now, not at the open:
   * LevelDB syncs a table before its MANIFEST lists it), so the next open need not read them.
   * Only after the open's verification saw the live set, and only on a clean close: the tables a
   * crashed process wrote are read by the next open. Run once LevelDB has closed, when no
   * compaction is left to change the MANIFEST; should another process have opened the directory
   * meanwhile, what is written is still true (entries name immutable files LevelDB wrote, and
   * that process rewrites the file at its own close). Failing is not an error (a shortcut lost).
   */
  private async recordKnownTables(): Promise<void> {
    const at = this.verified;
    if (at === null) return;
    const live = await liveTables(this.dir).catch(() => null);
    if (live === null) return;
    const since = Date.now();
    const known = new Map<number, KnownTable>();
    for (const [num, size] of live) {
      const was = at.known.get(num);
      if (was !== undefined) known.set(num, was);
      else if (!at.live.has(num)) {
        const footer = await tableFooterCrc(this.dir, num, size);
        if (footer === null) return; // the directory changed under us: record nothing
        known.set(num, { size, footerCrc: footer, since });
      }
    }
    await writeKnownTables(this.dir, known).catch(() => undefined);
  }

  private async doClose(seal: Uint8Array | undefined): Promise<void> {
    this.state = 'closing';
    if (this.resumeTimer !== null) clearTimeout(this.resumeTimer);
    this.resumeTimer = null;
    await this.drained();
    // Deferred ops a failed write left unwritten are lost by the close unless writing resumes now.
    if (this.writesRefused !== null) await this.resumeWrites();
    // Sealed while we still hold the directory and nothing is in flight, so the sequence read is
    // that of our last write. A seal is a shortcut: failing to write one is not an error. Never
    // into a directory that replaced ours.
    if (seal !== undefined && this.writesRefused === null && this.dirLost() === null) {
      const sequence = await lastSequence(this.dir);
      if (sequence !== null) await writeSeal(this.dir, sequence, seal).catch(() => undefined);
    }
    try {
      await this.db.close();
    } catch (e) {
      this.state = 'closed';
      throw mapError(e, this.dir, 'close', false);
    }
    if (this.writesRefused === null && this.dirLost() === null) await this.recordKnownTables();
    this.state = 'closed';
  }
}

/**
 * The error every write gets once a group failed. Its first failure's IO_ERROR is the cause, and
 * its details (the engine's message) are kept.
 */
function refusedError(dir: string, first: StoreError): StoreError {
  const resumable = OUT_OF_ROOM.test(first.message);
  const message =
    first.details.removed === true
      ? `writes to the store at ${dir} are refused: ${first.message}` // it says what to do
      : `writes to the store at ${dir} are refused since one failed (${first.message}); ${
          resumable
            ? 'they resume by themselves once the disk has room (retried every few seconds)'
            : 'restart the process (reopen the store) to write again: after a failed fsync or a device error the failed write may be on disk or not, and writing on in place could make it appear later'
        }`;
  return new StoreError('IO_ERROR', message, { ...first.details, dir, refused: true, resumable }, { cause: first });
}

/**
 * The failures writing resumes from in place: a lack of room (a full disk, a file-size limit, a
 * quota) fails the log append part-way, so the failed record is torn and a replay drops it. Any
 * other (EIO from fdatasync, a failing device) may leave the record whole in the page cache: a
 * reopen would replay it, and a write its caller was told failed would appear after the fact.
 */
const OUT_OF_ROOM = /No space left on device|File too large|Disk quota exceeded/;

function badOp(index: number, why: string): StoreError {
  return new StoreError('INVALID_ARGUMENT', `engine write op ${index}: ${why}`, { index });
}

/** "dropping N bytes; Corruption: …" lines LevelDB wrote to its info LOG during this open. */
async function recoveryDrops(dir: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(join(dir, 'LOG'), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw ioError('cannot read LevelDB info LOG', dir, e);
  }
  return text.split('\n').filter((l) => /dropping \d+ bytes; Corruption/.test(l));
}
