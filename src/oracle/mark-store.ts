/**
 * The oracle's durable high-water mark (Percolator §2.3): the largest timestamp the oracle may
 * have handed out. The oracle saves a new mark BEFORE it hands out any timestamp above the old
 * one, and after a restart starts strictly above the loaded mark.
 *
 * Invariants every `MarkStore` keeps:
 * - `save(upper)` resolves only once `upper` is durable (survives kill -9 and power loss as far
 *   as fsync / the store's durability go).
 * - `load()` returns the last saved mark, 0 when none was ever saved, and REJECTS with
 *   ORACLE_MARK_CORRUPTED when the stored mark cannot be read back exactly: a corrupted mark is
 *   never treated as 0 (that would restart the oracle below timestamps it already handed out).
 * - Concurrency: the oracle calls `save` one at a time (never two saves in flight) with
 *   increasing values; implementations reject a decreasing save.
 *
 * Record format (file and store alike), one ASCII line:
 *   `percolator-oracle-mark v1 <mark decimal> <crc32 of the text before the space, 8 hex>\n`
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { crc32 } from 'node:zlib';
import { ensureTable } from '../store/ensure-table.js';
import type { Store } from '../store/store.js';
import { OracleError } from './errors.js';
import { checkFileMarkStore, checkMemoryMark, checkStoreMarkStore } from './oracle-options.js';
import { makeDirs } from '../util/make-dirs.js';
import { pidAlive } from '../util/pid-alive.js';

export interface MarkStore {
  /** The last durable mark, 0 if none was ever saved. Rejects ORACLE_MARK_CORRUPTED / _IO / _LOCKED. */
  load(): Promise<number>;
  /** Durably records `upper` (> the previous mark). Resolves only once durable. */
  save(upper: number): Promise<void>;
  /** Releases locks and handles. Optional; idempotent. */
  close?(): Promise<void>;
  /** For messages and status: where the mark lives. */
  readonly description: string;
}

const MAGIC = 'percolator-oracle-mark v1';

export function encodeMark(mark: number): string {
  const body = `${MAGIC} ${mark}`;
  return `${body} ${crc32(body).toString(16).padStart(8, '0')}\n`;
}

/** Parses a record; throws ORACLE_MARK_CORRUPTED with the evidence if it is not exactly valid. */
export function decodeMark(text: string, where: string): number {
  const m = /^(percolator-oracle-mark v1 (\d{1,16})) ([0-9a-f]{8})\n$/.exec(text);
  const evidence = { where, content: text.length > 120 ? `${text.slice(0, 120)}…` : text, bytes: text.length };
  if (!m) throw new OracleError('ORACLE_MARK_CORRUPTED', `oracle mark at ${where} is not a valid mark record`, evidence);
  const expected = crc32(m[1]).toString(16).padStart(8, '0');
  if (expected !== m[3]) {
    throw new OracleError('ORACLE_MARK_CORRUPTED', `oracle mark at ${where} fails its checksum`, {
      ...evidence,
      expectedCrc: expected,
      foundCrc: m[3],
    });
  }
  const mark = Number(m[2]);
  if (!Number.isSafeInteger(mark)) {
    throw new OracleError('ORACLE_MARK_CORRUPTED', `oracle mark at ${where} is not a safe integer`, evidence);
  }
  return mark;
}

function checkSave(upper: number, previous: number, where: string): void {
  if (!Number.isSafeInteger(upper) || upper <= 0) {
    throw new OracleError('ORACLE_MARK_IO', `refusing to save invalid oracle mark ${upper} to ${where}`, { upper, where });
  }
  if (upper < previous) {
    throw new OracleError('ORACLE_MARK_IO', `refusing to lower the oracle mark at ${where} from ${previous} to ${upper}`, {
      upper,
      previous,
      where,
    });
  }
}

/** In-memory mark: tests, and an in-process oracle that need not survive its process. */
export class MemoryMarkStore implements MarkStore {
  readonly description = 'memory';
  /** Every saved mark, in order (tests inspect it). */
  readonly saves: number[] = [];
  constructor(private mark = 0) {
    checkMemoryMark(mark);
  }
  async load(): Promise<number> {
    return this.mark;
  }
  async save(upper: number): Promise<void> {
    checkSave(upper, this.mark, this.description);
    this.mark = upper;
    this.saves.push(upper);
  }
  get current(): number {
    return this.mark;
  }
}

export interface FileMarkStoreOptions {
  /**
   * Take `<file>.lock` (pid + token; a lock whose pid is dead is reclaimed) so two live oracles
   * can never share one mark. Default true.
   */
  readonly lock?: boolean;
}

