/**
 * The observed-columns registry: which (table, column) pairs have observers, shared by every
 * process through the `_percolator_observers` table (row = column, family `o`, qualifier =
 * `table\0observer`, table `*` = every table). A transaction that writes an observed column sets
 * its notify cell at commit; to know which columns those are, every process loads the registry
 * at open and refreshes it periodically.
 *
 * Contract (as in Apache Fluo, where observers are configured before data arrives): register
 * observers (start the workers) before writing the data they must see. A process learns of an
 * observer registered elsewhere within `refreshMs`; writes it commits before that do not notify.
 */
import { ensureTable } from '../store/ensure-table.js';
import type { Store } from '../store/store.js';

export const OBSERVERS_TABLE = '_percolator_observers';
const FAMILY = 'o';
export const ALL_TABLES = '*';

export class ObservedColumns {
  /** Table (or ALL_TABLES) → its observed columns: two lookups of strings whose hashes V8 keeps, instead of a key built per write. */
  private readonly columns = new Map<string, Set<string>>();
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;

  constructor(private readonly store: Store) {}

  private add(table: string, column: string): void {
    let set = this.columns.get(table);
    if (set === undefined) this.columns.set(table, (set = new Set()));
    set.add(column);
  }

  async open(refreshMs: number): Promise<void> {
    await ensureTable(this.store, OBSERVERS_TABLE, { families: { [FAMILY]: { gcRule: { maxNumVersions: 1 } } } });
    await this.refresh();
    if (refreshMs > 0) {
      this.timer = setInterval(() => {
        this.refreshing ??= this.refresh()
          .catch(() => undefined)
          .finally(() => {
            this.refreshing = null;
          });
      }, refreshMs);
      this.timer.unref();
    }
  }

  async refresh(): Promise<void> {
    for await (const row of this.store.readRows(OBSERVERS_TABLE)) {
      const column = Buffer.from(row.key).toString('utf8');
      for (const c of row.cells) {
        const table = Buffer.from(c.qualifier).toString('utf8').split('\u0000')[0] ?? ALL_TABLES;
        this.add(table, column);
      }
    }
  }

  has(table: string, column: string): boolean {
    if (this.columns.size === 0) return false;
    return this.columns.get(table)?.has(column) === true || this.columns.get(ALL_TABLES)?.has(column) === true;
  }

  /** Records that `observer` watches `column` of `table` (or of every table with ALL_TABLES). */
  async register(table: string, column: string, observer: string): Promise<void> {
    this.add(table, column);
    await this.store.mutateRow(OBSERVERS_TABLE, Buffer.from(column, 'utf8'), [
      {
        setCell: {
          familyName: FAMILY,
          columnQualifier: Buffer.from(`${table}\u0000${observer}`, 'utf8'),
          timestampMicros: 0,
          value: new Uint8Array(0),
        },
      },
    ]);
  }

  /**
   * The observers registered for `column` of `table` (or of every table), read from the registry
   * now: evidence for messages (a quiescence timeout names who should have run a notification).
   */
  async observersOf(table: string, column: string): Promise<string[]> {
    const row = await this.store.readRow(OBSERVERS_TABLE, Buffer.from(column, 'utf8'));
    const names = new Set<string>();
    for (const c of row?.cells ?? []) {
      const [t, observer] = Buffer.from(c.qualifier).toString('utf8').split('\u0000');
      if ((t === table || t === ALL_TABLES) && observer !== undefined) names.add(observer);
    }
    return [...names].sort();
  }

  /**
   * The columns of `table` that have an observer (registered for it or for every table), read
   * from the registry now, sorted: `percolator notify` refuses a column not among them, whose
   * notifications no worker would ever take.
   */
  async columnsOf(table: string): Promise<string[]> {
    const columns = new Set<string>();
    for await (const row of this.store.readRows(OBSERVERS_TABLE)) {
      for (const c of row.cells) {
        const t = Buffer.from(c.qualifier).toString('utf8').split('\u0000')[0];
        if (t === table || t === ALL_TABLES) columns.add(Buffer.from(row.key).toString('utf8'));
      }
    }
    return [...columns].sort();
  }

  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.refreshing;
  }
}
