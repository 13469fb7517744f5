/**
 * Whether a table a call names is a Percolator table — one with the system families of
 * PERCOLATOR_TABLE_SPEC — checked once per table and Percolator instance.
 *
 * Without this, a table made with the store's own `createTable` read as empty (the system
 * families' filters match no cell of it: `db.get` null, a scan nothing) and a write to it failed
 * with the store's FAMILY_NOT_FOUND for an internal family. Every public entry point that names a
 * table checks it here: the store's TABLE_NOT_FOUND when there is no such table,
 * NOT_A_PERCOLATOR_TABLE (`table`, `families` it lacks) when it has not the system families.
 *
 * Cost: a table found to be a Percolator table is remembered, and later calls naming it pay a Set
 * lookup; the first use of a table pays one `getTable`, shared by concurrent first uses. Nothing
 * else is remembered: a table missing or plain now may be created as a Percolator table by
 * another process at any time, and is looked up again at its next use.
 *
 * A table remembered good that another process (or the store's own API) deletes and recreates
 * without the families is the case a cache gets wrong, and the choice is that it costs nothing on
 * the hot path: reads of it are not checked again and read nothing, as before this check existed.
 * A commit that writes to it fails in the store (FAMILY_NOT_FOUND, TABLE_NOT_FOUND): that error
 * path forgets the commit's tables and checks them afresh (`explain`), so the commit is told
 * NOT_A_PERCOLATOR_TABLE (or TABLE_NOT_FOUND) and later calls are checked again.
 */
import { isStoreError } from '../store/errors.js';
import type { Store } from '../store/store.js';
import type { TableSpec } from '../store/types.js';
import { TxnError } from './errors.js';
import { PERCOLATOR_TABLE_SPEC } from './layout.js';

const SYSTEM_FAMILIES: readonly string[] = Object.keys(PERCOLATOR_TABLE_SPEC.families);

/** The system families `spec` lacks (none: a Percolator table). */
export function missingFamilies(spec: TableSpec): string[] {
  return SYSTEM_FAMILIES.filter((f) => !Object.hasOwn(spec.families, f));
}

/** NOT_A_PERCOLATOR_TABLE for `table`, which lacks `missing` (`details.family` is the first, as it always was). */
export function notAPercolatorTable(table: string, missing: readonly string[]): TxnError {
  const families = missing.length === 1 ? `family ${missing[0]}` : `families ${missing.join(', ')}`;
  return new TxnError('NOT_A_PERCOLATOR_TABLE', `table ${table} is not a Percolator table: it lacks the system ${families}`, {
    table,
    families: [...missing],
    family: missing[0],
  });
}

export class TableCheck {
  /** Tables found to be Percolator tables. Only names the store had as such, so bounded by its tables. */
  private readonly known = new Set<string>();
  /** First checks in flight, shared by concurrent callers. */
  private readonly checking = new Map<string, Promise<void>>();

  constructor(private readonly store: Store) {}

  /** The table a `has` last answered true for: most calls name the table the one before did. */
  private last: string | null = null;

  /** Whether `table` is known to be a Percolator table (no store call). */
  has(table: string): boolean {
    if (table === this.last) return true;
    if (!this.known.has(table)) return false;
    this.last = table;
    return true;
  }

  /** Resolves once `table` is known to be a Percolator table; else the store's TABLE_NOT_FOUND, or NOT_A_PERCOLATOR_TABLE. */
  check(table: string): Promise<void> {
    if (this.known.has(table)) return Promise.resolve();
    let p = this.checking.get(table);
    if (p === undefined) {
      p = this.lookUp(table).finally(() => this.checking.delete(table));
      this.checking.set(table, p);
    }
    return p;
  }

  private async lookUp(table: string): Promise<void> {
    const missing = missingFamilies(await this.store.getTable(table));
    if (missing.length > 0) throw notAPercolatorTable(table, missing);
    this.known.add(table);
  }

  /** `table` was seen to be a Percolator table (a listing, createTable). */
  remember(table: string): void {
    this.known.add(table);
  }

  /** Forgets `table` (its next check asks the store). */
  forget(table: string): void {
    this.known.delete(table);
    if (this.last === table) this.last = null;
  }

  /**
   * What to throw for `e`, a write's failure on `tables`. A store's FAMILY_NOT_FOUND or
   * TABLE_NOT_FOUND there means one of them was deleted, or recreated without the families, after
   * it was remembered: they are forgotten and checked afresh, and the first check that fails is
   * the answer (with `e` as its cause). Any other error, or checks that all pass, is `e` itself.
   */
  async explain(e: unknown, tables: readonly string[]): Promise<unknown> {
    if (!isStoreError(e, 'FAMILY_NOT_FOUND') && !isStoreError(e, 'TABLE_NOT_FOUND')) return e;
    for (const t of tables) this.forget(t);
    for (const t of tables) {
      try {
        await this.check(t);
      } catch (found) {
        if (found instanceof Error && found.cause === undefined) found.cause = e;
        return found;
      }
    }
    return e;
  }
}