/**
 * A mark in one small file, replaced atomically: write `<file>.tmp`, fsync it, rename over
 * `<file>`, fsync the directory. The rename is atomic, so the file always holds a complete old or
 * new record; a torn or edited file fails its checksum and is reported.
 */
export class FileMarkStore implements MarkStore {
  readonly file: string;
  readonly description: string;
  private readonly lockFile: string;
  private readonly useLock: boolean;
  private lockToken: string | null = null;
  private last = 0;
  private loaded = false;
  private closed = false;

  constructor(file: string, options: FileMarkStoreOptions = {}) {
    checkFileMarkStore(file, options);
    this.file = path.resolve(file);
    this.description = `file:${this.file}`;
    this.lockFile = `${this.file}.lock`;
    this.useLock = options.lock ?? true;
  }

  async load(): Promise<number> {
    this.assertOpen();
    await makeDirs(path.dirname(this.file)).catch((e: unknown) => {
      throw this.ioError('create the directory of', e);
    });
    if (this.useLock && this.lockToken === null) await this.acquireLock();
    let text: string;
    try {
      text = await fsp.readFile(this.file, 'latin1');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        this.last = 0;
        this.loaded = true;
        return 0;
      }
      throw this.ioError('read', e);
    }
    this.last = decodeMark(text, this.file);
    this.loaded = true;
    return this.last;
  }

  async save(upper: number): Promise<void> {
    this.assertOpen();
    if (!this.loaded) await this.load();
    checkSave(upper, this.last, this.file);
    const tmp = `${this.file}.tmp`;
    try {
      const fh = await fsp.open(tmp, 'w');
      try {
        await fh.writeFile(encodeMark(upper), 'latin1');
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.rename(tmp, this.file);
      const dir = await fsp.open(path.dirname(this.file), 'r');
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
    } catch (e) {
      throw this.ioError('write', e);
    }
    this.last = upper;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.lockToken === null) return;
    const token = this.lockToken;
    this.lockToken = null;
    try {
      const content = await fsp.readFile(this.lockFile, 'utf8');
      if (content.trim().endsWith(token)) await fsp.unlink(this.lockFile);
    } catch {
      // The lock file is gone already: nothing to release.
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new OracleError('ORACLE_CLOSED', `mark store ${this.file} is closed`, { file: this.file });
  }

  private async acquireLock(): Promise<void> {
    const token = randomBytes(8).toString('hex');
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await fsp.writeFile(this.lockFile, `${process.pid} ${token}\n`, { flag: 'wx' });
        this.lockToken = token;
        return;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw this.ioError('create the lock', e);
      }
      let holder = '';
      try {
        holder = await fsp.readFile(this.lockFile, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // released meanwhile: retry
        throw this.ioError('read the lock', e);
      }
      const pid = Number(holder.split(' ')[0]);
      if (Number.isSafeInteger(pid) && pid > 0 && pidAlive(pid)) {
        throw new OracleError('ORACLE_MARK_LOCKED', `oracle mark ${this.file} is held by live process ${pid}`, {
          file: this.file,
          lockFile: this.lockFile,
          pid,
        });
      }
      // The holder is dead (kill -9, crash) or the lock is unreadable garbage: reclaim it.
      await fsp.unlink(this.lockFile).catch(() => undefined);
    }
    throw new OracleError('ORACLE_MARK_LOCKED', `could not take the lock ${this.lockFile}`, { file: this.file });
  }

  private ioError(what: string, e: unknown): OracleError {
    if (e instanceof OracleError) return e;
    const code = (e as NodeJS.ErrnoException)?.code;
    return new OracleError(
      'ORACLE_MARK_IO',
      `cannot ${what} oracle mark file ${this.file}: ${(e as Error)?.message ?? e}`,
      {
        file: this.file,
        errno: code,
      },
      { cause: e },
    );
  }
}

export interface StoreMarkStoreOptions {
  /** Default `_percolator_oracle`. Created on first use (family `m`, one version kept). */
  readonly table?: string;
  /** Default `mark`. Several oracles (deployments) may share a table with distinct rows. */
  readonly row?: string;
}

const FAMILY = 'm';
const QUALIFIER = new TextEncoder().encode('upper');
/** The token of the oracle that opened the mark last (the row's owner). */
const OWNER = new TextEncoder().encode('owner');

