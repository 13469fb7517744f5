/**
 * Bad option values on the command line (compiled JS under dist/; `npm test` builds first): each
 * is one line on stderr with the stable code INVALID_ARGUMENT and exit 1, not a stack trace.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');

function run(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [mainJs, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

it.each([
  [['bench', 'webindex', '--docs', '-5'], '--docs must be a positive number, got -5'],
  [['bench', 'webindex', '--loaders', '2.5'], '--loaders must be a positive integer, got 2.5'],
  [['bench', 'webindex', '--store', 'bigtable://127.0.0.1:1'], '--store must be file:, memory: or serve, got bigtable://127.0.0.1:1'],
  [['bench', 'overhead', '--seconds', 'abc'], '--seconds must be a positive number, got abc'],
  [['bench', 'store', '--store', 'file:/somewhere'], '--store must be memory: or file:, got file:/somewhere'],
  [['serve', '--port', '99999'], '--port must be an integer in [0, 65535], got 99999'],
  [['oracle', '--port', '-1'], '--port must be an integer in [0, 65535], got -1'],
  [['check', 'bank', '--accounts', '1.5'], '--accounts must be a positive integer, got 1.5'],
  [['wait', '--store', 'memory:', '--timeout', '0'], '--timeout must be a positive number, got 0'],
])('%j is a typed one-line error', (args, message) => {
  const r = run(...args);
  expect(r.code).toBe(1);
  expect(r.stderr).toBe(`percolator: INVALID_ARGUMENT: ${message}\n`);
  expect(r.stdout).toBe('');
});
