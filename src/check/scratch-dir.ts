/**
 * A checker's store directory when the user named none (`check bank`, `check notify --full-disk`,
 * `check durability`): a fresh directory under the system's temporary one. It is removed only
 * when the check passed; a failed run keeps it for investigation (its path is in the result's
 * `store`), and removing it is best effort — a check's verdict never turns on the clean-up.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';

export interface ScratchDir {
  readonly path: string;
  /** Removes the directory if `passed`; else leaves it where the result says it is. */
  dispose(passed: boolean): Promise<void>;
}

export async function scratchDir(check: string): Promise<ScratchDir> {
  const path = await mkdtemp(resolve(tmpdir(), `percolator-${check}-`));
  return {
    path,
    dispose: async (passed) => {
      if (passed) await rm(path, { recursive: true, force: true }).catch(() => undefined);
    },
  };
}
