/**
 * Whether a clean start (the demo without `--keep`) may remove the `file:` store in a directory:
 * only when all it would lose is a web index. `removeStoreDir` already refuses a directory holding
 * files the store did not write; this refuses a store holding tables of someone else — a user's
 * own Percolator tables, say, in the directory `percolator search` was pointed at.
 *
 * Invariants:
 * - Without `force`, a store is removed only when every table in it is the web index's (schema.ts
 *   TABLES) or Percolator's own (`_percolator_*`: the oracle's mark, registered observers,
 *   worker liveness). Percolator's own tables alone pass: they are what `percolator serve` or any
 *   `Percolator.open` leaves in a new store, and the mark goes with the data it protects. (A store
 *   kept only for a standalone oracle's mark, `percolator oracle --store`, is not told apart.)
 * - A table is the web index's by its name only beside the whole web index: the demo creates
 *   every one of TABLES before it writes anything (pipeline.ts), so a store holding some of those
 *   names and not all is someone else's — the README's own example is a `docs` table in
 *   `file:./data`, which a name-by-name check passed as a web index and the demo removed.
 * - The check opens the store as the CLI's reading commands do (`create: false`): a missing or
 *   empty directory, or one holding no store, passes (nothing there to lose, and removeStoreDir
 *   judges other files); a store some process has open is STORE_LOCKED; any other failure to read
 *   it refuses, since what it holds is then unknown.
 */
import { isStoreError } from '../../store/errors.js';
import { ONE_SHOT_STORE, openStore } from '../../store/open-store.js';
import type { Store } from '../../store/store.js';
import { TABLES } from './schema.js';

/** The prefix of Percolator's own tables (`_percolator_oracle`, `_percolator_observers`, `_percolator_workers`). */
export const SYSTEM_TABLE_PREFIX = '_percolator_';

/** A clean start refused: the store holds tables that are not a web index's. */
export class NotAWebIndexError extends Error {
  readonly code = 'NOT_A_WEB_INDEX';

  constructor(
    /** The store's directory. */
    readonly dir: string,
    /** The tables a clean start would lose that are not the web index's. */
    readonly foreign: readonly string[],
    /** Every table the store holds. */
    readonly tables: readonly string[],
  ) {
    const shown = `${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? `, … (${foreign.length} in all)` : ''}`;
    // A web index's name among them: say why it is not taken for one (foreignTables).
    const named = foreign.some((t) => (TABLES as readonly string[]).includes(t));
    const why = named ? `; a web index has all of ${TABLES.join(', ')}` : '';
    super(
      `${dir} holds tables that are not the web index's (${shown}${why}); the demo starts clean and would remove them — nothing was removed: give another --data directory, or --force to remove them`,
    );
    this.name = 'NotAWebIndexError';
  }
}

/**
 * The tables of `tables` a clean start must not remove unasked (sorted): those neither the web
 * index's nor Percolator's own — and the web index's names too unless all of them are there.
 */
export function foreignTables(tables: readonly string[]): string[] {
  const user = tables.filter((t) => !t.startsWith(SYSTEM_TABLE_PREFIX));
  const wholeWebIndex = TABLES.every((t) => user.includes(t));
  const web = new Set<string>(wholeWebIndex ? TABLES : []);
  return user.filter((t) => !web.has(t)).sort();
}

/** Throws NotAWebIndexError when the store in `dir` holds foreign tables (see the header); nothing is written. */
export async function refuseForeignStore(dir: string): Promise<void> {
  let store: Store;
  try {
    store = await openStore(`file:${dir}`, { ...ONE_SHOT_STORE, gcIntervalMs: 0 });
  } catch (e) {
    if (isStoreError(e, 'NOT_A_STORE')) return;
    if (isStoreError(e, 'STORE_LOCKED')) throw e;
    if (e instanceof Error) e.message = `${e.message} (the demo reads what a store holds before removing it; --force removes it unread)`;
    throw e;
  }
  let tables: string[];
  try {
    tables = await store.listTables();
  } finally {
    await store.close();
  }
  const foreign = foreignTables(tables);
  if (foreign.length > 0) throw new NotAWebIndexError(dir, foreign, tables);
}
