/**
 * A check given a store that holds a user's table (`--store`, `--data`) refuses it with
 * STORE_IN_USE naming the table, exits 1 and writes nothing: no table of its own, none of
 * Percolator's. A store holding only the checks' and Percolator's tables is a check's store: one
 * check after another runs in it. Real processes (compiled JS under dist/; `npm test` builds first).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { openStore } from '../src/store/open-store.js';
import { runCli } from './support/cli-process.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');
const dirs: string[] = [];

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function storeWith(tables: readonly string[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'check-store-'));
  dirs.push(dir);
  const store = await openStore(`file:${dir}`);
  for (const t of tables) await store.createTable(t, { families: { f: {} } });
  await store.close();
  return dir;
}

async function tablesOf(dir: string): Promise<string[]> {
  const store = await openStore(`file:${dir}`, { level: { create: false } });
  try {
    return (await store.listTables()).sort();
  } finally {
    await store.close();
  }
}

it.each([
  ['bank', '--store'],
  ['notify', '--store'],
  ['durability', '--data'],
])('check %s refuses a store holding a table no check made, and writes nothing', async (check, option) => {
  const dir = await storeWith(['orders', 'bank_check']);
  const where = option === '--store' ? `file:${dir}` : dir;
  const r = await runCli(mainJs, ['check', check, option, where, '--seconds', '1', '--json']);
  expect(r.code, r.stderr).toBe(1);
  expect(r.stderr).toContain('STORE_IN_USE');
  expect(r.stderr).toContain('orders');
  expect(r.stdout).toBe('');
  expect(await tablesOf(dir)).toEqual(['bank_check', 'orders']);
});

it("a store holding only the checks' tables is a check's store: bank, then notify, in the same one", async () => {
  const dir = await storeWith([]);
  for (const check of ['bank', 'notify']) {
    const r = await runCli(mainJs, ['check', check, '--store', `file:${dir}`, '--seconds', '1', '--json']);
    expect(r.code, `${check}: ${r.stderr}`).toBe(0);
  }
  const tables = await tablesOf(dir);
  expect(tables).toContain('bank_check');
  expect(tables).toContain('notify_check');
});
