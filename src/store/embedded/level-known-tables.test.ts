/**
 * Known tables (level-known-tables.ts) and the incremental verification built on them: an open
 * reads whole only the tables it has no record of, plus a rotating share of the rest, and what it
 * skips is exactly what a record vouches for.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { afterEach, describe, expect, it } from 'vitest';
import { isStoreError } from '../errors.js';
import type { KvOp } from '../kv-engine.js';
import { type LevelEngine, type LevelEngineOptions, openLevelEngine } from './level-engine.js';
import { FOOTER_LEN } from './level-format.js';
import { KNOWN_TABLES_FILE, type KnownTable, pickRechecks, readKnownTables, writeKnownTables } from './level-known-tables.js';
import { liveTables, tableFooterCrc } from './level-verify.js';

const dirs: string[] = [];
const engines: LevelEngine[] = [];
/** Small memtables and files: a store of many tables. */
const SMALL: LevelEngineOptions = { writeBufferSize: 64 * 1024, maxFileSize: 256 * 1024, compression: false, mmapBallast: false };

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'known-tables-'));
  dirs.push(d);
  return d;
}

async function open(dir: string, options: LevelEngineOptions = {}): Promise<LevelEngine> {
  const e = await openLevelEngine(dir, { ...SMALL, ...options });
  engines.push(e);
  return e;
}

async function fill(e: LevelEngine, rows: number, prefix: string): Promise<void> {
  const ops: KvOp[] = [];
  for (let i = 0; i < rows; i++)
    ops.push({ type: 'put', key: Buffer.from(`${prefix}${String(i).padStart(6, '0')}`), value: randomBytes(120) });
  for (let i = 0; i < ops.length; i += 1000) await e.write(ops.slice(i, i + 1000));
}

/** A closed store of several tables, written by one clean session. */
async function storeDir(): Promise<string> {
  const dir = tempDir();
  const e = await open(dir);
  await fill(e, 12_000, 'a');
  await e.close();
  return dir;
}

async function live(dir: string): Promise<ReadonlyMap<number, number>> {
  const t = await liveTables(dir);
  if (t === null) throw new Error(`no MANIFEST readable in ${dir}`);
  return t;
}

const tableName = (num: number): string => `${String(num).padStart(6, '0')}.ldb`;

function flipByte(path: string, at: number): void {
  const buf = readFileSync(path);
  buf[at] = (buf[at] as number) ^ 0x5a;
  writeFileSync(path, buf);
}

