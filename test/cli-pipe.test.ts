/**
 * The `percolator` command writing into a pipe whose reader stops early (`percolator scan t | head`):
 * the output just ends — exit 0, no stack trace (compiled JS under dist/; `npm test` builds first).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore } from '../src/store/open-store.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'percolator-cli-pipe-'));
  const store = await openStore(`file:${dir}`, { gcIntervalMs: 0 });
  await store.createTable('t', { families: { f: {} } });
  const value = Buffer.alloc(200, 0x61);
  await store.mutateRows(
    't',
    Array.from({ length: 5000 }, (_, i) => ({
      key: Buffer.from(`row-${String(i).padStart(5, '0')}`),
      mutations: [{ setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value } }],
    })),
  );
  await store.close();
}, 30_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('a reader that closes the pipe early ends the output: exit 0, nothing on stderr', async () => {
  const child = spawn(process.execPath, [mainJs, 'scan', 't', '--store', `file:${dir}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const first = await new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString())));
  child.stdout.destroy(); // like `head` exiting after its lines
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  expect(first).toMatch(/^row-00000\n/);
  expect(stderr).toBe('');
  expect(code).toBe(0);
}, 30_000);
