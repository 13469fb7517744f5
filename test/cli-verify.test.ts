/**
 * `percolator verify` as a real process (compiled JS under dist/; `npm test` builds first): every
 * table read whole and checked on a sound store, the damage named on a damaged one — a table an
 * incremental open with no budget would not read — and the usual refusals.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { openLevelEngine } from '../src/store/embedded/level-engine.js';
import { liveTables } from '../src/store/embedded/level-verify.js';
import { openStore } from '../src/store/open-store.js';
import { runCli } from './support/cli-process.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');
const dirs: string[] = [];

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

it('reads every table of a sound store, and names the table a byte of which was flipped at rest', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-verify-'));
  dirs.push(dir);
  const store = await openStore(`file:${dir}`, { level: { writeBufferSize: 64 * 1024, compression: false } });
  await store.createTable('t', { families: { f: {} } });
  for (let i = 0; i < 40; i++) {
    const entries = Array.from({ length: 100 }, (_, j) => ({
      key: Buffer.from(`r${i}-${j}`),
      mutations: [
        { setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.alloc(100, i + j) } },
      ],
    }));
    await store.mutateRows('t', entries);
  }
  await store.close();
  const tables = await liveTables(dir);
  expect(tables?.size).toBeGreaterThan(1);
  const ok = await runCli(mainJs, ['verify', '--store', `file:${dir}`, '--json']);
  expect(ok.code, ok.stderr).toBe(0);
  const report = JSON.parse(ok.stdout) as { tables: number; tableBytes: number };
  expect(report.tables).toBe(tables?.size);
  expect(report.tableBytes).toBe([...(tables?.values() ?? [])].reduce((a, b) => a + b, 0));

  // Damage at rest to a table the record knows: an open with no re-check budget does not read it…
  const [num] = [...(tables?.keys() ?? [])];
  const name = `${String(num).padStart(6, '0')}.ldb`;
  const bytes = readFileSync(join(dir, name));
  bytes[Math.floor(bytes.length / 2)] ^= 0x5a;
  writeFileSync(join(dir, name), bytes);
  await (await openLevelEngine(dir, { recheckBytes: 0, create: false, mmapBallast: false })).close();
  // …verify does.
  const bad = await runCli(mainJs, ['verify', '--store', `file:${dir}`]);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain('DATA_CORRUPTED');
  expect(bad.stderr).toContain(name);
  expect(bad.stdout).toBe('');
});

it('takes only a file: store, and creates none', async () => {
  const memory = await runCli(mainJs, ['verify', '--store', 'memory:']);
  expect(memory.code).toBe(1);
  expect(memory.stderr).toContain('INVALID_ARGUMENT');
  const parent = mkdtempSync(join(tmpdir(), 'cli-verify-none-'));
  dirs.push(parent);
  const dir = join(parent, 'absent');
  const none = await runCli(mainJs, ['verify', '--store', `file:${dir}`]);
  expect(none.code).toBe(1);
  expect(none.stderr).toContain('NOT_A_STORE');
});
