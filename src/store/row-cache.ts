/**
 * A bounded LRU of decoded rows (per locality group), keyed by engine key. It only ever holds
 * what the engine holds durably: the write path updates it after the engine write resolves, and
 * the read path fills it synchronously right after a synchronous engine read, so no stale entry
 * can overtake a newer one. Negative entries (absent rows) are cached too: Percolator reads many
 * absent lock cells.
 *
 * Eviction is CLOCK (second chance) rather than strict LRU: a hit only sets a flag, so the hot
 * read path does no map reordering. The clock's order is a queue of its own (util/queue.ts says
 * why not the Map's insertion order).
 *
 * The budget counts the JS heap an entry costs, not only its encoded bytes: a decoded cell is an
 * object plus two typed-array views (~270 bytes on V8), often ten times its encoded size for
 * Percolator's small lock and write cells. Counting encoded bytes alone let a "128 MiB" cache
 * hold about a gigabyte.
 *
 * Rows this tier evicts go, as their encoded bytes, to a second tier (encoded-row-cache.ts) when
 * it has a budget: `takeEncoded` hands such a row back for the caller to decode and `set` again.
 * With a second tier, rows the store writes go straight to it (`setEncoded`): this tier then holds
 * rows as they were read, decoded once per read after a write instead of once per write.
 */
import { Queue } from '../util/queue.js';
import { ABSENT_ROW, EncodedRowCache } from './encoded-row-cache.js';
import type { Cell } from './types.js';

const EMPTY: readonly Cell[] = Object.freeze([]);

/** Heap cost of one decoded cell: the object (80 bytes) and its value and qualifier views (96 each). */
export const CELL_OVERHEAD_BYTES = 272;
/** Heap cost of one entry besides its cells: the cells array, the row's buffer, the map entry and key. */
export const ENTRY_OVERHEAD_BYTES = 320;

interface Entry {
  readonly key: string;
  /** Emptied when the entry dies: the eviction queue may hold a dead entry for a while. */
  cells: readonly Cell[];
  /** The encoded row the cells are views into (ABSENT_ROW: absent; null: unknown, not demoted). */
  raw: Uint8Array | null;
  bytes: number;
  hot: boolean;
  /** False once replaced or deleted: the queue drops it when it reaches the head. */
  live: boolean;
  /** The function `derived` was computed by (one per entry: the last asked), or null. */
  deriver: ((cells: readonly Cell[]) => object) | null;
  derived: object | null;
}

/**
 * Heap charged for a derived value. The transaction layer's row summary with one column and its
 * inline value's view measured ~290 bytes a row (50 000 rows, after a forced GC).
 */
export const DERIVED_OVERHEAD_BYTES = 288;

export class RowCache {
  private readonly map = new Map<string, Entry>();
  /** Eviction order (insertion, second chances re-queued), including dead entries. */
  private readonly order = new Queue<Entry>();
  private bytes = 0;
  private readonly encoded: EncodedRowCache;

  /** `encodedBudgetBytes`: the second tier's budget (0: evicted rows are forgotten). */
  constructor(
    private readonly budgetBytes: number,
    private readonly encodedBudgetBytes = 0,
  ) {
    this.encoded = new EncodedRowCache(encodedBudgetBytes);
  }

  /** Both tiers' budgets, and what this one holds now (its charge, its rows). O(1). */
  usage(): { readonly budgetBytes: number; readonly bytes: number; readonly rows: number; readonly encodedBudgetBytes: number } {
    return { budgetBytes: this.budgetBytes, bytes: this.bytes, rows: this.map.size, encodedBudgetBytes: this.encodedBudgetBytes };
  }

  /** There is a second tier (`setEncoded` caches). */
  get hasEncodedTier(): boolean {
    return this.encoded.enabled;
  }

