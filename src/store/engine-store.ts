/**
 * The Bigtable model over a KvEngine: the `Store` both `memory:` and `file:DIR` are.
 *
 * Layout (key-layout.ts, row-codec.ts): one engine entry per (table, locality group, row) holding
 * that row's cells of that group. A row mutation reads the touched groups, applies the mutations
 * and the GC rules, and writes the changed groups back in ONE engine batch: row atomicity across
 * groups comes from the batch, isolation from the per-row latch (row-latch.ts), durability from
 * the engine's group commit. A scan of one locality group reads only that group's keys.
 *
 * Concurrency contract:
 * - Writers to one row are serialized by its latch; the latch is held until the engine write has
 *   resolved (durable), then the row cache is updated.
 * - Readers take no latch: a synchronous engine read is atomic with respect to JS, and every
 *   write lands in one atomic engine batch, so a reader sees a row mutation entirely or not at all.
 * - Admin operations that rewrite or drop data raise the table's barrier, wait until in-flight
 *   writes drain, do their work, and lower it; writes arriving meanwhile wait at the barrier.
 */
import { applyMutations } from './apply-mutations.js';
import { bytesKey, compareBytes, keyBytes } from './bytes.js';
import { cellsBytes, makeCell, mergeGroups, upsertCell } from './cells.js';
import { StoreError, keyHex } from './errors.js';
import { compileFilter, type CompiledFilter } from './filter/row-filter.js';
import { collectColumn, gcRuleHasMaxAge, validateGcRule } from './gc-rule.js';
import { CATALOG_KEY, prefixEnd, rowKeyFrom, rowKeyOf, tableBounds } from './key-layout.js';
import type { KvEngine, KvOp } from './kv-engine.js';
import { ABSENT_ROW } from './encoded-row-cache.js';
import { KeyFilter } from './key-filter.js';
import { RowCache } from './row-cache.js';
import { decodeRow, encodeRow, encodeRowCells } from './row-codec.js';
import { RowLatches } from './row-latch.js';
import { ruleValue } from './rmw-rule.js';
import { planRowSet } from './row-set.js';
import { type AtomicRowsStore, DEFAULT_LIMITS, type StoreCacheStats, type StoreLimits, type StoreOptions } from './store.js';
import { type CatalogJson, DEFAULT_GROUP, TableState, assignGroups } from './table-state.js';
import { findTabletSplit } from './tablet-split.js';
import { Tablets } from './tablets.js';
import type {
  AtomicRowEntry,
  Bytes,
  Cell,
  CheckAndMutateRequest,
  DropRowRangeRequest,
  FamilyModification,
  FamilySpec,
  MutateRowsEntry,
  MutateRowsResult,
  Mutation,
  ReadModifyWriteRule,
  ReadRowsOptions,
  Row,
  RowFilter,
  RowKeySample,
  TableSpec,
  WriteOptions,
} from './types.js';
import {
  validateCheckAndMutateRequest,
  validateDropRowRange,
  validateFamilyName,
  validateMutations,
  validateModifications,
  validateReadRowsOptions,
  validateRowKey,
  validateRules,
  isDeferredWrite,
  tableTypeError,
  validateTableName,
} from './validate.js';

const EMPTY_CELLS: readonly Cell[] = Object.freeze([]);
/** The engine's data keys (key-layout.ts): every row of every table, not the catalog. */
const DATA_START = Uint8Array.of(0x01);
const DATA_END = Uint8Array.of(0x02);

/**
 * A row group's row-cache key: its engine key as latin1 (the engine key is built only on a miss).
 * The row as bytes or as its bytesKey.
 */
function cacheKey(t: TableState, gid: number, key: Bytes | string): string {
  return t.prefixLatin1(gid) + (typeof key === 'string' ? key : bytesKey(key));
}

/**
 * The tables of `entries`, each once, in name order: writers enter them in that order, so no two
 * wait for each other's tables. Most commits name one table, which needs no set or sort.
 */
function tablesInOrder(entries: readonly { readonly table: string }[]): string[] {
  const first = entries[0]?.table;
  if (first === undefined) return [];
  if (entries.every((e) => e.table === first)) return [first];
  return [...new Set(entries.map((e) => e.table))].sort();
}

/** One locality group of a row as a write loaded it for its condition (planRewrite reuses it). */
interface Loaded {
  readonly gid: number;
  readonly cells: readonly Cell[];
  /** Their cache key. */
  readonly ck: string;
}

/**
 * One locality group's planned write: its engine op, the cache entry to set after it, and the
 * size change. `cells` null: only the encoded row (ABSENT_ROW: deleted) is cached, in the row
 * cache's second tier (`setEncoded`); otherwise the cells, views into `raw` (undefined: deleted).
 * One object per group written, nothing per row: a Percolator commit writes dozens of one-group
 * rows, and their plans live until the group commit's fsync (past a scavenge or two).
 */
interface GroupWrite {
  readonly t: TableState;
  readonly key: Bytes;
  readonly op: KvOp;
  readonly ck: string;
  readonly cells: readonly Cell[] | null;
  readonly raw: Uint8Array | undefined;
  readonly delta: number;
}
const DEFERRED = { deferred: true } as const;

const DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024;
const DEFAULT_CACHE_BYTES = 128 * 1024 * 1024;

export interface EngineStoreOptions extends StoreOptions {
  /** Decoded-row cache budget in bytes (0 disables both tiers). */
  readonly cacheBytes?: number;
  /**
   * Budget of the row cache's second tier, rows the decoded tier evicted kept encoded
   * (encoded-row-cache.ts). Default a quarter of `cacheBytes`; 0 disables it.
   */
  readonly encodedCacheBytes?: number;
}

/** Engine point reads per `table/locality group`: rows found, rows absent (EngineStore.engineReadsByGroup). */
export type EngineReadsByGroup = Record<string, { readonly found: number; readonly absent: number }>;

export class EngineStore implements AtomicRowsStore {
  readonly url: string;
  private readonly engine: KvEngine;
  readonly limits: StoreLimits;
  private readonly splitBytes: number;
  private readonly now: () => number;
  private readonly cache: RowCache;
  /** Every engine key written or found at open (key-filter.ts): proves rows absent without a read. */
  private keys = new KeyFilter();
  private keysKnown: Promise<void> = Promise.resolve();
  private readonly latches = new RowLatches();
  private readonly tables = new Map<string, TableState>();
  private readonly filters = new WeakMap<RowFilter, CompiledFilter>();
  private nextTableId = 1;
  /** The catalog as the engine holds it (JSON), null before the first is loaded or written. */
  private savedCatalog: string | null = null;
  private adminTail: Promise<unknown> = Promise.resolve();
  private closed = false;
  private gcTimer: NodeJS.Timeout | null = null;
  private background = new Set<Promise<unknown>>();
  /** Tablet splits done, by how their point was found (estimateSplit / measureSplit). */
  readonly splits = { estimated: 0, measured: 0 };
  /** Row lookups (loadCached, readDerivedSync) and how the misses were answered (cacheStats). */
  private lookups = 0;
  private readonly misses = { encoded: 0, absent: 0, engine: 0 };

