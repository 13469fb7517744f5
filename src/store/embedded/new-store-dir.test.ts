/**
 * Taking back a store a failed start created removes only what was not there before: the store in
 * a directory that was missing or empty, and the directories that were missing; never a store or
 * a file that was there, nor one that someone else put there meanwhile.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { openStore } from '../open-store.js';
import { noteNewStoreDir } from './new-store-dir.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'new-store-'));
  dirs.push(d);
  return d;
}

/** Creates (or opens) a store in `dir` with one table, then closes it. */
async function createStore(dir: string): Promise<void> {
  const s = await openStore(`file:${dir}`);
  await s.createTable('t', { families: { f: {} } });
  await s.close();
}

it('a store created in missing directories is removed with the directories it made', async () => {
  const root = tempDir();
  const dir = join(root, 'a', 'b', 'store');
  const fresh = await noteNewStoreDir(dir);
  expect(fresh?.missing).toEqual([dir, join(root, 'a', 'b'), join(root, 'a')]);
  await createStore(dir);
  await fresh?.undo();
  expect(readdirSync(root)).toEqual([]);
});

it('a store created in an empty directory is removed; the directory stays', async () => {
  const dir = join(tempDir(), 'empty');
  mkdirSync(dir);
  const fresh = await noteNewStoreDir(dir);
  expect(fresh?.missing).toEqual([]);
  await createStore(dir);
  expect(readdirSync(dir).length).toBeGreaterThan(0);
  await fresh?.undo();
  expect(readdirSync(dir)).toEqual([]);
});

it('a directory holding a store or anything else is never taken back', async () => {
  const root = tempDir();
  const existing = join(root, 'store');
  await createStore(existing);
  expect(await noteNewStoreDir(existing)).toBeNull();
  const other = join(root, 'other');
  mkdirSync(other);
  writeFileSync(join(other, 'notes.txt'), 'mine');
  expect(await noteNewStoreDir(other)).toBeNull();
  const file = join(root, 'file');
  writeFileSync(file, 'x');
  expect(await noteNewStoreDir(file)).toBeNull();
});

it('what someone put there meanwhile keeps everything: the store, and the directories above it', async () => {
  const root = tempDir();
  const dir = join(root, 'a', 'store');
  const fresh = await noteNewStoreDir(dir);
  await createStore(dir);
  writeFileSync(join(dir, 'theirs.txt'), 'not the store');
  await fresh?.undo();
  expect(existsSync(join(dir, 'CURRENT'))).toBe(true);
  expect(existsSync(join(dir, 'theirs.txt'))).toBe(true);

  // A file beside the store, in a directory the start made: the store goes, that directory stays.
  const dir2 = join(root, 'b', 'store');
  const fresh2 = await noteNewStoreDir(dir2);
  await createStore(dir2);
  writeFileSync(join(root, 'b', 'theirs.txt'), 'not the store');
  await fresh2?.undo();
  expect(readdirSync(join(root, 'b'))).toEqual(['theirs.txt']);
});

it('a store still open is not removed', async () => {
  const dir = join(tempDir(), 'open');
  const fresh = await noteNewStoreDir(dir);
  const s = await openStore(`file:${dir}`);
  try {
    await fresh?.undo();
    expect(existsSync(join(dir, 'CURRENT'))).toBe(true);
  } finally {
    await s.close();
  }
});