afterEach(async () => {
  for (const e of engines.splice(0)) await e.close().catch(() => undefined);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('pickRechecks', () => {
  const known = (size: number, since: number): KnownTable => ({ size, footerCrc: 0, since });
  const liveSet = new Map([
    [1, 100],
    [2, 100],
    [3, 100],
    [4, 100],
  ]);

  it('reads every table without a record, or recorded at another size, whatever the budget', () => {
    const k = new Map([
      [1, known(100, 5)],
      [2, known(99, 5)],
    ]);
    expect([...pickRechecks(liveSet, k, 0)].sort()).toEqual([2, 3, 4]);
  });

  it('then known tables, the oldest check first, within the budget', () => {
    const k = new Map([
      [1, known(100, 30)],
      [2, known(100, 10)],
      [3, known(100, 20)],
      [4, known(100, 40)],
    ]);
    expect([...pickRechecks(liveSet, k, 0)]).toEqual([]);
    expect([...pickRechecks(liveSet, k, 250)]).toEqual([2, 3]);
    expect([...pickRechecks(liveSet, k, 1000)].sort()).toEqual([1, 2, 3, 4]);
    // A table larger than the whole budget is still read when its turn comes.
    expect([...pickRechecks(liveSet, k, 1)]).toEqual([2]);
    // Unknown tables use the budget up first.
    expect([...pickRechecks(new Map([...liveSet, [5, 200]]), k, 250)].sort()).toEqual([2, 5]);
  });
});

describe('the known tables file', () => {
  it('round-trips, and a torn, damaged or foreign file reads as no record at all', async () => {
    const dir = tempDir();
    const tables = new Map<number, KnownTable>([
      [7, { size: 2 ** 40 + 3, footerCrc: 0xdeadbeef, since: 1_764_000_000_123.5 }],
      [900_001, { size: 48, footerCrc: 0, since: 0 }],
    ]);
    await writeKnownTables(dir, tables);
    expect(await readKnownTables(dir)).toEqual(tables);
    const path = join(dir, KNOWN_TABLES_FILE);
    const good = readFileSync(path);
    for (const bad of [good.subarray(0, good.length - 1), Buffer.concat([good, Buffer.alloc(1)]), Buffer.from('{"7":1}')]) {
      writeFileSync(path, bad);
      expect((await readKnownTables(dir)).size).toBe(0);
    }
    for (const at of [0, 5, 13, good.length - 1]) {
      writeFileSync(path, good);
      flipByte(path, at);
      expect((await readKnownTables(dir)).size, `byte ${at}`).toBe(0);
    }
    rmSync(path);
    expect((await readKnownTables(dir)).size).toBe(0);
  });
});

describe('incremental verification', () => {
  it('an open after a clean close reads no table whole: the close recorded what its LevelDB wrote', async () => {
    const dir = await storeDir();
    const tables = await live(dir);
    expect(tables.size).toBeGreaterThan(3);
    expect([...(await readKnownTables(dir)).keys()].sort()).toEqual([...tables.keys()].sort());
    const e = await open(dir, { recheckBytes: 0 });
    expect(e.stats().tablesVerified).toBe(0);
    await e.close();
    // (The open's recovery may have written a table of the log's writes.)
    const now = await live(dir);
    const full = await open(dir, { verify: 'full' });
    expect(full.stats().tablesVerified).toBe(now.size);
  });

  it('tables written by anything but a clean close of the engine (a killed process, another tool) are read whole', async () => {
    const dir = await storeDir();
    const before = await live(dir);
    // LevelDB without the engine: what a process killed before its close leaves, as far as the
    // record goes (no close added its tables).
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', writeBufferSize: 64 * 1024 });
    await db.open();
    for (let i = 0; i < 12_000; i += 1000)
      await db.batch(
        Array.from({ length: 1000 }, (_, j) => ({ type: 'put' as const, key: Buffer.from(`b${i + j}`), value: randomBytes(120) })),
      );
    await db.close();
    const now = await live(dir);
    const fresh = [...now.keys()].filter((n) => !before.has(n));
    expect(fresh.length).toBeGreaterThan(0);
    const e = await open(dir, { recheckBytes: 0 });
    expect(e.stats().tablesVerified).toBe(fresh.length);
    expect(e.stats().tableBytesVerified).toBe(fresh.reduce((sum, n) => sum + (now.get(n) as number), 0));
  });

  it('a known table whose footer changed is another file: read whole', async () => {
    const dir = await storeDir();
    const [num] = [...(await live(dir)).keys()];
    const path = join(dir, tableName(num as number));
    // The footer's padding (between its two block handles and the magic number): LevelDB ignores
    // it, so the file stays valid, but it is not the file that was recorded.
    flipByte(path, statSync(path).size - 9);
    const e = await open(dir, { recheckBytes: 0 });
    expect(e.stats().tablesVerified).toBe(1);
  });

  it("with verify 'logs', such a table is not read but no longer known: the next incremental open reads it", async () => {
    const dir = await storeDir();
    const [num] = [...(await live(dir)).keys()];
    const path = join(dir, tableName(num as number));
    flipByte(path, statSync(path).size - 9);
    const logs = await open(dir, { verify: 'logs' });
    expect(logs.stats().tablesVerified).toBe(0);
    await logs.close();
    expect((await readKnownTables(dir)).has(num as number)).toBe(false);
    const e = await open(dir, { recheckBytes: 0 });
    expect(e.stats().tablesVerified).toBe(1);
  });

  it('a damaged record file is no record: every table is read', async () => {
    const dir = await storeDir();
    flipByte(join(dir, KNOWN_TABLES_FILE), 20);
    const tables = await live(dir);
    const e = await open(dir, { recheckBytes: 0 });
    expect(e.stats().tablesVerified).toBe(tables.size);
  });

  it('damage to a known table at rest: found by the default budget, by verify full, and over opens by a small budget', async () => {
    const dir = await storeDir();
    const tables = await live(dir);
    const total = [...tables.values()].reduce((a, b) => a + b, 0);
    const [num] = [...tables.keys()].slice(-1);
    const path = join(dir, tableName(num as number));
    const pristine = readFileSync(path);
    flipByte(path, Math.floor(pristine.length / 2));
    const corrupted = async (options: LevelEngineOptions): Promise<boolean> => {
      try {
        await (await open(dir, options)).close();
        return false;
      } catch (e) {
        if (!isStoreError(e, 'DATA_CORRUPTED')) throw e;
        expect((e as Error).message).toContain(tableName(num as number));
        return true;
      }
    };
    // The default budget (32 MiB) covers this whole store at every open.
    expect(await corrupted({})).toBe(true);
    expect(await corrupted({ verify: 'full' })).toBe(true);
    // The cost of reading only new tables: with no budget, the damage goes unseen by the open
    // (docs/durability.md says what then catches what).
    writeFileSync(path, pristine);
    await (await open(dir, { recheckBytes: 0 })).close();
    flipByte(path, Math.floor(pristine.length / 2));
    expect(await corrupted({ recheckBytes: 0 })).toBe(false);
    // A budget of about one table a time reaches every table within as many opens as it takes.
    const budget = Math.ceil(total / tables.size);
    let opens = 1;
    while (!(await corrupted({ recheckBytes: budget }))) {
      opens++;
      expect(opens, 'opens before the damaged table was read again').toBeLessThanOrEqual(tables.size + 1);
    }
  });

  it('the record keeps only live tables, and each entry matches its file', async () => {
    const dir = await storeDir();
    const e = await open(dir);
    // Overwrites: compactions replace tables, and the replaced ones leave the record.
    await fill(e, 12_000, 'a');
    await fill(e, 12_000, 'a');
    await e.close();
    const tables = await live(dir);
    const known = await readKnownTables(dir);
    expect([...known.keys()].sort()).toEqual([...tables.keys()].sort());
    for (const [num, k] of known) {
      expect(k.size).toBe(tables.get(num));
      expect(await tableFooterCrc(dir, num, k.size)).toBe(k.footerCrc);
      expect(readFileSync(join(dir, tableName(num))).subarray(-FOOTER_LEN).length).toBe(FOOTER_LEN);
    }
  });
});
