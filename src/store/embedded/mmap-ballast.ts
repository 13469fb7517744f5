/**
 * The mmap ballast: makes LevelDB read the store's table files with `pread` into its bounded block
 * cache instead of mapping them, so that every table can stay open without the RSS growing with
 * the database.
 *
 * Why: LevelDB 1.20 (as classic-level builds it) opens a table file with `mmap` while fewer than
 * 1 000 are mapped — a limit compiled into its POSIX Env and shared by every database of the
 * process — and with `pread` after that. No option turns mapping off. Pages of a mapped table that
 * were read (and their neighbours, by the kernel's fault-around) count in the RSS for as long as the
 * table stays open. So the engine had to choose: keep few tables open (`maxOpenFiles` 100: 90
 * slots, which LevelDB splits into 16 LRU shards of 6, so tables are evicted long before the
 * database has 90) and let point reads reopen tables (110–128 µs a read instead of 5–10,
 * BENCHMARKS.md), or keep them all open and let mapped pages fill the RSS (the web index at
 * 100 000 documents: 1 115 MiB, 459 of them mapped tables).
 *
 * How: before the first store opens, the process opens throwaway databases holding 1 000 tiny
 * tables (~4 KiB each: 64 KiB of zeros compressed), which LevelDB maps as it writes them and keeps
 * open in their table caches. From then on every table any store opens is read with `pread`, and
 * `openLevelEngine` keeps up to 1 000 tables open. The ballast's directory is deleted as soon as it
 * is built (Linux keeps unlinked mapped files alive, and LevelDB never reopens them: nothing is
 * written to or read from them again); what a process killed during the build leaves behind is
 * swept by the next build.
 *
 * Invariants and contract:
 * - Once per process (a module-level promise; concurrent callers share it). A worker thread loads
 *   its own copy of this module, and the ballast it builds finds the slots taken: its tables use
 *   `pread` too, which costs ~0.5 s and nothing else.
 * - Only speed and memory depend on it, never correctness: if it cannot be built (no writable
 *   temporary directory, a platform whose LevelDB does not map), the result says so and the engine
 *   falls back to its bounded table cache.
 * - Tables a store opened before the ballast existed stay mapped until LevelDB closes them; the
 *   engine therefore builds it before opening any database.
 * Built in ~0.5 s, mostly LevelDB's memtable flushes (ten databases of 101 tables rather than one
 * of 1 010: LevelDB lists its directory after every flush, and one directory of 1 000 tables took
 * ~1.5× as long). Costs ~4 MiB of shared memory (`/dev/shm`) or temporary disk, freed when the
 * process exits.
 */
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ClassicLevel } from 'classic-level';
import { pidAlive } from '../../util/pid-alive.js';

/** LevelDB 1.20's compiled-in limit of mapped read-only files per process (env_posix.cc). */
export const LEVELDB_MMAP_LIMIT = 1000;
const PREFIX = 'percolator-mmap-ballast-';
const SHARDS = 10;
const TABLES_PER_SHARD = LEVELDB_MMAP_LIMIT / SHARDS;
/** LevelDB's smallest memtable: a put of more than this many bytes fills one, and the next flushes it. */
const WRITE_BUFFER = 64 * 1024;
/** How long the last flushes may take before the ballast is declared partial. */
const FLUSH_WAIT_MS = 10_000;

export interface MmapBallast {
  /** Tables of the ballast LevelDB wrote (and mapped, unless slots were taken before it). */
  readonly tables: number;
  /** Of those, mapped by this process (read from `/proc/self/maps`); null where it cannot be read. */
  readonly mapped: number | null;
  readonly ms: number;
}

let held: Promise<MmapBallast | null> | null = null;

/**
 * Builds the ballast once per process (see the header).
 * Returns: what it holds, or null if it could not be built or holds fewer tables than the limit
 * (the caller then keeps few tables open).
 * Throws: never. Idempotent: later calls return the first call's result.
 */
export function holdMmapSlots(): Promise<MmapBallast | null> {
  held ??= build().catch(() => null);
  return held;
}