  private constructor(engine: KvEngine, url: string, options: EngineStoreOptions) {
    this.engine = engine;
    this.url = url;
    this.limits = Object.freeze({ ...DEFAULT_LIMITS, ...options.limits });
    this.splitBytes = options.tabletSplitBytes ?? DEFAULT_SPLIT_BYTES;
    this.now = options.nowMicros ?? (() => Date.now() * 1000);
    const cacheBytes = options.cacheBytes ?? DEFAULT_CACHE_BYTES;
    this.cache = new RowCache(cacheBytes, options.encodedCacheBytes ?? cacheBytes / 4);
  }

  static async open(engine: KvEngine, url: string, options: EngineStoreOptions = {}): Promise<EngineStore> {
    const store = new EngineStore(engine, url, options);
    const raw = engine.get(CATALOG_KEY);
    if (raw !== undefined) {
      let catalog: CatalogJson;
      try {
        store.savedCatalog = Buffer.from(raw).toString('utf8');
        catalog = JSON.parse(store.savedCatalog) as CatalogJson;
      } catch (e) {
        throw new StoreError('DATA_CORRUPTED', 'the catalog is not valid JSON', { url }, { cause: e });
      }
      if (catalog.version !== 1) throw new StoreError('DATA_CORRUPTED', `unknown catalog version ${String(catalog.version)}`, { url });
      store.nextTableId = catalog.nextTableId;
      for (const t of catalog.tables) store.tables.set(t.name, new TableState(t));
      for (const t of store.tables.values()) if (t.purges.length > 0) await store.runPurges(t);
    }
    // A filter the last close sealed, if the engine proves nothing was written since (kv-engine.ts);
    // otherwise the opening scan.
    const sealed = engine.takeSealed?.() ?? null;
    const loaded = sealed === null ? null : KeyFilter.deserialize(sealed);
    if (loaded !== null) store.keys = loaded;
    else {
      store.keysKnown = store.fillKeyFilter();
      store.track(store.keysKnown);
    }
    const gcMs = options.gcIntervalMs ?? 60_000;
    if (gcMs > 0) {
      store.gcTimer = setInterval(() => store.track(store.sweepGarbage().catch(() => undefined)), gcMs);
      store.gcTimer.unref();
    }
    return store;
  }

  /**
   * Resolves once the opening scan has put every key in the key filter (reads of absent rows then
   * no longer reach the engine), or has stopped without (the store closed).
   */
  whenKeysKnown(): Promise<void> {
    return this.keysKnown;
  }

  /**
   * Adds every data key the engine holds to the key filter, then lets reads trust it. Keys written
   * meanwhile are added by their writes (planRewrite), so none is missed: the scan's snapshot has
   * every key written before it, the writes every key after. Stops (the filter never becomes
   * ready) if the store closes or the scan fails.
   */
  private async fillKeyFilter(): Promise<void> {
    try {
      for await (const batch of this.engine.iterate({ gte: DATA_START, lt: DATA_END, keysOnly: true })) {
        if (this.closed) return;
        for (const e of batch) this.keys.add(bytesKey(e.key));
      }
      this.keys.ready = true;
    } catch {
      // Reads keep asking the engine.
    }
  }

  // ------------------------------------------------------------------------------------------
  // Plumbing

  private checkOpen(): void {
    if (this.closed) throw new StoreError('STORE_CLOSED', `the store ${this.url} is closed`, { url: this.url });
  }

  private table(name: string): TableState {
    this.checkOpen();
    const t = this.tables.get(name);
    if (t === undefined) {
      if (typeof name !== 'string') throw tableTypeError(name);
      throw new StoreError('TABLE_NOT_FOUND', `table ${JSON.stringify(name)} does not exist`, { table: name });
    }
    return t;
  }

  /** Enters a write on `name`, waiting at an admin barrier if one is up. */
  private async enterWrite(name: string): Promise<TableState> {
    let t = this.table(name);
    while (t.barrier !== null) {
      await t.barrier;
      t = this.table(name);
    }
    t.inflight++;
    t.entered++;
    return t;
  }

  writeActivity(table: string): { readonly entered: number; readonly inflight: number } | null {
    const t = this.tables.get(table);
    return t === undefined ? null : { entered: t.entered, inflight: t.inflight };
  }

  private leaveWrite(t: TableState): void {
    t.inflight--;
    if (t.inflight === 0 && t.onDrained !== null) t.onDrained();
  }

  private track(p: Promise<unknown>): void {
    this.background.add(p);
    void p.finally(() => this.background.delete(p));
  }

  private compile(filter: RowFilter | undefined): CompiledFilter | null {
    if (filter === undefined) return null;
    let f = this.filters.get(filter);
    if (f === undefined) {
      f = compileFilter(filter);
      this.filters.set(filter, f);
    }
    return f;
  }

  private serverMicros = (): number => Math.floor(this.now() / 1000) * 1000;

  /**
   * One locality group of one row, decoded, from the cache or the engine. `writing`: the caller
   * loads it to rewrite it, and an absent row is then not cached (the write caches what it writes;
   * most rows a transaction writes are new — postings, anchors — and caching their absence first
   * cost a decoded-tier entry, and the eviction it caused, per row).
   */
  private loadGroup(t: TableState, gid: number, key: Bytes, writing = false): readonly Cell[] {
    return this.loadCached(t, gid, key, cacheKey(t, gid, key), writing);
  }

  /** loadGroup with the cache key `ck` already made (cacheKey). */
  private loadCached(t: TableState, gid: number, key: Bytes, ck: string, writing: boolean): readonly Cell[] {
    this.lookups++;
    return this.cache.get(ck) ?? this.loadMiss(t, gid, key, ck, writing);
  }

