/**
 * Coalesces concurrent point reads: readRow calls on the same table with the same filter that
 * arrive before the next macrotask become one ReadRows request over all their keys (each call
 * costs a round trip; a transaction reading N cells in parallel then pays about one). Every row
 * is still read atomically, so the result is exactly what separate calls would return.
 */
import { bytesKey } from '../bytes.js';
import type { Bytes, Row, RowFilter } from '../types.js';

/** At most this many keys in one coalesced request. */
const MAX_KEYS = 1000;

interface Waiter {
  readonly key: Bytes;
  resolve(row: Row | null): void;
  reject(e: unknown): void;
}

interface Group {
  readonly table: string;
  readonly filter: RowFilter | undefined;
  readonly waiters: Waiter[];
}

/** Reads `keys` (distinct) and returns the rows found, by `bytesKey`. */
export type MultiGet = (table: string, filter: RowFilter | undefined, keys: readonly Bytes[]) => Promise<Map<string, Row>>;

/**
 * A stable identity for a filter: bytes and strings are told apart. Remembered per filter object
 * (the transaction layer reuses one per column): computing it costs ~9 µs, a tenth of a point
 * read over loopback. Like the stores' compiled filters, this assumes a filter is not changed
 * after it was used.
 */
export function filterIdentity(filter: RowFilter | undefined): string {
  if (filter === undefined) return '';
  let id = identities.get(filter);
  if (id === undefined) {
    id = JSON.stringify(filter, function (this: Record<string, unknown>, k: string, v: unknown) {
      const original = this[k];
      if (original instanceof Uint8Array)
        return `B${Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('hex')}`;
      if (typeof original === 'string') return `S${original}`;
      return v;
    });
    identities.set(filter, id);
  }
  return id;
}
const identities = new WeakMap<RowFilter, string>();

export class ReadRowBatcher {
  private readonly groups = new Map<string, Group>();
  private scheduled = false;

  constructor(private readonly multiGet: MultiGet) {}

  read(table: string, key: Bytes, filter: RowFilter | undefined): Promise<Row | null> {
    const id = `${table}\u0000${filterIdentity(filter)}`;
    let g = this.groups.get(id);
    if (g === undefined) {
      g = { table, filter, waiters: [] };
      this.groups.set(id, g);
    }
    const group = g;
    const p = new Promise<Row | null>((resolve, reject) => group.waiters.push({ key, resolve, reject }));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return p;
  }

  private flush(): void {
    this.scheduled = false;
    const groups = [...this.groups.values()];
    this.groups.clear();
    for (const g of groups) {
      for (let i = 0; i < g.waiters.length; i += MAX_KEYS) void this.run(g.table, g.filter, g.waiters.slice(i, i + MAX_KEYS));
    }
  }

  private async run(table: string, filter: RowFilter | undefined, waiters: readonly Waiter[]): Promise<void> {
    const keys = new Map<string, Bytes>();
    for (const w of waiters) keys.set(bytesKey(w.key), w.key);
    try {
      const rows = await this.multiGet(table, filter, [...keys.values()]);
      for (const w of waiters) w.resolve(rows.get(bytesKey(w.key)) ?? null);
    } catch (e) {
      for (const w of waiters) w.reject(e);
    }
  }
}
