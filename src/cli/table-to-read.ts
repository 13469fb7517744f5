/**
 * The schema of the table `get` or `scan` reads (or `wait --tables` names, or `set` and `delete`
 * write) — or, for a name the store does not have, a TABLE_NOT_FOUND that lists the tables it
 * has. After `npm start` a newcomer does not know the web index's table names, and no command
 * lists them: "table "documents" does not exist" left them to guess.
 *
 * Invariants: the error keeps its code and its `table`; the listing is the store's tables but
 * Percolator's own (`_percolator_*`, which hold nothing to read); a listing that fails leaves the
 * error as the store gave it.
 */
import { SYSTEM_TABLE_PREFIX } from '../apps/webindex/clean-start.js';
import { StoreError, isStoreError } from '../store/errors.js';
import type { Store } from '../store/store.js';
import type { TableSpec } from '../store/types.js';

/** At most this many names in the message (all of them in `details.tables`). */
const SHOWN = 12;

export async function tableToRead(store: Store, table: string): Promise<TableSpec> {
  try {
    return await store.getTable(table);
  } catch (e) {
    if (!isStoreError(e, 'TABLE_NOT_FOUND')) throw e;
    const all = await store.listTables().catch(() => null);
    if (all === null) throw e;
    const tables = all.filter((t) => !t.startsWith(SYSTEM_TABLE_PREFIX)).sort();
    const listing =
      tables.length === 0
        ? "the store holds no table but Percolator's own"
        : `the store's tables: ${tables.slice(0, SHOWN).join(', ')}${tables.length > SHOWN ? `, … (${tables.length} in all)` : ''}`;
    throw new StoreError('TABLE_NOT_FOUND', `${e.message}; ${listing}`, { ...e.details, tables }, { cause: e });
  }
}
