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
 * - `iterate` uses a LevelDB iterator, which reads from an implicit snapshot taken when the
 *   iterator is created (on the consumer's first `next()`); it is closed in `finally`, so a
 *   consumer's early `break` releases it.
 *
 * Corruption (docs/durability.md has the full table): LevelDB 1.20 as built by classic-level runs
 * with `paranoid_checks = false` and `verify_checksums = false`, and classic-level exposes neither.
 * With those defaults LevelDB *silently drops* log records whose checksum fails during recovery
 * (then deletes the log), and reads table blocks without checking their CRC. So before LevelDB is
 * allowed to open the directory, `verifyLevelDir` re-checks in JS what paranoid mode would have
 * checked: CURRENT → MANIFEST (every record's CRC), every live table file (exists, size matches the
 * MANIFEST, footer magic, CRC32C of every block, blocks tile the file), and every log LevelDB is
 * about to replay (every record's CRC, fragment structure). A log that merely ends early (a torn
 * final record) is what a crash leaves behind and is accepted, as LevelDB does. After opening, the
 * engine also scans LevelDB's own info `LOG` for "dropping … Corruption" lines as a backstop and
 * leaves a `PERCOLATOR-CORRUPTION` marker so the finding survives the log's deletion. Values also
 * carry the store layer's CRC, so bit rot after open is caught when read.
 *
 * Seals (level-seal.ts): `close(seal)` leaves bytes beside the files with the newest sequence
 * number they record (`lastSequence`), and the next open hands them out (`takeSealed`) only if
 * the newest sequence after LevelDB opened is still that one — no write by anyone in between.
 *
 * Errors are StoreErrors: STORE_LOCKED (another process or engine holds the directory),
 * DATA_CORRUPTED (with the dir and the engine's or verifier's message), STORE_CLOSED, IO_ERROR.
 * Nothing is swallowed.
 */
import { open, readdir, readFile, stat, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeDirs } from '../../util/make-dirs.js';
import { ClassicLevel, type Iterator as LevelIterator } from 'classic-level';
import { bytesKey, keyBytes } from '../bytes.js';
import { StoreError } from '../errors.js';
import type { KvEngine, KvEntry, KvOp, KvRange, KvWriteOptions } from '../kv-engine.js';
import { heldError, lockHolder } from './level-lock.js';
import { takeSeal, writeSeal } from './level-seal.js';
import { CORRUPTION_MARKER, isDataFile, isStoreEntry, logFiles } from './store-files.js';
import { type LevelCompaction, parseLevelStats } from './level-stats.js';
import { LEVELDB_MMAP_LIMIT, holdMmapSlots } from './mmap-ballast.js';

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
   * `full` (default) = MANIFEST + logs + every block of every live table file (reads the whole
   * database once: ~0.5 GB/s); `logs` = MANIFEST + logs + table existence and sizes; `none`.
   */
  readonly verify?: 'full' | 'logs' | 'none';
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
}

export interface LevelEngine extends KvEngine {
  readonly dir: string;
  /** Counters since open. */
  stats(): LevelEngineStats;
  /** LevelDB's own flush and compaction counters since open (`leveldb.stats`, level-stats.ts). */
  compaction(): LevelCompaction;
  takeSealed(): Uint8Array | null;
}

export { CORRUPTION_MARKER };

