/**
 * `percolator demo` as a newcomer runs it (compiled JS under dist/; `npm test` builds first): it
 * never deletes what is not a store — a `--data` directory holding other files, or a store some
 * process has open, is a one-line typed error with everything left in place — nor creates one
 * among other files (`--keep`), and it finds its corpus when run from a directory that has no
 * node_modules of its own.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'cli-demo-'));
  dirs.push(d);
  return d;
}

function demo(cwd: string, ...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [mainJs, 'demo', '--json', ...args], { cwd, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

it('refuses a --data directory holding files the store did not write, and leaves them', () => {
  const data = tempDir();
  writeFileSync(join(data, 'notes.txt'), 'mine');
  const r = demo(tempDir(), '--corpus', 'synthetic', '--docs', '20', '--data', data);
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/^percolator: NOT_A_STORE: .*notes\.txt.*nothing was removed/);
  expect(r.stdout).toBe('');
  expect(readdirSync(data)).toEqual(['notes.txt']);
  expect(readFileSync(join(data, 'notes.txt'), 'utf8')).toBe('mine');
});

it('with --keep, opens a store or creates one where nothing is, never among other files', () => {
  const data = tempDir();
  writeFileSync(join(data, 'notes.txt'), 'mine');
  const r = demo(tempDir(), '--corpus', 'synthetic', '--docs', '20', '--keep', '--data', data);
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/^percolator: NOT_A_STORE: .*notes\.txt.*nothing was created/);
  expect(readdirSync(data)).toEqual(['notes.txt']);
});

it('starts clean over a store it made before, and finds a corpus from a directory without node_modules', () => {
  const cwd = tempDir();
  const data = join(tempDir(), 'data');
  const first = demo(cwd, '--docs', '30', '--data', data);
  expect(first.stderr).toBe('');
  expect(first.code).toBe(0);
  const a = JSON.parse(first.stdout) as { documents: number; corpus: string };
  expect(a).toMatchObject({ corpus: 'local', documents: 30 });
  // Again over the same directory: wiped, not added to.
  const second = demo(cwd, '--docs', '20', '--data', data);
  expect(second.code).toBe(0);
  expect((JSON.parse(second.stdout) as { documents: number }).documents).toBe(20);
});
