/**
 * A bounded LRU of decoded rows (per locality group), keyed by engine key. It only ever holds
 * what the engine holds durably: the write path updates it after the engine write resolves, and
 * the read path fills it synchronously right after a synchronous engine read, so no stale entry
 * can overtake a newer one. Negative entries (absent rows) are cached too: Percolator reads many
 * absent lock cells.
 */
import type { Cell } from './types.js';

const EMPTY: readonly Cell[] = Object.freeze([]);

export class RowCache {
  private readonly map = new Map<string, { cells: readonly Cell[]; bytes: number }>();
  private bytes = 0;

  constructor(private readonly budgetBytes: number) {}

  get(key: string): readonly Cell[] | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    // Refresh recency.
    this.map.delete(key);
    this.map.set(key, e);
    return e.cells;
  }

  set(key: string, cells: readonly Cell[], bytes: number): void {
    if (this.budgetBytes <= 0) return;
    const old = this.map.get(key);
    if (old !== undefined) {
      this.bytes -= old.bytes;
      this.map.delete(key);
    }
    const size = bytes + key.length + 64;
    if (size > this.budgetBytes / 4) return;
    this.map.set(key, { cells: cells.length === 0 ? EMPTY : cells, bytes: size });
    this.bytes += size;
    while (this.bytes > this.budgetBytes) {
      const oldest = this.map.keys().next();
      if (oldest.done) break;
      this.delete(oldest.value);
    }
  }

  delete(key: string): void {
    const e = this.map.get(key);
    if (e === undefined) return;
    this.bytes -= e.bytes;
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
    this.bytes = 0;
  }
}
