/**
 * The store a check is given (`--store`, `--data`) is the check's: it creates its table there,
 * deletes it first if present, registers observers and workers in Percolator's own tables, and
 * kills processes writing to it. So a check refuses a store holding anything else — a user's
 * tables — rather than run its crashes beside them: only the checks' tables and Percolator's
 * (`_percolator_*`) may be there, so one scratch store serves every check in turn.
 */
import { SYSTEM_TABLE_PREFIX } from '../apps/webindex/clean-start.js';
import type { Store } from '../store/store.js';
import { DURABILITY_TABLE } from './durability-protocol.js';
import { TABLE as NOTIFY_TABLE } from './notify-protocol.js';

export const BANK_TABLE = 'bank_check';

/** The tables the checks make: what a store given to a check may hold besides Percolator's. */
export const CHECK_TABLES: readonly string[] = [BANK_TABLE, NOTIFY_TABLE, DURABILITY_TABLE];

/** A check refused a store that holds tables it did not make (nothing was written). */
export class StoreInUseError extends Error {
  readonly code = 'STORE_IN_USE';

  constructor(
    readonly url: string,
    /** The tables that are neither a check's nor Percolator's (sorted). */
    readonly foreign: readonly string[],
  ) {
    const shown = `${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? `, … (${foreign.length} in all)` : ''}`;
    super(
      `the store ${url} holds tables no check made (${shown}); a check writes its own table there and kills processes writing to it — nothing was written: give a store of its own, or no --store for a temporary one`,
    );
    this.name = 'StoreInUseError';
  }
}

/** Throws StoreInUseError if `store` holds a table that is neither a check's nor Percolator's. */
export async function refuseStoreInUse(store: Store, url: string): Promise<void> {
  const foreign = (await store.listTables()).filter((t) => !t.startsWith(SYSTEM_TABLE_PREFIX) && !CHECK_TABLES.includes(t)).sort();
  if (foreign.length > 0) throw new StoreInUseError(url, foreign);
}