  /** loadGroup past a miss in the decoded cache: the encoded tier or the engine, cached under `ck`. */
  private loadMiss(t: TableState, gid: number, key: Bytes, ck: string, writing = false): readonly Cell[] {
    let raw = this.cache.takeEncoded(ck);
    if (raw !== undefined) this.misses.encoded++;
    // Absent as the encoded tier remembers it, or as the key filter proves it: no engine read.
    if (raw === ABSENT_ROW || (raw === undefined && this.keys.ready && !this.keys.mayContain(ck))) {
      if (raw === undefined) this.misses.absent++;
      if (!writing) this.cache.set(ck, EMPTY_CELLS, 0);
      return EMPTY_CELLS;
    }
    if (raw === undefined) {
      this.misses.engine++;
      raw = this.engine.get(rowKeyOf(t.prefix(gid), key));
      let n = t.engineReads.get(gid);
      if (n === undefined) t.engineReads.set(gid, (n = [0, 0]));
      n[raw === undefined ? 1 : 0]++;
    }
    const cells = raw === undefined ? EMPTY_CELLS : this.decode(t, raw, key);
    if (!writing || raw !== undefined) this.cache.set(ck, cells, raw?.byteLength ?? 0, raw);
    return cells;
  }

  private decode(t: TableState, raw: Uint8Array, key: Bytes): readonly Cell[] {
    const cells = decodeRow(raw, () => ({ table: t.name, row: keyHex(key) }));
    // Cells of families dropped while a purge was interrupted are invisible.
    if (t.purges.length === 0) return cells;
    return cells.filter((c) => t.familyGroup.has(c.family));
  }

  private loadRow(t: TableState, key: Bytes, groups: readonly number[], writing = false): readonly Cell[] {
    if (groups.length === 1) return this.loadGroup(t, groups[0] as number, key, writing);
    return mergeGroups(groups.map((g) => this.loadGroup(t, g, key, writing)));
  }

  /** Applies GC rules to canonical cells (read side: collected cells are never visible). */
  /** `now` (µs) defaults to the clock, read only when the table has GC rules at all. */
  private collect(t: TableState, cells: readonly Cell[], now?: number): readonly Cell[] {
    if (t.rules.size === 0 || cells.length === 0) return cells;
    now ??= this.now();
    let out: Cell[] | null = null;
    let i = 0;
    while (i < cells.length) {
      const first = cells[i] as Cell;
      let j = i + 1;
      while (
        j < cells.length &&
        (cells[j] as Cell).family === first.family &&
        compareBytes((cells[j] as Cell).qualifier, first.qualifier) === 0
      )
        j++;
      const rule = t.rules.get(first.family);
      // Fast path (scans): a column's single version survives every rule without a max age.
      if (rule === undefined || (j - i === 1 && !t.timeRules.has(first.family))) {
        if (out !== null) for (let k = i; k < j; k++) out.push(cells[k] as Cell);
        i = j;
        continue;
      }
      const run = cells.slice(i, j);
      const kept = collectColumn(rule, run, now);
      if (kept.length !== run.length && out === null) out = cells.slice(0, i) as Cell[];
      if (out !== null) for (const c of kept) out.push(c);
      i = j;
    }
    return out ?? cells;
  }

  /** Read-modify-write of one row under its latch. `mutate` gets the row's current cells (GC applied). */
  private async rewriteRow(
    t: TableState,
    key: Bytes,
    groups: readonly number[],
    mutate: (cells: readonly Cell[]) => readonly Cell[] | null,
    deferred = false,
  ): Promise<void> {
    const writes: GroupWrite[] = [];
    this.planRewrite(t, key, groups, mutate, writes);
    if (writes.length > 0) await this.writePlans(writes, deferred);
  }

  /**
   * What a row mutation writes: the changed groups' engine ops and new cache entries, appended to
   * `out` (nothing when the row does not change). Pure with respect to the store (the caller holds
   * the row's latch and writes the plan). `loaded`: one group's cells as the caller loaded them
   * under the same latch, with nothing in between. `rowKey`: `key`'s bytesKey, if the caller has it.
   */
  private planRewrite(
    t: TableState,
    key: Bytes,
    groups: readonly number[],
    mutate: (cells: readonly Cell[]) => readonly Cell[] | null,
    out: GroupWrite[],
    loaded?: Loaded,
    rowKey?: string,
  ): void {
    const now = this.now();
    const bk = rowKey ?? key;
    if (groups.length === 1) {
      // Most rows live in one group: no per-group arrays.
      const gid = groups[0] as number;
      const given = loaded !== undefined && loaded.gid === gid ? loaded : undefined;
      const ck = given !== undefined ? given.ck : cacheKey(t, gid, bk);
      const old = given !== undefined ? given.cells : this.loadCached(t, gid, key, ck, true);
      const mutated = mutate(this.collect(t, old, now));
      if (mutated === null) return;
      const next = this.collect(t, mutated, now);
      if (next !== old && (next.length > 0 || old.length > 0)) out.push(this.groupWrite(t, key, gid, ck, old, next));
      return;
    }
    const cks = groups.map((g) => cacheKey(t, g, bk));
    const before = groups.map((g, i) =>
      loaded !== undefined && loaded.gid === g ? loaded.cells : this.loadCached(t, g, key, cks[i] as string, true),
    );
    const mutated = mutate(this.collect(t, mergeGroups(before), now));
    if (mutated === null) return;
    const next = this.collect(t, mutated, now);
    for (let i = 0; i < groups.length; i++) {
      const gid = groups[i] as number;
      const old = before[i] as readonly Cell[];
      const mine = next.filter((c) => t.familyGroup.get(c.family) === gid);
      if (mine.length > 0 || old.length > 0) out.push(this.groupWrite(t, key, gid, cks[i] as string, old, mine));
    }
  }

  /** The write that replaces one group's cells `old` by `mine` (not both empty). */
  private groupWrite(t: TableState, key: Bytes, gid: number, ck: string, old: readonly Cell[], mine: readonly Cell[]): GroupWrite {
    const ek = rowKeyOf(t.prefix(gid), key);
    const delta = cellsBytes(mine) - cellsBytes(old);
    // With a second tier, a written row is cached encoded only (row-cache.ts `setEncoded` says why).
    const encodedOnly = this.cache.hasEncodedTier;
    if (mine.length === 0) {
      const op: KvOp = { type: 'del', key: ek };
      return encodedOnly
        ? { t, key, op, ck, cells: null, raw: ABSENT_ROW, delta }
        : { t, key, op, ck, cells: EMPTY_CELLS, raw: undefined, delta };
    }
    // Before the write can be seen: a reader trusting the filter must find the key in it.
    if (old.length === 0) this.keys.add(ck);
    if (encodedOnly) {
      const value = encodeRow(mine);
      return { t, key, op: { type: 'put', key: ek, value }, ck, cells: null, raw: value, delta };
    }
    // Without a second tier, cache views into the encoded row, not `mine`: the mutation's values
    // are views into the caller's buffers (pool slabs, scratch space) that the budget cannot see.
    const { value, cells } = encodeRowCells(mine);
    return { t, key, op: { type: 'put', key: ek, value }, ck, cells, raw: value, delta };
  }