  get(key: string): readonly Cell[] | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    e.hot = true;
    return e.cells;
  }

  /**
   * `derive(cells)` of a cached row, computed on first use and kept until the row changes or
   * leaves the cache; undefined when the row is not cached. `derive` must be a pure function of
   * the cells; an entry keeps one derived value, for the last function asked.
   */
  derive<T extends object>(key: string, derive: (cells: readonly Cell[]) => T): T | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    e.hot = true;
    if (e.deriver === derive) return e.derived as T;
    const d = derive(e.cells);
    if (e.deriver === null) {
      e.bytes += DERIVED_OVERHEAD_BYTES;
      this.bytes += DERIVED_OVERHEAD_BYTES;
    }
    e.deriver = derive;
    e.derived = d;
    this.evict();
    return d;
  }

  /**
   * Caches `cells` (views into an encoded row of `bytes` bytes; none for an absent row). With
   * `raw`, that encoded row, the row can go to the second tier when this one evicts it.
   */
  set(key: string, cells: readonly Cell[], bytes: number, raw?: Uint8Array): void {
    if (this.budgetBytes <= 0) return;
    this.delete(key);
    const size = bytes + key.length + ENTRY_OVERHEAD_BYTES + cells.length * CELL_OVERHEAD_BYTES;
    if (size > this.budgetBytes / 4) return;
    const e: Entry = {
      key,
      cells: cells.length === 0 ? EMPTY : cells,
      raw: cells.length === 0 ? ABSENT_ROW : (raw ?? null),
      bytes: size,
      hot: false,
      live: true,
      deriver: null,
      derived: null,
    };
    this.map.set(key, e);
    this.order.push(e);
    this.bytes += size;
    this.evict();
  }

  /**
   * Caches a row just written as its encoded bytes only, in the second tier (ABSENT_ROW: the write
   * deleted it), replacing what either tier held (without a second tier: forgetting it). Decoded
   * cells made for every written row were a young-generation collection's main survivors: they
   * outlive a scavenge or two in the cache, then die when the row is written again or evicted, and
   * many written rows (postings, exports, anchors) are not read again before that. A written row
   * read again is decoded then, from this copy, and enters the decoded tier.
   */
  setEncoded(key: string, raw: Uint8Array): void {
    const e = this.map.get(key);
    if (e !== undefined) this.drop(e);
    this.encoded.put(key, raw); // replaces the tier's own record of the key, if any
  }

  private evict(): void {
    while (this.bytes > this.budgetBytes) {
      const oldest = this.order.shift();
      if (oldest === undefined) break;
      if (!oldest.live) continue;
      if (oldest.hot) {
        oldest.hot = false;
        this.order.push(oldest); // second chance
      } else {
        if (oldest.raw !== null) this.encoded.put(oldest.key, oldest.raw);
        this.drop(oldest);
      }
    }
    // Rows rewritten over and over leave dead entries behind without evicting anything.
    if (this.order.size > 2 * this.map.size + 1024) this.order.retain((x) => x.live);
  }

  /**
   * The encoded row of `key` if the second tier holds it (ABSENT_ROW: absent), removed from that
   * tier: the caller decodes it and `set`s it back into this one. Undefined if not there.
   */
  takeEncoded(key: string): Uint8Array | undefined {
    return this.encoded.take(key);
  }

  delete(key: string): void {
    const e = this.map.get(key);
    if (e !== undefined) this.drop(e);
    this.encoded.delete(key);
  }

  clear(): void {
    for (const e of this.map.values()) e.live = false;
    this.map.clear();
    this.order.drain();
    this.bytes = 0;
    this.encoded.clear();
  }

  private drop(e: Entry): void {
    e.live = false;
    // The queue keeps dead entries until they reach its head or it is compacted (up to twice as
    // many as live ones, for rows rewritten over and over): they must not keep their rows alive,
    // or a cache of such rows holds up to ~3x its budget.
    e.cells = EMPTY;
    e.raw = null;
    e.deriver = null;
    e.derived = null;
    this.map.delete(e.key);
    this.bytes -= e.bytes;
  }
}
