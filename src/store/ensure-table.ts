/**
 * A table that must exist (Percolator's system tables, `Percolator.createTable`): created unless
 * it is there. It reads first, because a table that exists is the common case — every open but a
 * deployment's first — and a CreateTable refused with ALREADY_EXISTS is an error to a server:
 * `percolator serve`'s status page and dashboard counted two for every process that opened
 * Percolator over it, and one more for each createTable of a table already there (until
 * 2026-12-01), so a healthy deployment showed errors ticking up. Two first opens racing both
 * create; the loser's TABLE_EXISTS is the same as finding it.
 */
import { isStoreError } from './errors.js';
import type { Store } from './store.js';
import type { TableSpec } from './types.js';

/** The table's spec when it existed already; null when this call created it. */
export async function ensureTable(store: Store, name: string, spec: TableSpec): Promise<TableSpec | null> {
  try {
    return await store.getTable(name);
  } catch (e) {
    if (!isStoreError(e, 'TABLE_NOT_FOUND')) throw e;
  }
  try {
    await store.createTable(name, spec);
    return null;
  } catch (e) {
    if (!isStoreError(e, 'TABLE_EXISTS')) throw e;
    return store.getTable(name);
  }
}