  /** Writes group plans in ONE engine batch (atomic across them), then updates the cache. */
  private async writePlans(writes: readonly GroupWrite[], deferred: boolean): Promise<void> {
    const ops = writes.length === 1 ? [(writes[0] as GroupWrite).op] : writes.map((w) => w.op);
    try {
      await this.engine.write(ops, deferred ? DEFERRED : undefined);
    } catch (e) {
      for (const w of writes) this.cache.delete(w.ck);
      throw e;
    }
    for (const w of writes) {
      if (w.cells === null) this.cache.setEncoded(w.ck, w.raw ?? ABSENT_ROW);
      else this.cache.set(w.ck, w.cells, w.raw?.byteLength ?? 0, w.raw);
      this.account(w.t, w.key, w.delta);
    }
  }

  private groupsOfMutations(t: TableState, mutations: readonly Mutation[]): readonly number[] {
    return t.groupsForMutations(mutations);
  }

  /** The row's latch key; `key` as bytes or as its bytesKey. */
  private latchKey(t: TableState, key: Bytes | string): string {
    return `${t.id}:${typeof key === 'string' ? key : bytesKey(key)}`;
  }

  // ------------------------------------------------------------------------------------------
  // Tablets

  private account(t: TableState, key: Bytes, delta: number): void {
    this.maybeSplit(t, t.tablets.account(key, delta));
  }

  /**
   * Splits tablet i in the background if it holds more than splitBytes. When a split ends, both
   * halves are checked again: one may still be too large (the tablet grew during the split), and
   * without this it would wait for its next write.
   */
  private maybeSplit(t: TableState, i: number): void {
    if ((t.tablets.bytes[i] as number) <= this.splitBytes || this.closed || this.tables.get(t.name) !== t) return;
    const start = t.tablets.starts[i] as Uint8Array;
    if (t.tablets.splitting.has(start)) return;
    t.tablets.splitting.add(start);
    this.track(
      this.splitTablet(t, start)
        .finally(() => t.tablets.splitting.delete(start))
        .then((split) => {
          // Only after a split happened: an unsplittable tablet (one huge row) must not loop.
          const at = split ? t.tablets.starts.indexOf(start) : -1;
          if (at < 0) return;
          this.maybeSplit(t, at);
          if (at + 1 < t.tablets.starts.length) this.maybeSplit(t, at + 1);
        })
        // A failed split (the store closing under it) changes nothing; the next write retries.
        .catch(() => undefined),
    );
  }

  /**
   * Inserts a boundary where about half of the tablet's bytes lie (tablet-split.ts finds it), and
   * saves the catalog. False when nothing was split (the tablet is one row, or went away).
   */
  private async splitTablet(t: TableState, start: Uint8Array): Promise<boolean> {
    const i = t.tablets.starts.indexOf(start);
    if (i < 0 || this.closed) return false;
    const end = t.tablets.end(i);
    const ranges = t.groupIds.map((gid) => {
      const prefix = t.prefix(gid);
      return { prefix, gte: rowKeyOf(prefix, start), lt: end !== undefined ? rowKeyOf(prefix, end) : prefixEnd(prefix) };
    });
    const point = await findTabletSplit(this.engine, ranges, start, t.tablets.bytes[i] as number);
    if (point === null) return false;
    const idx = t.tablets.starts.indexOf(start);
    if (idx < 0 || this.closed || this.tables.get(t.name) !== t) return false;
    // The halves share what the tablet was charged (and was charged since the split began): one
    // measure of a tablet's size, the cell bytes writes charge, whichever way the point was found.
    const charged = t.tablets.bytes[idx] as number;
    const left = Math.round(charged * point.leftShare);
    if (!t.tablets.split(idx, point.key, left, charged - left)) return false;
    this.splits[point.how]++;
    await this.admin(() => this.saveCatalog());
    return true;
  }

  // ------------------------------------------------------------------------------------------
  // Catalog and admin

