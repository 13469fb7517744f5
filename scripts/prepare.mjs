#!/usr/bin/env node
/**
 * npm's `prepare`: builds LevelDB with a fix (leveldb-fix.mjs) and dist/ after `npm ci` /
 * `npm install` (and before `npm pack`), so a fresh checkout runs as the README says.
 *
 * Except under `npx` (npm_command `exec`) when dist/ is there already: `npx percolator …` inside a
 * checkout (the demo's closing hint says so) installs the checkout into npx's cache the first time,
 * and npm runs this script for it, in the checkout itself. A build then would rewrite dist/ in
 * place, file by file, under whatever is running from it — a `percolator serve`, a worker's lazy
 * imports, the test suite's child processes, which saw a module without its exports half-way
 * through (2026-12-02). The build it would make is the one `npm ci` or `npm run build` made.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
if (process.env.npm_command === 'exec' && existsSync(new URL('../dist/cli/main.js', import.meta.url))) process.exit(0);
// LevelDB with the fix of its issue 320 (leveldb-fix.mjs says why), then `npm run build`, without
// a shell or npm in between.
for (const script of ['leveldb-fix.mjs', 'build.mjs']) {
  const r = spawnSync(process.execPath, [join(root, 'scripts', script)], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
