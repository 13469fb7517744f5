/**
 * The names of the files the embedded store keeps in its directory: LevelDB's (CURRENT, LOCK,
 * LOG, LOG.old, MANIFEST-N, N.log, N.ldb, N.sst, N.dbtmp, `lost/`) and ours (the seal, the known
 * tables, the corruption marker). What a directory holds besides these is someone else's: the
 * store never creates a database among such files (level-engine.ts `create`) and never removes
 * them (remove-store-dir.ts).
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { KNOWN_TABLES_FILE } from './level-known-tables.js';
import { SEAL_FILE } from './level-seal.js';

/** Name of the marker file left when corruption was detected after LevelDB had already opened. */
export const CORRUPTION_MARKER = 'PERCOLATOR-CORRUPTION';

const STORE_ENTRY = new RegExp(
  `^(?:CURRENT|LOCK|LOG|LOG\\.old|MANIFEST-\\d+|\\d+\\.(?:log|ldb|sst|dbtmp)|lost|(?:${SEAL_FILE}|${KNOWN_TABLES_FILE})(?:\\.tmp)?|${CORRUPTION_MARKER})$`,
);

/** Whether `name` is a file the embedded store (LevelDB and ours) keeps in its directory. */
export const isStoreEntry = (name: string): boolean => STORE_ENTRY.test(name);

/** LevelDB's files that hold data: tables and logs (a MANIFEST only lists them). */
export const isDataFile = (name: string): boolean => /^\d+\.(?:ldb|sst|log)$/.test(name);

/** LevelDB's log files in `dir` (N.log), name → size; one deleted while listed is left out. */
export async function logFiles(dir: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const name of await readdir(dir)) {
    if (!/^\d+\.log$/.test(name)) continue;
    const size = await stat(join(dir, name)).then(
      (st) => st.size,
      () => null,
    );
    if (size !== null) out.set(name, size);
  }
  return out;
}
