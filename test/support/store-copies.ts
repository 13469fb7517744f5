/**
 * A `file:` store made once for a test file, copied for each command that opens it: a process
 * holds a store's lock while it has it open (a second opener is STORE_LOCKED), so commands on
 * copies of it can run at once — and the tests with them. Each copy is the store as the file's
 * `beforeAll` left it.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface StoreCopies {
  /** The store's directory, empty until the test file's `beforeAll` opens a store in it. */
  readonly dir: string;
  /** Where the copies go; room for a test's other scratch files too (removed with them). */
  readonly scratch: string;
  /** A fresh copy of the store. */
  copy(): string;
  /** Removes the store, its copies and the scratch files. */
  remove(): void;
}

export function storeCopies(name: string): StoreCopies {
  const dir = mkdtempSync(join(tmpdir(), `percolator-${name}-`));
  const scratch = mkdtempSync(join(tmpdir(), `percolator-${name}-copies-`));
  return {
    dir,
    scratch,
    copy() {
      const to = mkdtempSync(join(scratch, 'store-'));
      cpSync(dir, to, { recursive: true });
      return to;
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}