/**
 * A mark in one cell of a Store table (the Store resolves a write only once it is durable).
 *
 * One oracle per row, fenced: `load()` first writes a fresh owner token into the row, then reads
 * the mark; every `save` is a conditional mutation that applies only while the row still holds
 * this store's token. An oracle that opened the mark later (another process pointed at the same
 * store — a second server, a tool with an oracle of its own — or a restart after kill -9, which
 * must not wait for the dead) takes it over, and the earlier one's next save is refused with
 * ORACLE_MARK_LOCKED: it hands out what it had reserved and then nothing. No timestamp is handed
 * out twice either way: the later oracle starts above the mark it read after taking the row, and
 * no save of the earlier one can land after that. (Unfenced, each overwrote the other's mark — a
 * lower one when its clock was behind — and a restart could hand out timestamps again.) A save
 * whose reply was lost leaves the token in place, so it costs nothing but its retry.
 */
export class StoreMarkStore implements MarkStore {
  readonly description: string;
  private readonly table: string;
  private readonly row: Uint8Array;
  private last = 0;
  private loaded = false;
  private tableReady = false;
  /** Written by `load()`; saves apply only while the row holds it. */
  private readonly token = new TextEncoder().encode(randomBytes(12).toString('hex'));

  constructor(
    private readonly store: Store,
    options: StoreMarkStoreOptions = {},
  ) {
    checkStoreMarkStore(store, options);
    this.table = options.table ?? '_percolator_oracle';
    this.row = new TextEncoder().encode(options.row ?? 'mark');
    this.description = `store:${store.url}/${this.table}/${options.row ?? 'mark'}`;
  }

  async load(): Promise<number> {
    await this.ensureTable();
    try {
      // Taken before the read: no save of an earlier owner lands after the mark is read.
      await this.store.mutateRow(this.table, this.row, [
        { deleteFromColumn: { familyName: FAMILY, columnQualifier: OWNER } },
        { setCell: { familyName: FAMILY, columnQualifier: OWNER, timestampMicros: 0, value: this.token } },
      ]);
    } catch (e) {
      throw this.ioError('take over', e);
    }
    let row: Awaited<ReturnType<Store['readRow']>>;
    try {
      row = await this.store.readRow(this.table, this.row);
    } catch (e) {
      throw this.ioError('read', e);
    }
    const cell = row?.cells.find((c) => c.family === FAMILY && Buffer.from(c.qualifier).equals(Buffer.from(QUALIFIER)));
    this.last = cell === undefined ? 0 : decodeMark(Buffer.from(cell.value).toString('latin1'), this.description);
    this.loaded = true;
    return this.last;
  }

  async save(upper: number): Promise<void> {
    if (!this.loaded) await this.load();
    checkSave(upper, this.last, this.description);
    let owned: boolean;
    try {
      owned = await this.store.checkAndMutateRow(this.table, this.row, {
        predicateFilter: {
          chain: [
            { familyNameRegexFilter: FAMILY },
            { columnQualifierRegexFilter: OWNER },
            { valueRangeFilter: { startValueClosed: this.token, endValueClosed: this.token } },
          ],
        },
        trueMutations: [
          { deleteFromColumn: { familyName: FAMILY, columnQualifier: QUALIFIER } },
          {
            setCell: {
              familyName: FAMILY,
              columnQualifier: QUALIFIER,
              timestampMicros: 0,
              value: Buffer.from(encodeMark(upper), 'latin1'),
            },
          },
        ],
      });
    } catch (e) {
      throw this.ioError('write', e);
    }
    if (!owned) {
      throw new OracleError(
        'ORACLE_MARK_LOCKED',
        `another oracle opened the mark at ${this.description} after this one: two oracles must not share a mark (one per deployment); this one hands out no timestamp above ${this.last}`,
        { where: this.description, mark: this.last, refused: upper },
      );
    }
    this.last = upper;
  }

  private async ensureTable(): Promise<void> {
    if (this.tableReady) return;
    try {
      await ensureTable(this.store, this.table, { families: { [FAMILY]: { gcRule: { maxNumVersions: 1 } } } });
    } catch (e) {
      throw this.ioError('create the table of', e);
    }
    this.tableReady = true;
  }

  private ioError(what: string, e: unknown): OracleError {
    if (e instanceof OracleError) return e;
    return new OracleError(
      'ORACLE_MARK_IO',
      `cannot ${what} oracle mark ${this.description}: ${(e as Error)?.message ?? e}`,
      {
        where: this.description,
        storeCode: (e as { code?: unknown })?.code,
      },
      { cause: e },
    );
  }
}
