/**
 * The mmap ballast (mmap-ballast.ts): once it holds LevelDB's mapping slots, a store's table files
 * are read without being mapped, so the RSS does not grow with the tables kept open. The control
 * runs LevelDB in a process without the ballast, where the same reads map the tables: proof that
 * reading /proc/self/maps sees the difference. Vitest runs each test file in its own process
 * (`pool: 'forks'`), so this file's first open builds the process's ballast.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { KvOp } from '../kv-engine.js';
import { openLevelEngine } from './level-engine.js';
import { LEVELDB_MMAP_LIMIT, holdMmapSlots } from './mmap-ballast.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'mmap-ballast-'));
  dirs.push(d);
  return d;
}

/** Lines of /proc/self/maps (of `pid`) naming a table file under `dir`. */
function mappedTables(dir: string, pid: number | 'self' = 'self'): number {
  return readFileSync(`/proc/${pid}/maps`, 'utf8')
    .split('\n')
    .filter((l) => l.includes(dir) && l.includes('.ldb')).length;
}

const tableFiles = (dir: string): number => readdirSync(dir).filter((f) => f.endsWith('.ldb')).length;
const key = (i: number): Buffer => Buffer.from(`row-${String(i).padStart(6, '0')}`);

describe.skipIf(process.platform !== 'linux')('mmap ballast', () => {
  it('holds every mapping slot, and a store then reads its tables without mapping them', async () => {
    const dir = tempDir();
    // Small memtables: the writes below flush into a few dozen table files.
    const engine = await openLevelEngine(dir, { writeBufferSize: 64 * 1024 });
    const ballast = await holdMmapSlots();
    expect(ballast).not.toBeNull();
    expect(ballast?.tables).toBeGreaterThanOrEqual(LEVELDB_MMAP_LIMIT);
    expect(ballast?.mapped).toBe(LEVELDB_MMAP_LIMIT);
    expect(await holdMmapSlots()).toBe(ballast); // once per process

    const values = new Map<number, Buffer>();
    for (let round = 0; round < 20; round++) {
      const ops: KvOp[] = [];
      for (let i = round * 200; i < (round + 1) * 200; i++) {
        const v = randomBytes(400);
        values.set(i, v);
        ops.push({ type: 'put', key: key(i), value: v });
      }
      await engine.write(ops);
    }
    await engine.close();
    const reopened = await openLevelEngine(dir);
    try {
      for (const [i, v] of values) expect(Buffer.from(reopened.get(key(i)) as Uint8Array).equals(v)).toBe(true);
      expect(tableFiles(dir)).toBeGreaterThan(3);
      expect(mappedTables(dir)).toBe(0);
    } finally {
      await reopened.close();
    }
    // The ballast's own files are gone from the file system (their mappings remain).
    for (const parent of ['/dev/shm', tmpdir()]) {
      expect(readdirSync(parent).filter((f) => f.startsWith(`percolator-mmap-ballast-${process.pid}-`))).toEqual([]);
    }
  });

  it('control: without the ballast, the same reads map the tables', async () => {
    const dir = tempDir();
    // A process of its own: this one's slots are taken. classic-level directly, as the engine opens it.
    const script = `
      import { ClassicLevel } from 'classic-level';
      const db = new ClassicLevel(${JSON.stringify(dir)}, { keyEncoding: 'view', valueEncoding: 'view', writeBufferSize: 65536, maxOpenFiles: 1000 });
      await db.open();
      const key = (i) => Buffer.from('row-' + String(i).padStart(6, '0'));
      for (let round = 0; round < 20; round++) {
        const b = db.batch();
        for (let i = round * 200; i < (round + 1) * 200; i++) b.put(key(i), Buffer.alloc(400, i % 251));
        await b.write();
      }
      for (let i = 0; i < 4000; i++) if (db.getSync(key(i)) === undefined) throw new Error('lost ' + i);
      console.log('read');
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: process.cwd(),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('read') && resolve());
        child.on('exit', (code) => reject(new Error(`child exited ${code}`)));
      });
      expect(tableFiles(dir)).toBeGreaterThan(3);
      expect(mappedTables(dir, child.pid as number)).toBeGreaterThan(0);
    } finally {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
  });
});