export async function openLevelEngine(dir: string, options: LevelEngineOptions = {}): Promise<LevelEngine> {
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
  if (!found && create === false) throw new StoreError('NOT_A_STORE', `no store at ${dir} (nothing was created)`, { dir });
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

  const verify = options.verify ?? 'full';
  // Without CURRENT there is nothing more to verify than dataWithoutCurrent checked above.
  if (verify !== 'none' && found) {
    const report = await verifyLevelDir(dir, { tables: verify === 'full' ? 'blocks' : 'sizes' });
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
  return new LevelEngineImpl(db, handle, dir, options, sealed);
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
  ) {
    this.maxGroupOps = options.maxGroupOps ?? 100_000;
    this.maxGroupBytes = options.maxGroupBytes ?? 32 * MiB;
  }

  stats(): LevelEngineStats {
    return { writes: this.nWrites, ops: this.nOps, batches: this.nBatches, bytes: this.nBytes, reads: this.nReads };
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
      () => this.settle(g, null),
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

  writeFailure(): StoreError | null {
    return this.writesRefused;
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

  private async doClose(seal: Uint8Array | undefined): Promise<void> {
    this.state = 'closing';
    if (this.resumeTimer !== null) clearTimeout(this.resumeTimer);
    this.resumeTimer = null;
    await this.drained();
    // Deferred ops a failed write left unwritten are lost by the close unless writing resumes now.
    if (this.writesRefused !== null) await this.resumeWrites();
    // Sealed while we still hold the directory and nothing is in flight, so the sequence read is
    // that of our last write. A seal is a shortcut: failing to write one is not an error.
    if (seal !== undefined && this.writesRefused === null) {
      const sequence = await lastSequence(this.dir);
      if (sequence !== null) await writeSeal(this.dir, sequence, seal).catch(() => undefined);
    }
    try {
      await this.db.close();
    } catch (e) {
      this.state = 'closed';
      throw mapError(e, this.dir, 'close', false);
    }
    this.state = 'closed';
  }
}

/**
 * The error every write gets once a group failed. Its first failure's IO_ERROR is the cause, and
 * its details (the engine's message) are kept.
 */
function refusedError(dir: string, first: StoreError): StoreError {
  const resumable = OUT_OF_ROOM.test(first.message);
  const then = resumable
    ? 'they resume by themselves once the disk has room (retried every few seconds)'
    : 'restart the process (reopen the store) to write again: after a failed fsync or a device error the failed write may be on disk or not, and writing on in place could make it appear later';
  return new StoreError(
    'IO_ERROR',
    `writes to the store at ${dir} are refused since one failed (${first.message}); ${then}`,
    { ...first.details, dir, refused: true, resumable },
    { cause: first },
  );
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

// ---------------------------------------------------------------------------------------------
// Error mapping

/** An IO_ERROR about `dir`, carrying the cause's message. */
export function ioError(message: string, dir: string, cause: unknown): StoreError {
  const m = cause instanceof Error ? cause.message : String(cause);
  return new StoreError('IO_ERROR', `${message}: ${m}`, { dir, engineMessage: m }, { cause });
}

/** Maps a classic-level / LevelDB error (walking its `cause` chain) to a StoreError. */
export function mapError(err: unknown, dir: string, op: string, closed: boolean): StoreError {
  if (err instanceof StoreError) return err;
  const codes: string[] = [];
  const messages: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    if (typeof e === 'object') {
      const code = (e as { code?: unknown }).code;
      if (typeof code === 'string') codes.push(code);
      const msg = (e as { message?: unknown }).message;
      if (typeof msg === 'string') messages.push(msg);
      e = (e as { cause?: unknown }).cause;
    } else {
      messages.push(String(e));
      break;
    }
  }
  const engineMessage = messages[messages.length - 1] ?? String(err);
  const details = { dir, op, engineCode: codes[codes.length - 1], engineMessage };
  if (codes.includes('LEVEL_LOCKED')) {
    return new StoreError('STORE_LOCKED', `the store at ${dir} is open in another process or engine (${engineMessage})`, details, {
      cause: err,
    });
  }
  if (codes.includes('LEVEL_CORRUPTION') || messages.some((m) => m.includes('Corruption'))) {
    return new StoreError('DATA_CORRUPTED', `LevelDB reports corruption in ${dir} during ${op}: ${engineMessage}`, details, { cause: err });
  }
  if (closed && codes.some((c) => c.endsWith('_NOT_OPEN') || c === 'LEVEL_DATABASE_NOT_OPEN')) {
    return new StoreError('STORE_CLOSED', `the store at ${dir} is closed`, details, { cause: err });
  }
  return new StoreError('IO_ERROR', `LevelDB ${op} failed in ${dir}: ${engineMessage}`, details, { cause: err });
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

// ---------------------------------------------------------------------------------------------
// Offline verification of a LevelDB 1.20 directory (formats: leveldb/doc/log_format.md,
// table_format.md; version_edit.cc). Read-only. Used before LevelDB opens the directory.

export interface LevelVerifyReport {
  /** The MANIFEST CURRENT names, or null for a directory with no database yet. */
  readonly manifest: string | null;
  readonly tables: number;
  readonly tableBytes: number;
  readonly logs: number;
  readonly logBytes: number;
  /** Empty when nothing is wrong. One line per finding, naming the file and offset. */
  readonly problems: readonly string[];
}

/**
 * `tables: 'blocks'` checks every block's CRC (reads every live table once); `'sizes'` checks only
 * that each live table exists with the MANIFEST's size and a valid footer.
 */
export async function verifyLevelDir(dir: string, opts: { tables: 'blocks' | 'sizes' } = { tables: 'blocks' }): Promise<LevelVerifyReport> {
  const problems: string[] = [];
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { manifest: null, tables: 0, tableBytes: 0, logs: 0, logBytes: 0, problems };
    throw ioError('cannot list the store directory', dir, e);
  }
  if (!names.includes('CURRENT')) {
    problems.push(...(await dataWithoutCurrent(dir, names)));
    return { manifest: null, tables: 0, tableBytes: 0, logs: 0, logBytes: 0, problems };
  }
  const current = (await readOrIoError(dir, 'CURRENT')).toString('latin1');
  if (!/^MANIFEST-\d+\n$/.test(current)) {
    problems.push(`CURRENT does not name a MANIFEST: ${JSON.stringify(current.slice(0, 40))}`);
    return { manifest: null, tables: 0, tableBytes: 0, logs: 0, logBytes: 0, problems };
  }
  const manifestName = current.slice(0, -1);
  const manifestBuf = await readOrNull(dir, manifestName);
  if (manifestBuf === null) {
    problems.push(`${manifestName} (named by CURRENT) is missing`);
    return { manifest: manifestName, tables: 0, tableBytes: 0, logs: 0, logBytes: 0, problems };
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
  const { logNumber, prevLogNumber } = m;

  let tableBytes = 0;
  for (const [num, size] of live) {
    const base = String(num).padStart(6, '0');
    // LevelDB 1.20 writes .ldb and still reads the legacy .sst name.
    let name = `${base}.ldb`;
    let buf = await readOrNull(dir, name, opts.tables === 'sizes');
    if (buf === null) {
      name = `${base}.sst`;
      buf = await readOrNull(dir, name, opts.tables === 'sizes');
    }
    if (buf === null) {
      problems.push(`table ${base}.ldb listed in ${manifestName} is missing`);
      continue;
    }
    tableBytes += size;
    const actualSize = opts.tables === 'sizes' ? (buf as TailRead).fileSize : buf.length;
    if (actualSize !== size) {
      problems.push(`${name}: size ${actualSize}, ${manifestName} says ${size}`);
      continue;
    }
    if (opts.tables === 'sizes') verifyFooter(buf, name, problems);
    else verifyTable(buf, name, problems);
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
  return { manifest: manifestName, tables: live.size, tableBytes, logs, logBytes, problems };
}

/**
 * What a directory without CURRENT holds that a new database would lose (LevelDB would silently
 * start one over it): its tables and logs, and any MANIFEST that lists tables or writes. Empty:
 * what a creation that stopped before writing CURRENT leaves (a MANIFEST of no data at most).
 * A MANIFEST's unreadable tail is ignored, as LevelDB ignores one: such a creation may leave it.
 */
async function dataWithoutCurrent(dir: string, names: readonly string[]): Promise<string[]> {
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

/** The file, or null if it does not exist. With `footerOnly`, its last 48 bytes and its size. */
async function readOrNull(dir: string, name: string, footerOnly = false): Promise<Buffer | null> {
  const path = join(dir, name);
  try {
    if (!footerOnly) return await readFile(path);
    const fh = await open(path, 'r');
    try {
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
function readLogRecords(buf: Buffer, name: string, problems: string[]): Buffer[] {
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

interface ManifestState {
  /** Live table files: number → size. */
  readonly live: Map<number, number>;
  logNumber: number;
  prevLogNumber: number;
  lastSequence: number;
}

function newManifestState(): ManifestState {
  return { live: new Map(), logNumber: 0, prevLogNumber: 0, lastSequence: 0 };
}

function applyVersionEdit(rec: Uint8Array, m: ManifestState): string | null {
  const c = new Cursor(rec);
  try {
    while (!c.done) {
      const tag = c.varint();
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
  let current: string;
  try {
    names = await readdir(dir);
    current = (await readFile(join(dir, 'CURRENT'))).toString('latin1');
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
  const manifest = await readFile(join(dir, current.trim())).catch(() => null);
  if (manifest === null) return null;
  const m = newManifestState();
  for (const rec of readLogRecords(manifest, current.trim(), problems)) if (applyVersionEdit(rec, m) !== null) return null;
  return problems.length > 0 ? null : Math.max(newest, m.lastSequence);
}

// --- Table files ------------------------------------------------------------------------------

const FOOTER_LEN = 48;
const TABLE_MAGIC_LO = 0x8b80fb57;
const TABLE_MAGIC_HI = 0xdb477524;
const BLOCK_TRAILER = 5;

interface Handle {
  readonly offset: number;
  readonly size: number;
}

function verifyFooter(buf: Buffer, name: string, problems: string[]): { meta: Handle; index: Handle } | null {
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

function verifyTable(buf: Buffer, name: string, problems: string[]): void {
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