async function build(): Promise<MmapBallast | null> {
  if (process.platform !== 'linux') return null; // the limit is POSIX Env's; other builds differ
  const t0 = performance.now();
  const dir = await makeDir();
  try {
    const value = Buffer.alloc(WRITE_BUFFER);
    const shards = await Promise.all(
      Array.from({ length: SHARDS }, async (_, i) => {
        const db = new ClassicLevel<Uint8Array, Uint8Array>(join(dir, String(i)), {
          keyEncoding: 'view',
          valueEncoding: 'view',
          writeBufferSize: WRITE_BUFFER,
          // Every table must stay in the table cache (closing one frees its slot). LevelDB splits
          // the cache into 16 LRU shards of capacity/16 each, filled unevenly by hash: with room
          // for only 110 tables, ~12 of 101 were evicted.
          maxOpenFiles: LEVELDB_MMAP_LIMIT,
          cacheSize: 64 * 1024,
          compression: true,
        });
        await db.open();
        // Ascending keys: each flushed memtable overlaps nothing and goes to level 2, whose size
        // limit (100 MiB) these ~400 KiB never reach, so no compaction ever merges them. Every put
        // after the first switches the memtable holding the one before it to a table (and waits
        // for the previous switch's flush): TABLES_PER_SHARD + 2 puts, TABLES_PER_SHARD + 1 tables.
        for (let k = 0; k < TABLES_PER_SHARD + 2; k++) await db.put(Buffer.from(`k${String(k).padStart(6, '0')}`), value);
        return db;
      }),
    );
    const tables = await flushedTables(shards);
    // With at least as many tables as the limit, the slots are all taken whatever was mapped
    // before (only what this process mapped earlier is not ours, and it stays bounded).
    if (tables < LEVELDB_MMAP_LIMIT) return null;
    return { tables, mapped: await mappedUnder(dir), ms: Math.round(performance.now() - t0) };
  } finally {
    // The databases stay open for the life of the process; their files are no longer needed.
    await rm(dir, { recursive: true, force: true });
  }
}

/** A fresh directory in shared memory (no disk writes, no fsync cost) or else the temporary one. */
async function makeDir(): Promise<string> {
  for (const parent of (await isDirectory('/dev/shm')) ? ['/dev/shm', tmpdir()] : [tmpdir()]) {
    await sweepAbandoned(parent);
    const dir = await mkdtemp(join(parent, `${PREFIX}${process.pid}-`)).catch(() => null);
    if (dir !== null) return dir;
  }
  throw new Error('no writable directory for the mmap ballast');
}

/** Waits (polling, bounded) until every shard's last flush has landed; the number of tables then. */
async function flushedTables(shards: readonly ClassicLevel<Uint8Array, Uint8Array>[]): Promise<number> {
  const count = (): number => shards.reduce((n, db) => n + Number(db.getProperty('leveldb.num-files-at-level2')), 0);
  const deadline = performance.now() + FLUSH_WAIT_MS;
  let n = count();
  while (n < SHARDS * (TABLES_PER_SHARD + 1) && performance.now() < deadline) {
    await delay(2); // polling the condition: LevelDB offers no flush event
    n = count();
  }
  return n;
}

async function mappedUnder(dir: string): Promise<number | null> {
  const maps = await readFile('/proc/self/maps', 'utf8').catch(() => null);
  if (maps === null) return null;
  let n = 0;
  for (const line of maps.split('\n')) if (line.includes(dir) && line.includes('.ldb')) n++;
  return n;
}

/**
 * Removes what processes killed while building their ballast left (the name carries the pid; a
 * pid that is alive again is left alone).
 */
async function sweepAbandoned(parent: string): Promise<void> {
  const names = await readdir(parent).catch(() => [] as string[]);
  for (const name of names) {
    const pid = Number(/^percolator-mmap-ballast-(\d+)-/.exec(name)?.[1] ?? NaN);
    if (!Number.isInteger(pid) || pidAlive(pid)) continue;
    await rm(join(parent, name), { recursive: true, force: true }).catch(() => undefined);
  }
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
