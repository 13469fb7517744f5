#!/usr/bin/env node
/**
 * `npm run build`: compiles src/ into dist/ and makes the package's bin executable.
 *
 * tsc writes a new file with mode 0644. npm makes a bin executable only when it links one — and
 * `npx percolator` inside a checkout links it once, into npx's cache, then runs dist/cli/main.js
 * directly ever after; a fresh build at the same path (a clean clone where an earlier one stood,
 * as on CI) then failed with `sh: percolator: Permission denied` (2026-12-02).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// Without a shell or npm in between (typescript's package exports no bin path).
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);
chmodSync(join(root, 'dist', 'cli', 'main.js'), 0o755);
