import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeDirs } from './make-dirs.js';

const root = mkdtempSync(join(tmpdir(), 'make-dirs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('makeDirs', () => {
  it('creates every missing level, and is idempotent', async () => {
    const dir = join(root, 'a', 'b', 'c');
    await makeDirs(dir);
    expect(statSync(dir).isDirectory()).toBe(true);
    await makeDirs(dir);
    expect(statSync(dir).isDirectory()).toBe(true);
  });

  it('fails with ENOTDIR under a file', async () => {
    writeFileSync(join(root, 'file'), 'x');
    await expect(makeDirs(join(root, 'file', 'sub'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });

  // Node's recursive mkdir never returns here (procfs answers ENOENT for the new entry).
  it.skipIf(!existsSync('/proc/self'))('fails at once under /proc instead of spinning', async () => {
    await expect(makeDirs('/proc/no-such-dir/store')).rejects.toMatchObject({ code: 'ENOENT' });
    expect(existsSync('/proc/no-such-dir')).toBe(false);
  });
});
