/**
 * A store that records its `readRows` calls the caller picks: each call's `rowsLimit` and how many
 * rows were taken from it (what a remote store would have had to read and send, at least).
 */
import type { Store } from '../store/store.js';
import type { ReadRowsOptions } from '../store/types.js';

export interface RecordedRead {
  readonly limit: number | undefined;
  rows: number;
}

export function recordingReads(
  inner: Store,
  picked: (table: string, options: ReadRowsOptions) => boolean,
): { store: Store; reads: RecordedRead[] } {
  const reads: RecordedRead[] = [];
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'readRows')
        return (table: string, options: ReadRowsOptions = {}) => {
          const rows = target.readRows(table, options);
          if (!picked(table, options)) return rows;
          const read: RecordedRead = { limit: options.rowsLimit, rows: 0 };
          reads.push(read);
          return (async function* () {
            for await (const r of rows) {
              read.rows++;
              yield r;
            }
          })();
        };
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  return { store, reads };
}
