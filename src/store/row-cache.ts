/**
 * A bounded LRU of decoded rows (per locality group), keyed by engine key. It only ever holds
 * what the engine holds durably: the write path updates it after the engine write resolves, and
 * the read path fills it synchronously right after a synchronous engine read, so no stale entry
 * can overtake a newer one. Negative entries (absent rows) are cached too: Percolator reads many
 * absent lock cells.
 *
 * Eviction is CLOCK (second chance) rather than strict LRU: a hit only sets a flag, so the hot
 * read path does no map reordering.
 */
import type { Cell } from './types.js';

const EMPTY: readonly Cell[] = Object.freeze([]);

export class RowCache {
  private readonly map = new Map<string, { cells: readonly Cell[]; bytes: number; hot: boolean }>();
  private bytes = 0;

  constructor(private readonly budgetBytes: number) {}

  get(key: string): readonly Cell[] | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    e.hot = true;
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
    this.map.set(key, { cells: cells.length === 0 ? EMPTY : cells, bytes: size, hot: false });
    this.bytes += size;
    while (this.bytes > this.budgetBytes) {
      const oldest = this.map.entries().next();
      if (oldest.done) break;
      const [k, e] = oldest.value;
      this.map.delete(k);
      if (e.hot) {
        e.hot = false;
        this.map.set(k, e); // second chance
      } else {
        this.bytes -= e.bytes;
      }
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
