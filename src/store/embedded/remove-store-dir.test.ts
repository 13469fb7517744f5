/**
 * Emptying a store's directory removes the store and nothing else: a directory holding anything
 * the store did not write, or a store some process has open, is left exactly as it was.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isStoreError } from '../errors.js';
import { openStore } from '../open-store.js';
import type { Store } from '../store.js';
import { lockHolder } from './level-lock.js';
import { type LockProbe, removeStoreDir } from './remove-store-dir.js';
import { isStoreEntry } from './store-files.js';

/** The lock probes this platform has (/proc/locks is Linux's). */
const probes: LockProbe[] = process.platform === 'linux' ? ['proc', 'open'] : ['open'];

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'remove-store-'));
  dirs.push(d);
  return d;
}

/** A closed `file:` store in `dir` holding one cell. */
async function storeWithData(dir: string): Promise<void> {
  const s = await openStore(`file:${dir}`);
  await s.createTable('t', { families: { f: {} } });
  await s.mutateRow('t', Buffer.from('r'), [
    { setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: -1, value: Buffer.from('v') } },
  ]);
  await s.close();
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
}

describe('removeStoreDir', () => {
  it('removes a closed store and keeps the directory; a store opened there afterwards is empty', async () => {
    const dir = tempDir();
    await storeWithData(dir);
    expect(readdirSync(dir).length).toBeGreaterThan(3);
    expect(await removeStoreDir(dir)).toBeGreaterThan(3);
    expect(existsSync(dir)).toBe(true);
    expect(readdirSync(dir)).toEqual([]);
    const s = await openStore(`file:${dir}`);
    try {
      expect(await s.listTables()).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('is a no-op for a directory that does not exist, and idempotent', async () => {
    const dir = join(tempDir(), 'absent');
    expect(await removeStoreDir(dir)).toBe(0);
    expect(existsSync(dir)).toBe(false);
    mkdirSync(dir);
    expect(await removeStoreDir(dir)).toBe(0);
  });

  it('refuses a directory holding anything the store did not write, and removes nothing', async () => {
    const dir = tempDir();
    await storeWithData(dir);
    writeFileSync(join(dir, 'thesis.txt'), 'years of work');
    const before = readdirSync(dir).sort();
    const e = await rejection(removeStoreDir(dir));
    expect(isStoreError(e, 'NOT_A_STORE')).toBe(true);
    expect((e as { details: { dir: string; foreign: string[] } }).details).toMatchObject({ dir, foreign: ['thesis.txt'] });
    expect(readdirSync(dir).sort()).toEqual(before);
    expect(readFileSync(join(dir, 'thesis.txt'), 'utf8')).toBe('years of work');
    // A folder of its own counts too.
    const other = tempDir();
    mkdirSync(join(other, 'src'));
    expect(isStoreError(await rejection(removeStoreDir(other)), 'NOT_A_STORE')).toBe(true);
    expect(existsSync(join(other, 'src'))).toBe(true);
  });

  it('refuses a path that is a file', async () => {
    const file = join(tempDir(), 'notes');
    writeFileSync(file, 'x');
    expect(isStoreError(await rejection(removeStoreDir(file)), 'NOT_A_STORE')).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('x');
  });

  it.each(probes)('refuses a store open in this process (probe %s): nothing removed, the store goes on working', async (probe) => {
    const dir = tempDir();
    await storeWithData(dir);
    const s: Store = await openStore(`file:${dir}`);
    try {
      const before = readdirSync(dir).sort();
      const e = await rejection(removeStoreDir(dir, probe));
      expect(isStoreError(e, 'STORE_LOCKED')).toBe(true);
      expect(readdirSync(dir).sort()).toEqual(before);
      const rows = [];
      for await (const r of s.readRows('t', {})) rows.push(r);
      expect(rows).toHaveLength(1);
    } finally {
      await s.close();
    }
  });

  it.each(probes)('refuses a store another process has open (probe %s)', async (probe) => {
    const dir = tempDir();
    await storeWithData(dir);
    // A child holding the directory as a store does: LevelDB's lock on LOCK.
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { ClassicLevel } from 'classic-level'; const db = new ClassicLevel(${JSON.stringify(dir)}); await db.open(); console.log('open'); process.stdin.resume(); process.stdin.on('end', async () => { await db.close(); process.exit(0); });`,
      ],
      { cwd: process.cwd(), stdio: ['pipe', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          if (d.toString().includes('open')) resolve();
        });
        child.on('exit', (code) => reject(new Error(`child exited ${code}`)));
      });
      if (probe === 'proc') expect(await lockHolder(dir)).toBe(child.pid);
      const e = await rejection(removeStoreDir(dir, probe));
      expect(isStoreError(e, 'STORE_LOCKED')).toBe(true);
      expect(readdirSync(dir)).toContain('CURRENT');
    } finally {
      child.stdin.end();
      await new Promise((resolve) => child.on('exit', resolve));
    }
  });

  it('knows the files LevelDB and the store write, and nothing else', () => {
    for (const name of [
      'CURRENT',
      'LOCK',
      'LOG',
      'LOG.old',
      'MANIFEST-000002',
      '000003.log',
      '000012.ldb',
      '000007.sst',
      '000005.dbtmp',
      'lost',
      'PERCOLATOR-SEAL',
      'PERCOLATOR-SEAL.tmp',
      'PERCOLATOR-CORRUPTION',
    ])
      expect(isStoreEntry(name), name).toBe(true);
    for (const name of ['CURRENT.bak', 'notes.log', 'MANIFEST', '.git', 'package.json', 'LOCKED', 'data'])
      expect(isStoreEntry(name), name).toBe(false);
  });
});

it.each(['proc', 'open'] as const)('removes a closed store with the %s probe', async (probe) => {
  const dir = tempDir();
  await storeWithData(dir);
  expect(await removeStoreDir(dir, probe)).toBeGreaterThan(3);
  expect(readdirSync(dir)).toEqual([]);
});