  /** Serializes admin operations (catalog changes) with respect to each other. */
  private admin<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.adminTail.then(fn, fn);
    this.adminTail = run.catch(() => undefined);
    return run;
  }

  private catalogJson(): CatalogJson {
    return { version: 1, nextTableId: this.nextTableId, tables: [...this.tables.values()].map((t) => t.toJSON()) };
  }

  /**
   * Writes the catalog unless the engine holds it as it is: a process that only read (the CLI's
   * get, scan, search) then writes nothing at all, where each close used to log a catalog LevelDB
   * then flushed into a table of its own at the next open, a compaction every few commands.
   */
  private async saveCatalog(): Promise<void> {
    const json = JSON.stringify(this.catalogJson());
    if (json === this.savedCatalog) return;
    await this.engine.write([{ type: 'put', key: CATALOG_KEY, value: Buffer.from(json) }]);
    this.savedCatalog = json;
  }

  /** Raises the table's barrier, waits for in-flight writes, runs fn, lowers it. */
  private async exclusive<T>(t: TableState, fn: () => Promise<T>): Promise<T> {
    let lower!: () => void;
    t.barrier = new Promise<void>((r) => {
      lower = r;
    });
    try {
      if (t.inflight > 0) {
        await new Promise<void>((r) => {
          t.onDrained = r;
        });
        t.onDrained = null;
      }
      return await fn();
    } finally {
      t.barrier = null;
      lower();
    }
  }

  private validateSpec(name: string, spec: TableSpec): void {
    if (spec === null || typeof spec !== 'object' || spec.families === null || typeof spec.families !== 'object') {
      throw new StoreError('INVALID_ARGUMENT', 'a table spec needs a families object', { table: name });
    }
    for (const [family, fs] of Object.entries(spec.families)) this.validateFamily(name, family, fs);
  }

  private validateFamily(table: string, family: string, fs: FamilySpec): void {
    validateFamilyName(family, table);
    if (fs === null || typeof fs !== 'object')
      throw new StoreError('INVALID_ARGUMENT', `family ${family}: spec must be an object`, { table, family });
    validateGcRule(fs.gcRule);
    if (fs.localityGroup !== undefined && (typeof fs.localityGroup !== 'string' || !/^[-_.a-zA-Z0-9]{1,64}$/.test(fs.localityGroup))) {
      throw new StoreError('INVALID_NAME', `invalid locality group name ${JSON.stringify(fs.localityGroup)}`, { table, family });
    }
  }

  async createTable(name: string, spec: TableSpec): Promise<void> {
    this.checkOpen();
    validateTableName(name);
    this.validateSpec(name, spec);
    await this.admin(async () => {
      this.checkOpen();
      if (this.tables.has(name)) throw new StoreError('TABLE_EXISTS', `table ${JSON.stringify(name)} already exists`, { table: name });
      const families = structuredClone(spec.families);
      const t = new TableState({
        name,
        id: this.nextTableId++,
        spec: { families },
        groups: assignGroups({ families }),
        tablets: new Tablets().toJSON(),
        purges: [],
      });
      this.tables.set(name, t);
      try {
        await this.saveCatalog();
      } catch (e) {
        this.tables.delete(name);
        throw e;
      }
    });
  }

  async deleteTable(name: string): Promise<void> {
    const bounds = await this.admin(async () => {
      const t = this.table(name);
      await this.exclusive(t, async () => {
        this.tables.delete(name);
        await this.saveCatalog();
        this.cache.clear();
        await this.engine.clear(tableBounds(t.id));
      });
      return tableBounds(t.id);
    });
    await this.reclaim([bounds]);
  }

  /**
   * After a deletion: the engine gives the range's disk space back (an LSM engine would keep it
   * until compactions reach it). Outside `admin`, so other tables' admin calls need not wait.
   */
  private async reclaim(ranges: readonly { readonly gte: Uint8Array; readonly lt: Uint8Array }[]): Promise<void> {
    for (const r of ranges) await this.engine.reclaim?.(r.gte, r.lt);
  }

  async listTables(): Promise<string[]> {
    this.checkOpen();
    return [...this.tables.keys()].sort();
  }

  async getTable(name: string): Promise<TableSpec> {
    return structuredClone(this.table(name).spec);
  }

  async modifyColumnFamilies(name: string, modifications: readonly FamilyModification[]): Promise<TableSpec> {
    return this.admin(async () => {
      const t = this.table(name);
      validateModifications(modifications, name);
      const families: Record<string, FamilySpec> = structuredClone(t.spec.families) as Record<string, FamilySpec>;
      const dropped: string[] = [];
      for (const m of modifications) {
        const id = m?.id;
        if ('create' in m) {
          this.validateFamily(name, id, m.create);
          if (Object.hasOwn(families, id))
            throw new StoreError('FAMILY_EXISTS', `column family ${id} already exists in table ${name}`, { table: name, family: id });
          families[id] = structuredClone(m.create);
        } else if ('update' in m) {
          this.validateFamily(name, id, m.update);
          const old = families[id];
          if (old === undefined)
            throw new StoreError('FAMILY_NOT_FOUND', `column family ${id} does not exist in table ${name}`, { table: name, family: id });
          const group = m.update.localityGroup ?? old.localityGroup ?? DEFAULT_GROUP;
          if (group !== (old.localityGroup ?? DEFAULT_GROUP)) {
            throw new StoreError('INVALID_ARGUMENT', `moving family ${id} to another locality group is not supported`, {
              table: name,
              family: id,
            });
          }
          families[id] = { ...structuredClone(m.update), localityGroup: old.localityGroup };
          if (families[id]?.localityGroup === undefined) delete (families[id] as { localityGroup?: string }).localityGroup;
        } else if ('drop' in m) {
          if (families[id] === undefined)
            throw new StoreError('FAMILY_NOT_FOUND', `column family ${id} does not exist in table ${name}`, { table: name, family: id });
          dropped.push(id);
          delete families[id];
        } else {
          throw new StoreError('INVALID_ARGUMENT', 'a modification needs create, update or drop', { table: name, family: id });
        }
      }
      const purges: [string, number][] = [...t.purges];
      for (const f of dropped) {
        const gid = t.familyGroup.get(f);
        if (gid !== undefined && families[f] === undefined) purges.push([f, gid]);
      }
      // A family re-created in the same call keeps nothing of the dropped one: purge it first.
      return this.exclusive(t, async () => {
        const spec: TableSpec = { families };
        const next = new TableState(
          { name, id: t.id, spec, groups: assignGroups(spec, t.groups), tablets: t.tablets.toJSON(), purges },
          t.tablets,
        );
        this.tables.set(name, next);
        await this.saveCatalog();
        this.cache.clear();
        if (next.purges.length > 0) await this.runPurges(next);
        return structuredClone(spec);
      });
    });
  }

  /** Removes cells of dropped families from storage, then forgets the purge. */
  private async runPurges(t: TableState): Promise<void> {
    const rewritten: { gte: Uint8Array; lt: Uint8Array }[] = [];
    for (const [family, gid] of t.purges) {
      const prefix = t.prefixes.get(gid);
      if (prefix === undefined) continue;
      const end = prefixEnd(prefix);
      if (end !== undefined) rewritten.push({ gte: prefix, lt: end });
      for await (const batch of this.engine.iterate({ gte: prefix, lt: prefixEnd(prefix) })) {
        const ops: KvOp[] = [];
        for (const e of batch) {
          const cells = decodeRow(e.value, { table: t.name });
          const kept = cells.filter((c) => c.family !== family);
          if (kept.length === cells.length) continue;
          ops.push(
            kept.length === 0
              ? { type: 'del', key: Uint8Array.prototype.slice.call(e.key) }
              : { type: 'put', key: Uint8Array.prototype.slice.call(e.key), value: encodeRow(kept) },
          );
        }
        if (ops.length > 0) await this.engine.write(ops);
      }
    }
    t.purges.length = 0;
    this.cache.clear();
    await this.saveCatalog();
    // The rows were rewritten without the family; the old values still sit under them on disk.
    await this.reclaim(rewritten);
  }

  async dropRowRange(name: string, request: DropRowRangeRequest): Promise<void> {
    const cleared = await this.admin(async () => {
      const t = this.table(name);
      const prefixKey = validateDropRowRange(request, name);
      const ranges: { gte: Uint8Array; lt: Uint8Array }[] = [];
      await this.exclusive(t, async () => {
        for (const gid of new Set(Object.values(t.groups))) {
          const gp = t.prefix(gid);
          const gte = prefixKey === null ? gp : rowKeyOf(gp, prefixKey);
          const lt = prefixEnd(gte);
          await this.engine.clear({ gte, lt });
          if (lt !== undefined) ranges.push({ gte, lt });
        }
        this.cache.clear();
        if (prefixKey === null) {
          t.tablets.reset();
          await this.saveCatalog();
        }
      });
      return ranges;
    });
    await this.reclaim(cleared);
  }

  // ------------------------------------------------------------------------------------------
  // Data: reads

  async readRow(table: string, key: Bytes, filter?: RowFilter): Promise<Row | null> {
    return this.readRowSync(table, key, filter);
  }

  readRowSync(table: string, key: Bytes, filter?: RowFilter): Row | null {
    const t = this.table(table);
    validateRowKey(key, this.limits, table);
    const f = this.compile(filter);
    const groups = t.groupsFor(f === null ? null : f.families);
    if (groups.length === 0) return null;
    const cells = this.collect(t, this.loadRow(t, key, groups));
    const out = f === null ? cells : f.apply(key, cells);
    return out.length === 0 ? null : { key, cells: out };
  }

  /**
   * Point reads asked of the engine since the store opened — the row caches' misses that the key
   * filter could not answer — per `table/locality group`, found or absent. Tables deleted since
   * are not listed. For diagnostics (`bench webindex`): which rows a workload reads cold.
   */
  engineReadsByGroup(): EngineReadsByGroup {
    const out: EngineReadsByGroup = {};
    for (const t of this.tables.values()) {
      for (const [group, gid] of Object.entries(t.groups)) {
        const n = t.engineReads.get(gid);
        if (n !== undefined) out[`${t.name}/${group}`] = { found: n[0], absent: n[1] };
      }
    }
    return out;
  }

  cacheStats(): StoreCacheStats {
    const u = this.cache.usage();
    const { encoded, absent, engine } = this.misses;
    return {
      decoded: { budgetBytes: u.budgetBytes, bytes: u.bytes, rows: u.rows },
      encoded: { budgetBytes: u.encodedBudgetBytes },
      lookups: { total: this.lookups, decoded: this.lookups - encoded - absent - engine, encoded, absent, engine },
    };
  }

  readCellsSync(table: string, key: Bytes, families: readonly string[]): readonly Cell[] {
    const t = this.table(table);
    validateRowKey(key, this.limits, table);
    const groups = t.groupsForList(families);
    return groups.length === 0 ? EMPTY_CELLS : this.collect(t, this.loadRow(t, key, groups));
  }

  readDerivedSync<T extends object>(
    table: string,
    key: Bytes | string,
    families: readonly string[],
    derive: (cells: readonly Cell[]) => T,
  ): T {
    const t = this.table(table);
    const isKey = typeof key === 'string';
    // A key's length is its byte count: only a bad one is turned into bytes, for the error.
    if (!isKey || key.length === 0 || key.length > this.limits.maxRowKeyBytes) validateRowKey(keyBytes(key), this.limits, table);
    const groups = t.groupsForList(families);
    // Kept with the cached row when the families live in one group and no GC rule can change
    // what a read returns as time passes.
    if (groups.length === 1 && t.rules.size === 0) {
      const gid = groups[0] as number;
      const ck = cacheKey(t, gid, key);
      this.lookups++;
      const hit = this.cache.derive(ck, derive);
      if (hit !== undefined) return hit;
      const cells = this.loadMiss(t, gid, keyBytes(key), ck);
      return this.cache.derive(ck, derive) ?? derive(cells);
    }
    return derive(groups.length === 0 ? EMPTY_CELLS : this.collect(t, this.loadRow(t, keyBytes(key), groups)));
  }

  readRows(table: string, options: ReadRowsOptions = {}): AsyncIterable<Row> {
    // Validate eagerly so bad input fails at the call, not at the first iteration.
    const t = this.table(table);
    validateReadRowsOptions(options, table);
    const f = this.compile(options.filter);
    const plan = planRowSet(options.rows, table);
    const limit = options.rowsLimit ?? 0;
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw new StoreError('INVALID_ARGUMENT', `rowsLimit must be a non-negative integer, got ${limit}`, { table });
    const reversed = options.reversed === true;
    const groups = t.groupsFor(f === null ? null : f.families);
    return this.scan(t, plan, f, groups, limit, reversed);
  }

  private async *scan(
    t: TableState,
    plan: ReturnType<typeof planRowSet>,
    f: CompiledFilter | null,
    groups: readonly number[],
    limit: number,
    reversed: boolean,
  ): AsyncGenerator<Row> {
    if (groups.length === 0) return;
    let emitted = 0;
    const intervals = reversed ? [...plan].reverse() : plan;
    for (const iv of intervals) {
      if (iv.point !== undefined) {
        this.checkOpen();
        const cells = this.collect(t, this.loadRow(t, iv.point, groups));
        const out = f === null ? cells : f.apply(iv.point, cells);
        if (out.length > 0) {
          yield { key: iv.point, cells: out };
          if (++emitted === limit) return;
        }
        continue;
      }
      if (groups.length === 1) {
        // One locality group (the common case): read engine batches directly, without the
        // per-row generator layers of the multi-group merge.
        const prefix = t.prefix(groups[0] as number);
        const range = {
          gte: iv.gte ? rowKeyOf(prefix, iv.gte) : prefix,
          lt: iv.lt ? rowKeyOf(prefix, iv.lt) : prefixEnd(prefix),
          reverse: reversed,
          // One engine entry per row here: a limited scan needs no more than the rows left.
          ...(limit > 0 ? { expect: limit - emitted } : {}),
        };
        for await (const batch of this.engine.iterate(range)) {
          this.checkOpen();
          const now = this.now();
          for (const e of batch) {
            const key = rowKeyFrom(e.key);
            const cells = this.collect(t, this.decode(t, e.value, key), now);
            const out = f === null ? cells : f.apply(key, cells);
            if (out.length === 0) continue;
            yield { key, cells: out };
            if (++emitted === limit) return;
          }
        }
        continue;
      }
      for await (const [key, cells0] of this.scanInterval(t, groups, iv.gte, iv.lt, reversed)) {
        const cells = this.collect(t, cells0);
        const out = f === null ? cells : f.apply(key, cells);
        if (out.length === 0) continue;
        yield { key, cells: out };
        if (++emitted === limit) return;
      }
    }
  }

  /** Rows of [gte, lt) across the given groups, merged by row key. */
  private async *scanInterval(
    t: TableState,
    groups: readonly number[],
    gte: Uint8Array | undefined,
    lt: Uint8Array | undefined,
    reversed: boolean,
  ): AsyncGenerator<[Uint8Array, readonly Cell[]]> {
    const streams = groups.map((gid) => {
      const prefix = t.prefix(gid);
      return this.groupRows(t, gte ? rowKeyOf(prefix, gte) : prefix, lt ? rowKeyOf(prefix, lt) : prefixEnd(prefix), reversed);
    });
    if (streams.length === 1) {
      yield* streams[0] as AsyncGenerator<[Uint8Array, readonly Cell[]]>;
      return;
    }
    const heads = await Promise.all(streams.map((s) => s.next()));
    try {
      for (;;) {
        let best: Uint8Array | null = null;
        for (const h of heads) {
          if (h.done) continue;
          const k = h.value[0];
          if (best === null || (reversed ? Buffer.compare(k, best) > 0 : Buffer.compare(k, best) < 0)) best = k;
        }
        if (best === null) return;
        const parts: (readonly Cell[])[] = [];
        for (let i = 0; i < heads.length; i++) {
          const h = heads[i] as IteratorResult<[Uint8Array, readonly Cell[]]>;
          if (!h.done && Buffer.compare(h.value[0], best) === 0) {
            parts.push(h.value[1]);
            heads[i] = await (streams[i] as AsyncGenerator<[Uint8Array, readonly Cell[]]>).next();
          }
        }
        yield [best, mergeGroups(parts)];
      }
    } finally {
      await Promise.all(streams.map((s) => s.return(undefined)));
    }
  }

  private async *groupRows(
    t: TableState,
    gte: Uint8Array,
    lt: Uint8Array | undefined,
    reverse: boolean,
  ): AsyncGenerator<[Uint8Array, readonly Cell[]]> {
    for await (const batch of this.engine.iterate({ gte, lt, reverse })) {
      this.checkOpen();
      for (const e of batch) {
        const key = rowKeyFrom(e.key);
        yield [key, this.decode(t, e.value, key)];
      }
    }
  }

  // ------------------------------------------------------------------------------------------
  // Data: writes

  async mutateRow(table: string, key: Bytes, mutations: readonly Mutation[], options?: WriteOptions): Promise<void> {
    const spec = this.table(table).spec;
    validateRowKey(key, this.limits, table);
    validateMutations(mutations, spec, table, key, this.limits);
    const deferred = isDeferredWrite(options, table);
    const t = await this.enterWrite(table);
    try {
      // The spec may have changed while waiting at a barrier.
      if (t.spec !== spec) validateMutations(mutations, t.spec, table, key, this.limits);
      const groups = this.groupsOfMutations(t, mutations);
      await this.latches.run(this.latchKey(t, key), () =>
        this.rewriteRow(t, key, groups, (cells) => applyMutations(cells, mutations, this.serverMicros), deferred),
      );
    } finally {
      this.leaveWrite(t);
    }
  }

  async mutateRows(table: string, entries: readonly MutateRowsEntry[], options?: WriteOptions): Promise<MutateRowsResult[]> {
    this.table(table);
    isDeferredWrite(options, table); // bad options fail the call, not each entry
    if (!Array.isArray(entries)) throw new StoreError('INVALID_ARGUMENT', 'mutateRows needs an array of entries', { table });
    return Promise.all(
      entries.map(async (e, index): Promise<MutateRowsResult> => {
        try {
          // As bigtable:// answers it: that entry fails, the others go on.
          if (e === null || typeof e !== 'object') throw new StoreError('INVALID_MUTATION', 'an entry must be an object', { table, index });
          await this.mutateRow(table, e.key, e.mutations, options);
          return { index };
        } catch (err) {
          if (err instanceof StoreError && err.code !== 'STORE_CLOSED' && err.code !== 'TABLE_NOT_FOUND') return { index, error: err };
          throw err;
        }
      }),
    );
  }

  async checkAndMutateRow(table: string, key: Bytes, request: CheckAndMutateRequest): Promise<boolean> {
    const spec = this.table(table).spec;
    validateRowKey(key, this.limits, table);
    validateCheckAndMutateRequest(request, table, key);
    const deferred = isDeferredWrite(request, table, true);
    const trueM = request.trueMutations ?? [];
    const falseM = request.falseMutations ?? [];
    validateMutations(trueM, spec, table, key, this.limits, true);
    validateMutations(falseM, spec, table, key, this.limits, true);
    const predicate = this.compile(request.predicateFilter);
    const t = await this.enterWrite(table);
    try {
      if (t.spec !== spec) {
        validateMutations(trueM, t.spec, table, key, this.limits, true);
        validateMutations(falseM, t.spec, table, key, this.limits, true);
      }
      const readGroups = t.groupsFor(predicate === null ? null : predicate.families);
      const trueGroups = this.groupsOfMutations(t, trueM);
      const falseGroups = this.groupsOfMutations(t, falseM);
      return await this.latches.run(this.latchKey(t, key), async () => {
        const cells = this.collect(t, this.loadRow(t, key, readGroups));
        const matched = predicate === null ? cells.length > 0 : predicate.apply(key, cells).length > 0;
        const muts = matched ? trueM : falseM;
        if (muts.length > 0) {
          await this.rewriteRow(t, key, matched ? trueGroups : falseGroups, (c) => applyMutations(c, muts, this.serverMicros), deferred);
        }
        return matched;
      });
    } finally {
      this.leaveWrite(t);
    }
  }

  // ------------------------------------------------------------------------------------------
  // The atomic multi-row extension (AtomicRowsStore)

  /** Shares held (markShared calls not yet released): shared while any is. */
  private shares = 0;

  get shared(): boolean {
    return this.shares > 0;
  }

  markShared(): () => void {
    this.shares++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.shares--;
    };
  }

  async sync(): Promise<void> {
    this.checkOpen();
    await this.engine.write([]); // the engine's barrier: durable once everything before it is
  }

  writeFailure(): StoreError | null {
    return this.engine.writeFailure?.() ?? null;
  }

  resumeWrites(): Promise<StoreError | null> {
    // The caches hold only what the engine acknowledged: a failed write dropped its rows from them.
    return this.engine.resumeWrites?.() ?? Promise.resolve(this.writeFailure());
  }

  async checkAndMutateRows(entries: readonly AtomicRowEntry[], options?: WriteOptions): Promise<number> {
    if (!Array.isArray(entries)) throw new StoreError('INVALID_ARGUMENT', 'checkAndMutateRows needs an array of entries', {});
    const isDeferred = isDeferredWrite(options, entries[0]?.table ?? '');
    const specs = entries.map((e) => {
      const spec = this.table(e.table).spec;
      validateRowKey(e.key, this.limits, e.table);
      validateMutations(e.mutations, spec, e.table, e.key, this.limits, true);
      return spec;
    });
    const predicates = entries.map((e) =>
      e.predicateFilter === undefined || e.veto !== undefined ? null : this.compile(e.predicateFilter),
    );
    const tableNames = tablesInOrder(entries);
    const entered: TableState[] = [];
    try {
      for (const name of tableNames) entered.push(await this.enterWrite(name));
      const states = new Map(entered.map((t) => [t.name, t]));
      // Each row's bytesKey once: its latch key and cache keys are made from it.
      const rowKeys = entries.map((e) => bytesKey(e.key));
      const latchKeys = entries.map((e, i) => this.latchKey(states.get(e.table) as TableState, rowKeys[i] as string));
      if (new Set(latchKeys).size !== latchKeys.length) {
        throw new StoreError('INVALID_ARGUMENT', 'checkAndMutateRows: two entries name the same row', {});
      }
      entries.forEach((e, i) => {
        const t = states.get(e.table) as TableState;
        if (t.spec !== specs[i]) validateMutations(e.mutations, t.spec, e.table, e.key, this.limits, true);
      });
      return await this.latches.runMany(latchKeys, async () => {
        const now = this.now();
        // Each entry's condition group as loaded for its test: its rewrite, in the same
        // synchronous step, starts from it instead of looking the row up again (Percolator's
        // conditions and writes are in one group: a second cache key and lookup a row saved).
        const loaded: (Loaded | undefined)[] = new Array(entries.length);
        for (let i = 0; i < entries.length; i++) {
          const e = entries[i] as AtomicRowEntry;
          const t = states.get(e.table) as TableState;
          const test = e.veto ?? predicates[i];
          if (test === null || test === undefined) continue;
          // A veto's families are a constant array: its groups are remembered.
          const groups = Array.isArray(test.families) ? t.groupsForList(test.families) : t.groupsFor(test.families);
          let cells: readonly Cell[];
          if (groups.length === 1) {
            const gid = groups[0] as number;
            const ck = cacheKey(t, gid, rowKeys[i] as string);
            cells = this.loadCached(t, gid, e.key, ck, e.mutations.length > 0);
            loaded[i] = { gid, cells, ck };
          } else cells = this.loadRow(t, e.key, groups, e.mutations.length > 0);
          const visible = this.collect(t, cells, now);
          if (e.veto !== undefined ? e.veto.test(visible) : (test as CompiledFilter).apply(e.key, visible).length > 0) return i;
        }
        const writes: GroupWrite[] = [];
        for (let i = 0; i < entries.length; i++) {
          const e = entries[i] as AtomicRowEntry;
          if (e.mutations.length === 0) continue;
          const t = states.get(e.table) as TableState;
          this.planRewrite(
            t,
            e.key,
            this.groupsOfMutations(t, e.mutations),
            (c) => applyMutations(c, e.mutations, this.serverMicros),
            writes,
            loaded[i],
            rowKeys[i],
          );
        }
        if (writes.length > 0) await this.writePlans(writes, isDeferred);
        return -1;
      });
    } finally {
      for (const t of entered) this.leaveWrite(t);
    }
  }

  async readModifyWriteRow(table: string, key: Bytes, rules: readonly ReadModifyWriteRule[]): Promise<Row> {
    const spec = this.table(table).spec;
    validateRowKey(key, this.limits, table);
    validateRules(rules, spec, table, key, this.limits);
    const t = await this.enterWrite(table);
    try {
      if (t.spec !== spec) validateRules(rules, t.spec, table, key, this.limits);
      const groups = t.groupsFor(new Set(rules.map((r) => r.familyName)));
      let result: Cell[] = [];
      await this.latches.run(this.latchKey(t, key), () =>
        this.rewriteRow(t, key, groups, (cells) => {
          let out: readonly Cell[] = cells;
          const touched = new Map<string, Cell>();
          const now = this.serverMicros();
          for (const r of rules) {
            const latest = out.find((c) => c.family === r.familyName && Buffer.compare(c.qualifier, r.columnQualifier) === 0);
            const value = ruleValue(r, latest?.value, table, key, this.limits.maxValueBytes);
            const ts = Math.max(now, latest?.timestamp ?? 0);
            const cell = makeCell(r.familyName, r.columnQualifier, ts, value);
            out = upsertCell(out, cell);
            touched.set(`${r.familyName}\u0000${bytesKey(r.columnQualifier)}`, cell);
          }
          result = [...touched.values()].sort((a, b) =>
            a.family < b.family ? -1 : a.family > b.family ? 1 : Buffer.compare(a.qualifier, b.qualifier),
          );
          return out;
        }),
      );
      return { key, cells: result };
    } finally {
      this.leaveWrite(t);
    }
  }

  async sampleRowKeys(table: string): Promise<RowKeySample[]> {
    return this.table(table).tablets.samples();
  }

  // ------------------------------------------------------------------------------------------
  // Background GC and lifecycle

  /**
   * Rewrites rows whose stored cells include versions their family's GC rule removes (reads
   * already hide them; this reclaims the space). Returns what it removed.
   */
  async sweepGarbage(): Promise<{ rowsRewritten: number; cellsRemoved: number }> {
    let rowsRewritten = 0;
    let cellsRemoved = 0;
    for (const t of [...this.tables.values()]) {
      if (t.rules.size === 0) continue;
      for (const gid of t.groupIds) {
        const prefix = t.prefix(gid);
        for await (const batch of this.engine.iterate({ gte: prefix, lt: prefixEnd(prefix) })) {
          if (this.closed || this.tables.get(t.name) !== t) return { rowsRewritten, cellsRemoved };
          for (const e of batch) {
            const key = Uint8Array.prototype.slice.call(rowKeyFrom(e.key)) as Uint8Array;
            const cells = this.decode(t, e.value, key);
            const kept = this.collect(t, cells);
            if (kept.length === cells.length) continue;
            const w = await this.enterWrite(t.name).catch(() => null);
            if (w !== t) {
              if (w !== null) this.leaveWrite(w);
              return { rowsRewritten, cellsRemoved };
            }
            try {
              await this.latches.run(this.latchKey(t, key), () => this.rewriteRow(t, key, [gid], (c) => c.slice()));
            } finally {
              this.leaveWrite(t);
            }
            rowsRewritten++;
            cellsRemoved += cells.length - kept.length;
          }
        }
      }
    }
    return { rowsRewritten, cellsRemoved };
  }

  /** True if any table has a rule that depends on time (the sweeper's reason to run). */
  hasTimeRules(): boolean {
    for (const t of this.tables.values()) for (const r of t.rules.values()) if (gcRuleHasMaxAge(r)) return true;
    return false;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.gcTimer !== null) clearInterval(this.gcTimer);
    // Let running splits and sweeps finish (they stop early once closed is set).
    this.closed = true;
    await Promise.allSettled([...this.background]);
    await this.adminTail;
    let seal: Uint8Array | undefined;
    try {
      this.closed = false;
      await this.saveCatalog();
      // Every key the engine holds is in a ready filter, and nothing writes after this point.
      if (this.keys.ready) seal = this.keys.serialize();
    } finally {
      this.closed = true;
      await this.engine.close(seal);
    }
  }
}
