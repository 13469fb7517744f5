/**
 * The conformance suite every `Store` backend must pass (memory:, file:DIR, bigtable://…).
 *
 * Usage, from a backend's test file:
 *
 *   describeStoreConformance('memory', { open: (options) => openStore('memory:', options) });
 *
 * The suite checks only behaviour the Cloud Bigtable documentation guarantees (v2 `data.proto` /
 * `bigtable.proto` comments, the cloud.google.com Bigtable pages), plus the choices this project
 * documents in `store.ts` / `types.ts`:
 * - cells in a row are ordered by family name, then qualifier bytes, then timestamp descending;
 * - reads apply each family's GC rule immediately (no lazy-GC window);
 * - `StoreOptions.nowMicros` injects the clock (server timestamps are milliseconds × 1000);
 * - `StoreOptions.limits` sets the size/count limits; invalid input writes nothing.
 *
 * All timestamps written are multiples of 1000 so the same suite is valid against a
 * millisecond-granularity server (Cloud Bigtable, Google's emulator).
 *
 * Every test uses its own table (or its own store), so tests do not depend on one another.
 * Expected values are written out by hand; none is computed by the code under test.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isStoreError, type StoreError, type StoreErrorCode } from './errors.js';
import { collectRows, type Store, type StoreOptions } from './store.js';
import type {
  Bytes,
  Cell,
  CheckAndMutateRequest,
  DropRowRangeRequest,
  GcRule,
  MutateRowsEntry,
  Mutation,
  ReadModifyWriteRule,
  ReadRowsOptions,
  Row,
  RowFilter,
  RowRange,
  RowSet,
  TableSpec,
  TimestampRange,
  WriteOptions,
} from './types.js';
import { mulberry32 as prng } from '../util/seeded-random.js';

export interface StoreConformanceFactory {
  /** Opens a fresh, empty store (a new directory for durable backends). */
  open(options?: StoreOptions): Promise<Store>;
  /**
   * Closes `previous` and opens the same data again (same options). Only for durable backends;
   * when absent, the persistence tests are skipped.
   */
  reopen?: (previous: Store) => Promise<Store>;
}

// -----------------------------------------------------------------------------------------------
// Helpers (pure; they never call the store's own helpers to compute an expected value).

const encoder = new TextEncoder();
/** UTF-8 bytes of an ASCII string. */
const b = (s: string): Bytes => encoder.encode(s);
const u8 = (...xs: number[]): Bytes => Uint8Array.from(xs);
const toBytes = (x: string | Bytes): Bytes => (typeof x === 'string' ? b(x) : x);

/** Printable ASCII as is (except backslash), every other byte as \xNN. */
function show(x: Uint8Array): string {
  let out = '';
  for (const c of x) {
    out += c >= 0x20 && c < 0x7f && c !== 0x5c ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`;
  }
  return out;
}

/** `family:qualifier@timestamp=value[label,…]` */
function fmtCell(c: Cell): string {
  const labels = c.labels.length > 0 ? `[${c.labels.join(',')}]` : '';
  return `${c.family}:${show(c.qualifier)}@${c.timestamp}=${show(c.value)}${labels}`;
}

function compareBytes(x: Uint8Array, y: Uint8Array): number {
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

function compareStrings(x: string, y: string): number {
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Canonical order within a row: family name, qualifier bytes, timestamp descending. */
function compareCells(x: Cell, y: Cell): number {
  return compareStrings(x.family, y.family) || compareBytes(x.qualifier, y.qualifier) || y.timestamp - x.timestamp;
}

/** Structural checks applied to every row the suite reads. */
function checkRowShape(row: Row, where: string): void {
  expect(row.key, `${where}: key is a Uint8Array`).toBeInstanceOf(Uint8Array);
  expect(row.cells.length, `${where}: a returned row has cells`).toBeGreaterThan(0);
  for (let i = 0; i < row.cells.length; i++) {
    const c = row.cells[i];
    expect(c.qualifier, `${where}: qualifier is a Uint8Array`).toBeInstanceOf(Uint8Array);
    expect(c.value, `${where}: value is a Uint8Array`).toBeInstanceOf(Uint8Array);
    expect(Array.isArray(c.labels), `${where}: labels is an array`).toBe(true);
    if (i > 0) {
      const prev = row.cells[i - 1];
      expect(compareCells(prev, c) <= 0, `${where}: cells out of canonical order: ${fmtCell(prev)} before ${fmtCell(c)}`).toBe(true);
    }
  }
}

function checkRowsShape(rows: readonly Row[], reversed: boolean): void {
  for (let i = 0; i < rows.length; i++) {
    checkRowShape(rows[i], `row ${show(rows[i].key)}`);
    if (i > 0) {
      const c = compareBytes(rows[i - 1].key, rows[i].key);
      expect(
        reversed ? c > 0 : c < 0,
        `rows out of ${reversed ? 'descending' : 'ascending'} order (or repeated): ${show(rows[i - 1].key)} then ${show(rows[i].key)}`,
      ).toBe(true);
    }
  }
}

/** Cells of a row as strings, in the order returned; null for a missing row. */
function cellsOf(row: Row | null): string[] | null {
  return row === null ? null : row.cells.map(fmtCell);
}

/**
 * Cells of a row as strings where the mutual order of cells with the same family, qualifier and
 * timestamp is unspecified (interleave, sink): ties are sorted by their string form.
 */
function cellsTiesSorted(row: Row | null): string[] | null {
  if (row === null) return null;
  const cells = [...row.cells];
  cells.sort((x, y) => compareCells(x, y) || compareStrings(fmtCell(x), fmtCell(y)));
  return cells.map(fmtCell);
}

function keysOf(rows: readonly Row[]): string[] {
  return rows.map((r) => show(r.key));
}

function byKey(rows: readonly Row[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const r of rows) out[show(r.key)] = r.cells.map(fmtCell);
  return out;
}

/** Signed 64-bit big-endian encoding (two's complement), written out byte by byte. */
function i64(n: bigint): Bytes {
  let v = BigInt.asUintN(64, n);
  const out = new Uint8Array(8);
  for (let i = 7; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

function readI64(x: Uint8Array): bigint {
  expect(x.length, 'a counter value is 8 bytes').toBe(8);
  let v = 0n;
  for (const c of x) v = (v << 8n) | BigInt(c);
  return BigInt.asIntN(64, v);
}

function shuffled<T>(xs: readonly T[], rnd: () => number): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function randomBytes(n: number, rnd: () => number): Bytes {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rnd() * 256);
  return out;
}

const setCell = (family: string, qualifier: string | Bytes, ts: number, value: string | Bytes): Mutation => ({
  setCell: { familyName: family, columnQualifier: toBytes(qualifier), timestampMicros: ts, value: toBytes(value) },
});
const delColumn = (family: string, qualifier: string | Bytes, timeRange?: TimestampRange): Mutation =>
  timeRange === undefined
    ? { deleteFromColumn: { familyName: family, columnQualifier: toBytes(qualifier) } }
    : { deleteFromColumn: { familyName: family, columnQualifier: toBytes(qualifier), timeRange } };
const delFamily = (family: string): Mutation => ({ deleteFromFamily: { familyName: family } });
const delRow: Mutation = { deleteFromRow: {} };
const append = (family: string, qualifier: string | Bytes, value: string | Bytes): ReadModifyWriteRule => ({
  familyName: family,
  columnQualifier: toBytes(qualifier),
  appendValue: toBytes(value),
});
const incr = (family: string, qualifier: string | Bytes, amount: bigint): ReadModifyWriteRule => ({
  familyName: family,
  columnQualifier: toBytes(qualifier),
  incrementAmount: amount,
});

/** Awaits `fn()` and checks it rejects (or throws) a StoreError with one of `codes`. */
async function expectError(fn: () => unknown, codes: StoreErrorCode | readonly StoreErrorCode[]): Promise<StoreError> {
  const list: readonly StoreErrorCode[] = typeof codes === 'string' ? [codes] : codes;
  let threw = false;
  let caught: unknown;
  try {
    await fn();
  } catch (e) {
    threw = true;
    caught = e;
  }
  if (!threw) expect.unreachable(`expected a StoreError ${list.join('|')}, but the call succeeded`);
  if (!isStoreError(caught)) {
    expect.unreachable(
      `expected a StoreError ${list.join('|')}, got ${caught instanceof Error ? `${caught.name}: ${caught.message}` : String(caught)}`,
    );
  }
  expect(list, `error code (message: ${caught.message})`).toContain(caught.code);
  return caught;
}

function spec(families: Record<string, GcRule | null>): TableSpec {
  const out: Record<string, { gcRule?: GcRule }> = {};
  for (const [name, rule] of Object.entries(families)) out[name] = rule === null ? {} : { gcRule: rule };
  return { families: out };
}

const SEC = 1_000_000;
/** A fixed start for the injected clock: 2023-11-14T22:13:20Z, in µs (a multiple of 1000). */
const BASE = 1_700_000_000_000_000;

// -----------------------------------------------------------------------------------------------

export function describeStoreConformance(name: string, factory: StoreConformanceFactory): void {
  describe(`Store conformance: ${name}`, () => {
    const clock = { now: BASE };
    const nowMicros = (): number => clock.now;
    const opened: Store[] = [];
    let s: Store;
    let counter = 0;
    /** A fresh table name for this test. */
    const tn = (label: string): string => `c${++counter}_${label}`;

    async function open(options?: StoreOptions): Promise<Store> {
      const st = await factory.open(options);
      opened.push(st);
      return st;
    }

    async function reopen(previous: Store): Promise<Store> {
      if (!factory.reopen) throw new Error('no reopen');
      const st = await factory.reopen(previous);
      opened.push(st);
      return st;
    }

    async function scan(store: Store, table: string, options?: ReadRowsOptions): Promise<Row[]> {
      const rows = await collectRows(store.readRows(table, options));
      checkRowsShape(rows, options?.reversed ?? false);
      return rows;
    }

    async function get(store: Store, table: string, key: string | Bytes, filter?: RowFilter): Promise<string[] | null> {
      const row = await store.readRow(table, toBytes(key), filter);
      if (row !== null) {
        checkRowShape(row, `readRow ${show(toBytes(key))}`);
        expect(show(row.key)).toBe(show(toBytes(key)));
      }
      return cellsOf(row);
    }

    async function mkTable(label: string, families: Record<string, GcRule | null>, store: Store = s): Promise<string> {
      const t = tn(label);
      await store.createTable(t, spec(families));
      return t;
    }

    async function putRows(store: Store, table: string, entries: readonly MutateRowsEntry[]): Promise<void> {
      const results = await store.mutateRows(table, entries);
      expect(results.map((r) => r.error?.message ?? null)).toEqual(entries.map(() => null));
    }

    beforeAll(async () => {
      s = await open({ nowMicros });
    });

    afterAll(async () => {
      for (const st of opened) await st.close().catch(() => undefined);
    });

    beforeEach(() => {
      clock.now = BASE;
    });

    // =============================================================================================
    describe('admin: tables', () => {
      it('createTable / getTable / listTables / deleteTable', async () => {
        const prefix = `c${++counter}_adm`;
        const t1 = `${prefix}_b`;
        const t2 = `${prefix}_a`;
        const t3 = `${prefix}_A.x-y`;
        await s.createTable(t1, spec({ f: null, g: { maxNumVersions: 3 } }));
        await s.createTable(t2, spec({ only: null }));
        await s.createTable(t3, { families: {} });

        const all = await s.listTables();
        expect(all, 'listTables is sorted').toEqual([...all].sort(compareStrings));
        expect(all.filter((n) => n.startsWith(prefix))).toEqual([t3, t2, t1]); // 'A' < 'a' < 'b'

        const got = await s.getTable(t1);
        expect(Object.keys(got.families).sort()).toEqual(['f', 'g']);
        expect(got.families.f.gcRule).toBeUndefined();
        expect(got.families.g.gcRule).toEqual({ maxNumVersions: 3 });
        expect(Object.keys((await s.getTable(t3)).families)).toEqual([]);

        await s.deleteTable(t2);
        expect((await s.listTables()).filter((n) => n.startsWith(prefix))).toEqual([t3, t1]);
        await expectError(() => s.getTable(t2), 'TABLE_NOT_FOUND');
        await expectError(() => s.deleteTable(t2), 'TABLE_NOT_FOUND');
      });

      it('createTable of an existing name throws TABLE_EXISTS and leaves the table intact', async () => {
        const t = await mkTable('exists', { f: null });
        await s.mutateRow(t, b('r'), [setCell('f', 'q', 1000, 'v')]);
        await expectError(() => s.createTable(t, spec({ other: null })), 'TABLE_EXISTS');
        expect(Object.keys((await s.getTable(t)).families)).toEqual(['f']);
        expect(await get(s, t, 'r')).toEqual(['f:q@1000=v']);
      });

      it('deleteTable deletes the data: re-creating the name starts empty', async () => {
        const t = await mkTable('recreate', { f: null });
        await s.mutateRow(t, b('r1'), [setCell('f', 'q', 1000, 'old')]);
        await s.mutateRow(t, b('r2'), [setCell('f', 'q', 1000, 'old')]);
        await s.deleteTable(t);
        await s.createTable(t, spec({ f: null }));
        expect(await get(s, t, 'r1')).toBeNull();
        expect(await scan(s, t)).toEqual([]);
        await s.mutateRow(t, b('r1'), [setCell('f', 'q', 2000, 'new')]);
        expect(await get(s, t, 'r1')).toEqual(['f:q@2000=new']);
      });

      it('TABLE_NOT_FOUND from every operation on a missing table', async () => {
        const t = tn('missing');
        const k = b('k');
        await expectError(() => s.getTable(t), 'TABLE_NOT_FOUND');
        await expectError(() => s.deleteTable(t), 'TABLE_NOT_FOUND');
        await expectError(() => s.modifyColumnFamilies(t, [{ id: 'f', create: {} }]), 'TABLE_NOT_FOUND');
        await expectError(() => s.dropRowRange(t, { rowKeyPrefix: b('k') }), 'TABLE_NOT_FOUND');
        await expectError(() => s.dropRowRange(t, { deleteAllDataFromTable: true }), 'TABLE_NOT_FOUND');
        await expectError(() => s.readRow(t, k), 'TABLE_NOT_FOUND');
        await expectError(() => collectRows(s.readRows(t)), 'TABLE_NOT_FOUND');
        await expectError(() => collectRows(s.readRows(t, { rows: { rowKeys: [k] } })), 'TABLE_NOT_FOUND');
        await expectError(() => s.mutateRow(t, k, [setCell('f', 'q', 1000, 'v')]), 'TABLE_NOT_FOUND');
        await expectError(() => s.mutateRows(t, [{ key: k, mutations: [setCell('f', 'q', 1000, 'v')] }]), 'TABLE_NOT_FOUND');
        await expectError(() => s.checkAndMutateRow(t, k, { falseMutations: [setCell('f', 'q', 1000, 'v')] }), 'TABLE_NOT_FOUND');
        await expectError(() => s.readModifyWriteRow(t, k, [incr('f', 'n', 1n)]), 'TABLE_NOT_FOUND');
        await expectError(() => s.sampleRowKeys(t), 'TABLE_NOT_FOUND');
        expect(await s.listTables()).not.toContain(t);
      });

      it('INVALID_ARGUMENT naming the type from every operation given a table name that is not a string', async () => {
        const k = b('k');
        const any = <T>(x: unknown): T => x as T;
        const before = await s.listTables();
        for (const [bad, type] of [
          [5, 'number'],
          [null, 'null'],
          [undefined, 'undefined'],
          [{ name: 't' }, 'Object'],
          [['t'], 'Array'],
        ] as const) {
          const t = any<string>(bad);
          const e = await expectError(() => s.getTable(t), 'INVALID_ARGUMENT'); // was TABLE_NOT_FOUND "table 5"
          expect(e.details.type).toBe(type);
          expect(e.message).toContain(type);
          await expectError(() => s.createTable(t, spec({ f: null })), 'INVALID_ARGUMENT');
          await expectError(() => s.deleteTable(t), 'INVALID_ARGUMENT');
          await expectError(() => s.modifyColumnFamilies(t, [{ id: 'f', create: {} }]), 'INVALID_ARGUMENT');
          await expectError(() => s.dropRowRange(t, { deleteAllDataFromTable: true }), 'INVALID_ARGUMENT');
          await expectError(() => s.readRow(t, k), 'INVALID_ARGUMENT');
          await expectError(() => collectRows(s.readRows(t)), 'INVALID_ARGUMENT');
          await expectError(() => s.mutateRow(t, k, [setCell('f', 'q', 1000, 'v')]), 'INVALID_ARGUMENT');
          await expectError(() => s.mutateRows(t, [{ key: k, mutations: [setCell('f', 'q', 1000, 'v')] }]), 'INVALID_ARGUMENT');
          await expectError(() => s.checkAndMutateRow(t, k, { falseMutations: [setCell('f', 'q', 1000, 'v')] }), 'INVALID_ARGUMENT');
          await expectError(() => s.readModifyWriteRow(t, k, [incr('f', 'n', 1n)]), 'INVALID_ARGUMENT');
          await expectError(() => s.sampleRowKeys(t), 'INVALID_ARGUMENT');
        }
        expect((await expectError(() => s.getTable(any<string>(5)), 'INVALID_ARGUMENT')).details).toMatchObject({
          table: 5,
          type: 'number',
        });
        expect(await s.listTables()).toEqual(before);
      });

      it('INVALID_NAME for bad table names; nothing is created', async () => {
        const before = await s.listTables();
        for (const bad of ['', 'has space', 'slash/name', 'colon:name', 'ünïcode', 'tab\tname']) {
          await expectError(() => s.createTable(bad, spec({ f: null })), 'INVALID_NAME');
        }
        expect(await s.listTables()).toEqual(before);
      });

      it('INVALID_NAME for bad family names in createTable and modifyColumnFamilies; nothing is created', async () => {
        for (const bad of ['', 'has space', 'a:b', 'slash/f', 'ünï']) {
          const t = tn('badfam');
          await expectError(() => s.createTable(t, spec({ ok: null, [bad]: null })), 'INVALID_NAME');
          expect(await s.listTables()).not.toContain(t);
        }
        const t = await mkTable('badfam2', { ok: null });
        await expectError(
          () =>
            s.modifyColumnFamilies(t, [
              { id: 'new1', create: {} },
              { id: 'bad name', create: {} },
            ]),
          'INVALID_NAME',
        );
        expect(Object.keys((await s.getTable(t)).families)).toEqual(['ok']);
      });

      it('getTable returns GC rules as created, nested unions and intersections included', async () => {
        const rules: Record<string, GcRule> = {
          v: { maxNumVersions: 2 },
          age: { maxAgeMicros: 7 * 24 * 3600 * SEC },
          u: { union: [{ maxNumVersions: 5 }, { maxAgeMicros: 60 * SEC }] },
          i: { intersection: [{ maxNumVersions: 1 }, { union: [{ maxAgeMicros: 3 * SEC }, { maxNumVersions: 10 }] }] },
        };
        const t = await mkTable('gcrules', { ...rules, none: null });
        const got = await s.getTable(t);
        expect(Object.keys(got.families).sort()).toEqual(['age', 'i', 'none', 'u', 'v']);
        for (const [fam, rule] of Object.entries(rules)) expect(got.families[fam].gcRule, fam).toEqual(rule);
        expect(got.families.none.gcRule).toBeUndefined();
      });
    });

    // =============================================================================================
    describe('admin: modifyColumnFamilies', () => {
      it('creates, updates the GC rule of (applied to reads at once), and drops families; returns the new spec', async () => {
        const t = await mkTable('modfam', { a: null, b: null });
        await s.mutateRow(t, b('r'), [
          setCell('a', 'q', 1000, 'a1'),
          setCell('a', 'q', 2000, 'a2'),
          setCell('a', 'q', 3000, 'a3'),
          setCell('b', 'q', 1000, 'b1'),
        ]);

        const after = await s.modifyColumnFamilies(t, [
          { id: 'c', create: { gcRule: { maxNumVersions: 4 } } },
          { id: 'a', update: { gcRule: { maxNumVersions: 2 } } },
        ]);
        expect(Object.keys(after.families).sort()).toEqual(['a', 'b', 'c']);
        expect(after.families.a.gcRule).toEqual({ maxNumVersions: 2 });
        expect(after.families.c.gcRule).toEqual({ maxNumVersions: 4 });
        expect((await s.getTable(t)).families.a.gcRule).toEqual({ maxNumVersions: 2 });
        expect(await get(s, t, 'r')).toEqual(['a:q@3000=a3', 'a:q@2000=a2', 'b:q@1000=b1']);

        await s.mutateRow(t, b('r'), [setCell('c', 'q', 1000, 'c1')]);
        expect(await get(s, t, 'r')).toEqual(['a:q@3000=a3', 'a:q@2000=a2', 'b:q@1000=b1', 'c:q@1000=c1']);

        const dropped = await s.modifyColumnFamilies(t, [{ id: 'b', drop: true }]);
        expect(Object.keys(dropped.families).sort()).toEqual(['a', 'c']);
        expect(await get(s, t, 'r')).toEqual(['a:q@3000=a3', 'a:q@2000=a2', 'c:q@1000=c1']);
      });

      it('dropping a family deletes its data: writes to it fail, and re-creating it does not resurrect old cells', async () => {
        const t = await mkTable('dropfam', { a: null, b: null });
        await putRows(s, t, [
          { key: b('r1'), mutations: [setCell('a', 'q', 1000, 'a'), setCell('b', 'q', 1000, 'b')] },
          { key: b('r2'), mutations: [setCell('b', 'q', 1000, 'only-b')] },
        ]);
        await s.modifyColumnFamilies(t, [{ id: 'b', drop: true }]);
        expect(byKey(await scan(s, t))).toEqual({ r1: ['a:q@1000=a'] });
        expect(await get(s, t, 'r2')).toBeNull();
        await expectError(() => s.mutateRow(t, b('r1'), [setCell('b', 'q', 2000, 'x')]), 'FAMILY_NOT_FOUND');

        await s.modifyColumnFamilies(t, [{ id: 'b', create: {} }]);
        expect(byKey(await scan(s, t))).toEqual({ r1: ['a:q@1000=a'] });
        await s.mutateRow(t, b('r2'), [setCell('b', 'q', 2000, 'new')]);
        expect(byKey(await scan(s, t))).toEqual({ r1: ['a:q@1000=a'], r2: ['b:q@2000=new'] });
      });

      it('FAMILY_EXISTS / FAMILY_NOT_FOUND, and a failing list of modifications applies none of them', async () => {
        const t = await mkTable('famerr', { a: null });
        await s.mutateRow(t, b('r'), [setCell('a', 'q', 1000, 'v')]);
        await expectError(() => s.modifyColumnFamilies(t, [{ id: 'a', create: {} }]), 'FAMILY_EXISTS');
        await expectError(() => s.modifyColumnFamilies(t, [{ id: 'nope', update: { gcRule: { maxNumVersions: 1 } } }]), 'FAMILY_NOT_FOUND');
        await expectError(() => s.modifyColumnFamilies(t, [{ id: 'nope', drop: true }]), 'FAMILY_NOT_FOUND');

        await expectError(
          () =>
            s.modifyColumnFamilies(t, [
              { id: 'x', create: {} },
              { id: 'a', drop: true },
              { id: 'a', create: {} },
              { id: 'a', create: {} },
            ]),
          'FAMILY_EXISTS',
        );
        expect(Object.keys((await s.getTable(t)).families)).toEqual(['a']);
        expect(await get(s, t, 'r')).toEqual(['a:q@1000=v']);
      });
    });

    // =============================================================================================
    describe('mutateRow and readRow', () => {
      it('setCell round-trips; writing the same timestamp replaces the cell; labels are empty', async () => {
        const t = await mkTable('set', { f: null });
        expect(await s.readRow(t, b('r'))).toBeNull();
        await s.mutateRow(t, b('r'), [setCell('f', 'q', 5000, 'first')]);
        const row = await s.readRow(t, b('r'));
        expect(row).not.toBeNull();
        expect(show(row!.key)).toBe('r');
        expect(row!.cells).toHaveLength(1);
        expect(row!.cells[0].family).toBe('f');
        expect(show(row!.cells[0].qualifier)).toBe('q');
        expect(row!.cells[0].timestamp).toBe(5000);
        expect(show(row!.cells[0].value)).toBe('first');
        expect(row!.cells[0].labels).toEqual([]);

        await s.mutateRow(t, b('r'), [setCell('f', 'q', 5000, 'second')]);
        expect(await get(s, t, 'r')).toEqual(['f:q@5000=second']);
      });

      it('versions of a column are returned newest first', async () => {
        const t = await mkTable('versions', { f: null });
        for (const ts of [2000, 5000, 1000, 4000, 3000]) await s.mutateRow(t, b('r'), [setCell('f', 'q', ts, `v${ts}`)]);
        expect(await get(s, t, 'r')).toEqual(['f:q@5000=v5000', 'f:q@4000=v4000', 'f:q@3000=v3000', 'f:q@2000=v2000', 'f:q@1000=v1000']);
        // Extremes: timestamp 0 (the proto default) and the largest millisecond below 2^53.
        await s.mutateRow(t, b('r'), [setCell('f', 'q', 0, 'zero'), setCell('f', 'q', 9_007_199_254_740_000, 'max')]);
        expect(await get(s, t, 'r', { cellsPerColumnLimitFilter: 1 })).toEqual(['f:q@9007199254740000=max']);
        expect(await get(s, t, 'r', { timestampRangeFilter: { endTimestampMicros: 1000 } })).toEqual(['f:q@0=zero']);
        expect(await get(s, t, 'r', { timestampRangeFilter: { startTimestampMicros: 0, endTimestampMicros: 0 } })).toHaveLength(7);
      });

      it('large values and wide rows round-trip exactly', async () => {
        const t = await mkTable('wide', { f: null });
        const rnd = prng(5);
        const big = randomBytes(1024 * 1024, rnd);
        await s.mutateRow(t, b('big'), [setCell('f', 'v', 1000, big)]);
        const row = await s.readRow(t, b('big'));
        expect(row?.cells).toHaveLength(1);
        expect(Buffer.from(row!.cells[0].value).equals(Buffer.from(big))).toBe(true);

        const quals = shuffled(
          Array.from({ length: 2000 }, (_, i) => i),
          rnd,
        );
        await s.mutateRow(
          t,
          b('wide'),
          quals.map((i) => setCell('f', u8(i >> 8, i & 0xff), 1000, `${i}`)),
        );
        const wide = await s.readRow(t, b('wide'));
        expect(wide?.cells.map((c) => show(c.value))).toEqual(Array.from({ length: 2000 }, (_, i) => `${i}`));
      });

      it('cells are ordered by family name, then qualifier bytes, then timestamp descending', async () => {
        const t = await mkTable('order', { b: null, a: null, B: null, _z: null, 'a.b': null });
        const rnd = prng(7);
        const muts = shuffled(
          [
            setCell('b', 'q', 1000, '1'),
            setCell('a', 'q2', 1000, '2'),
            setCell('a', 'q10', 1000, '3'),
            setCell('a', 'q10', 3000, '4'),
            setCell('B', 'z', 1000, '5'),
            setCell('_z', 'a', 1000, '6'),
            setCell('a.b', 'q', 1000, '7'),
            setCell('a', 'Q', 1000, '8'),
          ],
          rnd,
        );
        await s.mutateRow(t, b('r'), muts);
        // Family names compare as strings: 'B'(0x42) < '_z'(0x5f) < 'a' < 'a.b' < 'b'.
        // Qualifiers compare as bytes: 'Q'(0x51) < 'q10' < 'q2'.
        expect(await get(s, t, 'r')).toEqual([
          'B:z@1000=5',
          '_z:a@1000=6',
          'a:Q@1000=8',
          'a:q10@3000=4',
          'a:q10@1000=3',
          'a:q2@1000=2',
          'a.b:q@1000=7',
          'b:q@1000=1',
        ]);
      });

      it('binary row keys, qualifiers and values (0x00, 0xff), empty values and the empty qualifier', async () => {
        const t = await mkTable('binary', { f: null });
        const keys = [
          u8(0x00),
          u8(0x00, 0x00),
          u8(0x01),
          u8(0x7f),
          u8(0x80),
          u8(0xff),
          u8(0xff, 0x00),
          u8(0xff, 0xff),
          u8(0x61, 0x00, 0x62),
        ];
        const rnd = prng(11);
        for (const k of shuffled(keys, rnd)) {
          await s.mutateRow(t, k, [setCell('f', u8(0xff, 0x00), 1000, u8(0x00, 0xff, 0x00))]);
        }
        const rows = await scan(s, t);
        expect(keysOf(rows)).toEqual(['\\x00', '\\x00\\x00', '\\x01', 'a\\x00b', '\\x7f', '\\x80', '\\xff', '\\xff\\x00', '\\xff\\xff']);
        for (const r of rows) expect(r.cells.map(fmtCell)).toEqual(['f:\\xff\\x00@1000=\\x00\\xff\\x00']);

        // Qualifiers sort as unsigned bytes, the empty qualifier first; empty values are values.
        await s.mutateRow(t, u8(0x42), [
          setCell('f', u8(0xff), 1000, u8()),
          setCell('f', u8(0x80), 1000, u8(0xff)),
          setCell('f', u8(), 1000, b('empty-qualifier')),
          setCell('f', u8(0x00), 1000, u8(0x00)),
          setCell('f', u8(0x7f), 1000, u8()),
        ]);
        expect(await get(s, t, u8(0x42))).toEqual([
          'f:@1000=empty-qualifier',
          'f:\\x00@1000=\\x00',
          'f:\\x7f@1000=',
          'f:\\x80@1000=\\xff',
          'f:\\xff@1000=',
        ]);

        // A row whose only cell has an empty value exists.
        await s.mutateRow(t, b('empty'), [setCell('f', u8(), 2000, u8())]);
        expect(await get(s, t, 'empty')).toEqual(['f:@2000=']);
        const row = await s.readRow(t, b('empty'));
        expect(row!.cells[0].value.length).toBe(0);
        expect(row!.cells[0].qualifier.length).toBe(0);
      });

      it('deleteFromColumn without a time range deletes every version of that column only', async () => {
        const t = await mkTable('delcol', { f: null, g: null });
        await s.mutateRow(t, b('r'), [
          setCell('f', 'q', 1000, '1'),
          setCell('f', 'q', 2000, '2'),
          setCell('f', 'q2', 1000, 'x'),
          setCell('g', 'q', 1000, 'g'),
        ]);
        await s.mutateRow(t, b('r'), [delColumn('f', 'q')]);
        expect(await get(s, t, 'r')).toEqual(['f:q2@1000=x', 'g:q@1000=g']);
        // Deleting a column that does not exist is not an error.
        await s.mutateRow(t, b('r'), [delColumn('f', 'never')]);
        await s.mutateRow(t, b('nobody'), [delColumn('f', 'q')]);
        expect(await get(s, t, 'r')).toEqual(['f:q2@1000=x', 'g:q@1000=g']);
        expect(await get(s, t, 'nobody')).toBeNull();
      });

      it('deleteFromColumn with a time range deletes [start, end) only', async () => {
        const t = await mkTable('delrange', { f: null });
        const all = [
          setCell('f', 'q', 1000, '1'),
          setCell('f', 'q', 2000, '2'),
          setCell('f', 'q', 3000, '3'),
          setCell('f', 'q', 4000, '4'),
        ];
        const reset = async (): Promise<void> => {
          await s.mutateRow(t, b('r'), [delRow, ...all]);
        };
        await reset();
        await s.mutateRow(t, b('r'), [delColumn('f', 'q', { startTimestampMicros: 2000, endTimestampMicros: 4000 })]);
        expect(await get(s, t, 'r')).toEqual(['f:q@4000=4', 'f:q@1000=1']);

        await reset();
        await s.mutateRow(t, b('r'), [delColumn('f', 'q', { startTimestampMicros: 3000 })]); // end: infinity
        expect(await get(s, t, 'r')).toEqual(['f:q@2000=2', 'f:q@1000=1']);

        await reset();
        await s.mutateRow(t, b('r'), [delColumn('f', 'q', { endTimestampMicros: 3000 })]); // start: 0
        expect(await get(s, t, 'r')).toEqual(['f:q@4000=4', 'f:q@3000=3']);

        await reset();
        await s.mutateRow(t, b('r'), [delColumn('f', 'q', { startTimestampMicros: 2000, endTimestampMicros: 3000 })]);
        expect(await get(s, t, 'r')).toEqual(['f:q@4000=4', 'f:q@3000=3', 'f:q@1000=1']);

        await reset();
        await s.mutateRow(t, b('r'), [delColumn('f', 'q', { startTimestampMicros: 5000, endTimestampMicros: 9000 })]);
        expect(await get(s, t, 'r')).toEqual(['f:q@4000=4', 'f:q@3000=3', 'f:q@2000=2', 'f:q@1000=1']);
      });

      it('deleteFromFamily and deleteFromRow', async () => {
        const t = await mkTable('delfam', { f: null, g: null });
        await putRows(s, t, [
          { key: b('r1'), mutations: [setCell('f', 'a', 1000, '1'), setCell('f', 'b', 1000, '2'), setCell('g', 'a', 1000, '3')] },
          { key: b('r2'), mutations: [setCell('f', 'a', 1000, '4'), setCell('g', 'a', 1000, '5')] },
        ]);
        await s.mutateRow(t, b('r1'), [delFamily('f')]);
        expect(await get(s, t, 'r1')).toEqual(['g:a@1000=3']);
        await s.mutateRow(t, b('r1'), [delFamily('g')]);
        expect(await get(s, t, 'r1')).toBeNull();
        await s.mutateRow(t, b('r2'), [delRow]);
        expect(await get(s, t, 'r2')).toBeNull();
        expect(await scan(s, t)).toEqual([]);
        // Deleting a missing row is fine.
        await s.mutateRow(t, b('r3'), [delRow]);
        expect(await scan(s, t)).toEqual([]);
      });

      it('mutations in one call apply in order', async () => {
        const t = await mkTable('mutorder', { f: null, g: null });
        await s.mutateRow(t, b('r'), [setCell('f', 'q', 1000, 'v1'), delColumn('f', 'q'), setCell('f', 'q', 2000, 'v2')]);
        expect(await get(s, t, 'r')).toEqual(['f:q@2000=v2']);

        await s.mutateRow(t, b('r'), [delRow, setCell('g', 'q', 1000, 'after-delete')]);
        expect(await get(s, t, 'r')).toEqual(['g:q@1000=after-delete']);

        await s.mutateRow(t, b('r'), [setCell('f', 'x', 1000, 'gone'), delFamily('f'), setCell('g', 'q', 1000, 'replaced')]);
        expect(await get(s, t, 'r')).toEqual(['g:q@1000=replaced']);

        await s.mutateRow(t, b('r'), [setCell('g', 'q', 1000, 'a'), setCell('g', 'q', 1000, 'b')]);
        expect(await get(s, t, 'r')).toEqual(['g:q@1000=b']);

        await s.mutateRow(t, b('r'), [setCell('f', 'q', 1000, 'x'), delRow]);
        expect(await get(s, t, 'r')).toBeNull();
      });

      it('timestamp -1 takes the injected clock, truncated to milliseconds', async () => {
        const t = await mkTable('servertime', { f: null });
        clock.now = BASE + 123_456;
        await s.mutateRow(t, b('r'), [setCell('f', 'q', -1, 'one')]);
        clock.now = BASE + 5 * SEC + 999;
        await s.mutateRow(t, b('r'), [setCell('f', 'q', -1, 'two'), setCell('f', 'p', -1, 'p')]);
        expect(await get(s, t, 'r')).toEqual([`f:p@${BASE + 5 * SEC}=p`, `f:q@${BASE + 5 * SEC}=two`, `f:q@${BASE + 123_000}=one`]);
      });

      it('an unknown family fails the whole call with FAMILY_NOT_FOUND (no partial write)', async () => {
        const t = await mkTable('unknownfam', { f: null });
        await s.mutateRow(t, b('r'), [setCell('f', 'q', 1000, 'keep')]);
        await expectError(
          () => s.mutateRow(t, b('r'), [delRow, setCell('f', 'q', 2000, 'new'), setCell('nope', 'q', 1000, 'x')]),
          'FAMILY_NOT_FOUND',
        );
        expect(await get(s, t, 'r')).toEqual(['f:q@1000=keep']);
        await expectError(
          () => s.mutateRow(t, b('fresh'), [setCell('f', 'q', 1000, 'x'), setCell('nope', 'q', 1000, 'x')]),
          'FAMILY_NOT_FOUND',
        );
        expect(await get(s, t, 'fresh')).toBeNull();
      });

      it('a negative timestamp other than -1 is INVALID_TIMESTAMP (no partial write)', async () => {
        const t = await mkTable('badts', { f: null });
        await expectError(
          () => s.mutateRow(t, b('r'), [setCell('f', 'ok', 1000, 'x'), setCell('f', 'q', -2000, 'x')]),
          'INVALID_TIMESTAMP',
        );
        expect(await get(s, t, 'r')).toBeNull();
      });
    });

    // =============================================================================================
    describe('mutateRows', () => {
      it('returns one result per entry in order; a bad entry fails alone and writes nothing', async () => {
        const t = await mkTable('mrows', { f: null });
        await s.mutateRow(t, b('r2'), [setCell('f', 'q', 1000, 'before')]);
        const results = await s.mutateRows(t, [
          { key: b('r1'), mutations: [setCell('f', 'q', 1000, 'one')] },
          { key: b('r2'), mutations: [delRow, setCell('f', 'q', 2000, 'partial'), setCell('nope', 'q', 1000, 'x')] },
          { key: b('r3'), mutations: [setCell('f', 'q', 1000, 'three'), setCell('f', 'p', 1000, 'three-p')] },
          { key: b('r4'), mutations: [setCell('f', 'q', 1000, 'x'), setCell('missing', 'q', 1000, 'x')] },
          { key: b('r5'), mutations: [setCell('f', 'q', 1000, 'five')] },
        ]);
        expect(results.map((r) => r.index)).toEqual([0, 1, 2, 3, 4]);
        expect(results.map((r) => r.error?.code ?? 'OK')).toEqual(['OK', 'FAMILY_NOT_FOUND', 'OK', 'FAMILY_NOT_FOUND', 'OK']);
        expect(byKey(await scan(s, t))).toEqual({
          r1: ['f:q@1000=one'],
          r2: ['f:q@1000=before'],
          r3: ['f:p@1000=three-p', 'f:q@1000=three'],
          r5: ['f:q@1000=five'],
        });
      });
    });

    // =============================================================================================
    describe('readRows: row sets, limits, reversal', () => {
      /** rows r00..r09, one cell each in family f; even rows also have a cell in family e. */
      async function tenRows(label: string): Promise<string> {
        const t = await mkTable(label, { e: null, f: null });
        const entries: MutateRowsEntry[] = [];
        for (let i = 0; i < 10; i++) {
          const k = `r0${i}`;
          const muts = [setCell('f', 'q', 1000, `v${i}`)];
          if (i % 2 === 0) muts.push(setCell('e', 'q', 1000, `e${i}`));
          entries.push({ key: b(k), mutations: muts });
        }
        await putRows(s, t, entries);
        return t;
      }
      const keysRead = async (t: string, options: ReadRowsOptions): Promise<string[]> => keysOf(await scan(s, t, options));

      it('whole table when no row set (or an empty one) is given', async () => {
        const t = await tenRows('whole');
        const expected = ['r00', 'r01', 'r02', 'r03', 'r04', 'r05', 'r06', 'r07', 'r08', 'r09'];
        expect(await keysRead(t, {})).toEqual(expected);
        expect(keysOf(await scan(s, t))).toEqual(expected);
        expect(await keysRead(t, { rows: {} })).toEqual(expected);
        expect(await keysRead(t, { rows: { rowKeys: [], rowRanges: [] } })).toEqual(expected);
        expect(byKey(await scan(s, t, { rows: { rowKeys: [b('r03'), b('r04')] } }))).toEqual({
          r03: ['f:q@1000=v3'],
          r04: ['e:q@1000=e4', 'f:q@1000=v4'],
        });
      });

      it('rowKeys: sorted output, duplicates once, missing keys skipped', async () => {
        const t = await tenRows('keys');
        expect(await keysRead(t, { rows: { rowKeys: [b('r07'), b('r02'), b('zz'), b('r07'), b('r05'), b('a')] } })).toEqual([
          'r02',
          'r05',
          'r07',
        ]);
        expect(await keysRead(t, { rows: { rowKeys: [b('nope')] } })).toEqual([]);
      });

      it('ranges with closed, open and absent bounds', async () => {
        const t = await tenRows('ranges');
        const r = (x: string): Bytes => b(x);
        expect(await keysRead(t, { rows: { rowRanges: [{ startKeyClosed: r('r02'), endKeyOpen: r('r05') }] } })).toEqual([
          'r02',
          'r03',
          'r04',
        ]);
        expect(await keysRead(t, { rows: { rowRanges: [{ startKeyOpen: r('r02'), endKeyClosed: r('r05') }] } })).toEqual([
          'r03',
          'r04',
          'r05',
        ]);
        expect(await keysRead(t, { rows: { rowRanges: [{ startKeyClosed: r('r02'), endKeyClosed: r('r05') }] } })).toEqual([
          'r02',
          'r03',
          'r04',
          'r05',
        ]);
        expect(await keysRead(t, { rows: { rowRanges: [{ startKeyOpen: r('r02'), endKeyOpen: r('r05') }] } })).toEqual(['r03', 'r04']);
        expect(await keysRead(t, { rows: { rowRanges: [{ endKeyOpen: r('r03') }] } })).toEqual(['r00', 'r01', 'r02']);
        expect(await keysRead(t, { rows: { rowRanges: [{ startKeyOpen: r('r07') }] } })).toEqual(['r08', 'r09']);
        expect(await keysRead(t, { rows: { rowRanges: [{}] } })).toHaveLength(10);
        // Bounds that are not row keys.
        expect(await keysRead(t, { rows: { rowRanges: [{ startKeyClosed: r('r025'), endKeyClosed: r('r04x') }] } })).toEqual([
          'r03',
          'r04',
        ]);
        expect(await keysRead(t, { rows: { rowRanges: [{ startKeyClosed: r('r'), endKeyOpen: r('r00') }] } })).toEqual([]);
        // A single-key closed range.
        expect(await keysRead(t, { rows: { rowRanges: [{ startKeyClosed: r('r03'), endKeyClosed: r('r03') }] } })).toEqual(['r03']);
      });

      it('unions of keys and overlapping ranges return each row once, in order', async () => {
        const t = await tenRows('union');
        const r = (x: string): Bytes => b(x);
        expect(
          await keysRead(t, {
            rows: {
              rowKeys: [r('r08'), r('r02'), r('r01')],
              rowRanges: [
                { startKeyClosed: r('r03'), endKeyOpen: r('r06') },
                { startKeyClosed: r('r01'), endKeyClosed: r('r04') },
                { startKeyOpen: r('r04'), endKeyClosed: r('r05') },
              ],
            },
          }),
        ).toEqual(['r01', 'r02', 'r03', 'r04', 'r05', 'r08']);
        expect(await keysRead(t, { rows: { rowRanges: [{ endKeyOpen: r('r05') }, { startKeyClosed: r('r02') }] } })).toHaveLength(10);
      });

      it('rowsLimit, reversed, and both, with and without ranges', async () => {
        const t = await tenRows('limit');
        const r = (x: string): Bytes => b(x);
        expect(await keysRead(t, { rowsLimit: 3 })).toEqual(['r00', 'r01', 'r02']);
        expect(await keysRead(t, { rowsLimit: 0 })).toHaveLength(10);
        expect(await keysRead(t, { rowsLimit: 100 })).toHaveLength(10);
        expect(await keysRead(t, { reversed: true })).toEqual(['r09', 'r08', 'r07', 'r06', 'r05', 'r04', 'r03', 'r02', 'r01', 'r00']);
        expect(await keysRead(t, { reversed: true, rowsLimit: 3 })).toEqual(['r09', 'r08', 'r07']);
        expect(await keysRead(t, { reversed: true, rows: { rowRanges: [{ startKeyClosed: r('r02'), endKeyOpen: r('r05') }] } })).toEqual([
          'r04',
          'r03',
          'r02',
        ]);
        expect(
          await keysRead(t, { reversed: true, rowsLimit: 2, rows: { rowRanges: [{ startKeyOpen: r('r02'), endKeyClosed: r('r07') }] } }),
        ).toEqual(['r07', 'r06']);
        expect(
          await keysRead(t, {
            reversed: true,
            rows: { rowKeys: [r('r01'), r('r09')], rowRanges: [{ startKeyClosed: r('r04'), endKeyClosed: r('r05') }] },
          }),
        ).toEqual(['r09', 'r05', 'r04', 'r01']);
        // Row contents are not affected by reversal.
        expect(byKey(await scan(s, t, { reversed: true, rowsLimit: 1, rows: { rowKeys: [r('r04')] } }))).toEqual({
          r04: ['e:q@1000=e4', 'f:q@1000=v4'],
        });
      });

      it('rows whose cells are all filtered out are skipped and do not count toward rowsLimit', async () => {
        const t = await tenRows('skip');
        const fe: RowFilter = { familyNameRegexFilter: 'e' };
        expect(await keysRead(t, { filter: fe })).toEqual(['r00', 'r02', 'r04', 'r06', 'r08']);
        expect(await keysRead(t, { filter: fe, rowsLimit: 3 })).toEqual(['r00', 'r02', 'r04']);
        expect(await keysRead(t, { filter: fe, rowsLimit: 3, reversed: true })).toEqual(['r08', 'r06', 'r04']);
        expect(
          await keysRead(t, { filter: fe, rowsLimit: 2, rows: { rowRanges: [{ startKeyClosed: b('r01'), endKeyClosed: b('r09') }] } }),
        ).toEqual(['r02', 'r04']);
        expect(await keysRead(t, { filter: { blockAllFilter: true }, rowsLimit: 1 })).toEqual([]);
        expect(await s.readRow(t, b('r01'), fe)).toBeNull();
        expect(await s.readRow(t, b('r02'), { blockAllFilter: true })).toBeNull();
        expect(await s.readRow(t, b('missing'))).toBeNull();
      });

      it('binary ranges compare bytes unsigned', async () => {
        const t = await mkTable('binrange', { f: null });
        const keys = [u8(0x00), u8(0x7f), u8(0x80), u8(0xff), u8(0xff, 0x00), u8(0xff, 0xff)];
        await putRows(
          s,
          t,
          keys.map((k) => ({ key: k, mutations: [setCell('f', 'q', 1000, 'v')] })),
        );
        expect(keysOf(await scan(s, t, { rows: { rowRanges: [{ startKeyClosed: u8(0x80), endKeyOpen: u8(0xff, 0x00) }] } }))).toEqual([
          '\\x80',
          '\\xff',
        ]);
        expect(keysOf(await scan(s, t, { rows: { rowRanges: [{ startKeyOpen: u8(0xff) }] } }))).toEqual(['\\xff\\x00', '\\xff\\xff']);
        expect(keysOf(await scan(s, t, { rows: { rowRanges: [{ endKeyClosed: u8(0x7f) }] } }))).toEqual(['\\x00', '\\x7f']);
        expect(keysOf(await scan(s, t, { reversed: true, rows: { rowRanges: [{ startKeyClosed: u8(0x7f, 0x00) }] } }))).toEqual([
          '\\xff\\xff',
          '\\xff\\x00',
          '\\xff',
          '\\x80',
        ]);
      });

      it('INVALID_RANGE when a range starts after it ends', async () => {
        const t = await tenRows('badrange');
        await expectError(
          () => collectRows(s.readRows(t, { rows: { rowRanges: [{ startKeyClosed: b('r05'), endKeyClosed: b('r02') }] } })),
          'INVALID_RANGE',
        );
        await expectError(
          () => collectRows(s.readRows(t, { rows: { rowRanges: [{ startKeyOpen: b('b'), endKeyOpen: b('a') }] } })),
          'INVALID_RANGE',
        );
        // Wrong in two ways: every backend names the range first (bigtable:// used to compile the
        // filter first, and said INVALID_REGEX or INVALID_FILTER; found by a seed of the
        // differential test).
        const backwards = { rowRanges: [{ startKeyClosed: b('r05'), endKeyClosed: b('r02') }] };
        await expectError(() => collectRows(s.readRows(t, { rows: backwards, filter: { rowKeyRegexFilter: '(' } })), 'INVALID_RANGE');
        const badTime = { timestampRangeFilter: { startTimestampMicros: 2000, endTimestampMicros: 1000 } };
        await expectError(() => collectRows(s.readRows(t, { rows: backwards, filter: badTime })), 'INVALID_RANGE');
      });
    });

    // =============================================================================================
    describe('filters through readRows', () => {
      /**
       * r1: a:q1@3000=v3 a:q1@2000=v2 a:q1@1000=v1 a:q2@2000=x b:q1@1000=bee
       * r2: a:q1@1000=w ab:q1@1000=y
       * r3: b:q\n@4000=nl b:q3@4000=hello
       */
      async function fixture(label: string): Promise<string> {
        const t = await mkTable(label, { a: null, ab: null, b: null });
        await putRows(s, t, [
          {
            key: b('r1'),
            mutations: [
              setCell('a', 'q1', 1000, 'v1'),
              setCell('a', 'q1', 3000, 'v3'),
              setCell('a', 'q1', 2000, 'v2'),
              setCell('b', 'q1', 1000, 'bee'),
              setCell('a', 'q2', 2000, 'x'),
            ],
          },
          { key: b('r2'), mutations: [setCell('ab', 'q1', 1000, 'y'), setCell('a', 'q1', 1000, 'w')] },
          { key: b('r3'), mutations: [setCell('b', 'q3', 4000, 'hello'), setCell('b', u8(0x71, 0x0a), 4000, 'nl')] },
        ]);
        return t;
      }
      const ALL = {
        r1: ['a:q1@3000=v3', 'a:q1@2000=v2', 'a:q1@1000=v1', 'a:q2@2000=x', 'b:q1@1000=bee'],
        r2: ['a:q1@1000=w', 'ab:q1@1000=y'],
        r3: ['b:q\\x0a@4000=nl', 'b:q3@4000=hello'],
      };
      const read = async (t: string, filter: RowFilter): Promise<Record<string, string[]>> => byKey(await scan(s, t, { filter }));

      it('no filter, passAllFilter, blockAllFilter', async () => {
        const t = await fixture('pass');
        expect(byKey(await scan(s, t))).toEqual(ALL);
        expect(await read(t, { passAllFilter: true })).toEqual(ALL);
        expect(await read(t, { blockAllFilter: true })).toEqual({});
        expect(await get(s, t, 'r1', { blockAllFilter: true })).toBeNull();
      });

      it('chain', async () => {
        const t = await fixture('chain');
        expect(await read(t, { chain: [{ familyNameRegexFilter: 'a' }, { cellsPerColumnLimitFilter: 1 }] })).toEqual({
          r1: ['a:q1@3000=v3', 'a:q2@2000=x'],
          r2: ['a:q1@1000=w'],
        });
        expect(
          await read(t, {
            chain: [
              { columnQualifierRegexFilter: 'q1' },
              { valueRegexFilter: 'v[12]' },
              { timestampRangeFilter: { startTimestampMicros: 2000 } },
            ],
          }),
        ).toEqual({
          r1: ['a:q1@2000=v2'],
        });
        expect(await read(t, { chain: [{ passAllFilter: true }, { blockAllFilter: true }] })).toEqual({});
      });

      it('interleave: pooled, sorted, duplicates kept', async () => {
        const t = await fixture('interleave');
        const rows = await scan(s, t, {
          filter: {
            interleave: [
              { chain: [{ familyNameRegexFilter: 'b' }, { applyLabelTransformer: 'bb' }] },
              { chain: [{ columnQualifierRegexFilter: 'q1' }, { cellsPerColumnLimitFilter: 1 }, { applyLabelTransformer: 'q1' }] },
            ],
          },
        });
        expect(keysOf(rows)).toEqual(['r1', 'r2', 'r3']);
        expect(cellsTiesSorted(rows[0])).toEqual(['a:q1@3000=v3[q1]', 'b:q1@1000=bee[bb]', 'b:q1@1000=bee[q1]']);
        expect(cellsOf(rows[1])).toEqual(['a:q1@1000=w[q1]', 'ab:q1@1000=y[q1]']);
        expect(cellsOf(rows[2])).toEqual(['b:q\\x0a@4000=nl[bb]', 'b:q3@4000=hello[bb]']);

        const dup = await s.readRow(t, b('r3'), { interleave: [{ passAllFilter: true }, { columnQualifierRegexFilter: 'q3' }] });
        expect(cellsOf(dup)).toEqual(['b:q\\x0a@4000=nl', 'b:q3@4000=hello', 'b:q3@4000=hello']);
      });

      it('condition: predicate on the whole row selects the true or false filter; absent branches yield nothing', async () => {
        const t = await fixture('condition');
        expect(
          await read(t, {
            condition: {
              predicateFilter: { valueRegexFilter: 'v2' },
              trueFilter: { familyNameRegexFilter: 'b' },
              falseFilter: { columnQualifierRegexFilter: 'q1' },
            },
          }),
        ).toEqual({ r1: ['b:q1@1000=bee'], r2: ['a:q1@1000=w', 'ab:q1@1000=y'] });
        expect(await read(t, { condition: { predicateFilter: { valueRegexFilter: 'v2' }, falseFilter: { passAllFilter: true } } })).toEqual(
          {
            r2: ALL.r2,
            r3: ALL.r3,
          },
        );
        expect(await read(t, { condition: { predicateFilter: { valueRegexFilter: 'v2' }, trueFilter: { passAllFilter: true } } })).toEqual({
          r1: ALL.r1,
        });
        // The true filter sees the input row, not the predicate's output.
        expect(
          await read(t, {
            condition: { predicateFilter: { columnQualifierRegexFilter: 'q2' }, trueFilter: { cellsPerRowLimitFilter: 2 } },
          }),
        ).toEqual({ r1: ['a:q1@3000=v3', 'a:q1@2000=v2'] });
      });

      it('sink: cells reaching the sink go straight to the output (the documented example)', async () => {
        const t = await mkTable('sink', { A: null, B: null });
        await s.mutateRow(t, b('r'), [setCell('A', 'A', 1000, 'w'), setCell('A', 'B', 2000, 'x'), setCell('B', 'B', 4000, 'z')]);
        const row = await s.readRow(t, b('r'), {
          chain: [
            { familyNameRegexFilter: 'A' },
            { interleave: [{ passAllFilter: true }, { chain: [{ applyLabelTransformer: 'foo' }, { sink: true }] }] },
            { columnQualifierRegexFilter: 'B' },
          ],
        });
        expect(row).not.toBeNull();
        checkRowShape(row!, 'sink');
        expect(cellsTiesSorted(row)).toEqual(['A:A@1000=w[foo]', 'A:B@2000=x', 'A:B@2000=x[foo]']);
      });

      it('rowKeyRegexFilter: RE2 full match over raw bytes; . does not match \\n, \\C matches any byte', async () => {
        const t = await mkTable('rowregex', { f: null });
        const keys = [b('abc'), b('abcd'), b('xabc'), u8(0x61, 0x0a, 0xff), u8(0x00, 0xff, 0x01)];
        await putRows(
          s,
          t,
          keys.map((k) => ({ key: k, mutations: [setCell('f', 'q', 1000, 'v')] })),
        );
        const k = async (re: string | Bytes): Promise<string[]> => keysOf(await scan(s, t, { filter: { rowKeyRegexFilter: re } }));
        expect(await k('abc')).toEqual(['abc']);
        expect(await k('bc')).toEqual([]);
        expect(await k('abc.*')).toEqual(['abc', 'abcd']);
        expect(await k('a.*')).toEqual(['abc', 'abcd']);
        expect(await k('a\\C*')).toEqual(['a\\x0a\\xff', 'abc', 'abcd']);
        expect(await k('\\x00\\xff\\C')).toEqual(['\\x00\\xff\\x01']);
        expect(await k(b('x.*'))).toEqual(['xabc']);
        expect(await k('.*c')).toEqual(['abc', 'xabc']);
      });

      it('rowSampleFilter keeps whole rows with probability p (statistically loose)', async () => {
        const t = await mkTable('sample', { f: null });
        const entries: MutateRowsEntry[] = [];
        for (let i = 0; i < 400; i++) {
          entries.push({
            key: b(`row${String(i).padStart(4, '0')}`),
            mutations: [setCell('f', 'a', 1000, 'x'), setCell('f', 'b', 1000, 'y')],
          });
        }
        await putRows(s, t, entries);
        const half = await scan(s, t, { filter: { rowSampleFilter: 0.5 } });
        // Binomial(400, 0.5): mean 200, sd 10.
        expect(half.length).toBeGreaterThan(140);
        expect(half.length).toBeLessThan(260);
        for (const r of half) expect(cellsOf(r)).toEqual(['f:a@1000=x', 'f:b@1000=y']);
        const tenth = await scan(s, t, { filter: { rowSampleFilter: 0.1 } });
        // Binomial(400, 0.1): mean 40, sd 6.
        expect(tenth.length).toBeGreaterThan(10);
        expect(tenth.length).toBeLessThan(80);
      });

      it('familyNameRegexFilter (full match)', async () => {
        const t = await fixture('famregex');
        expect(await read(t, { familyNameRegexFilter: 'a' })).toEqual({
          r1: ['a:q1@3000=v3', 'a:q1@2000=v2', 'a:q1@1000=v1', 'a:q2@2000=x'],
          r2: ['a:q1@1000=w'],
        });
        expect(await read(t, { familyNameRegexFilter: 'a.*' })).toEqual({
          r1: ['a:q1@3000=v3', 'a:q1@2000=v2', 'a:q1@1000=v1', 'a:q2@2000=x'],
          r2: ['a:q1@1000=w', 'ab:q1@1000=y'],
        });
        expect(await read(t, { familyNameRegexFilter: 'b' })).toEqual({ r1: ['b:q1@1000=bee'], r3: ALL.r3 });
      });

      it('columnQualifierRegexFilter (full match, \\C over raw bytes)', async () => {
        const t = await fixture('qualregex');
        expect(await read(t, { columnQualifierRegexFilter: 'q2' })).toEqual({ r1: ['a:q2@2000=x'] });
        expect(await read(t, { columnQualifierRegexFilter: 'q' })).toEqual({});
        expect(await read(t, { columnQualifierRegexFilter: 'q.' })).toEqual({ r1: ALL.r1, r2: ALL.r2, r3: ['b:q3@4000=hello'] });
        expect(await read(t, { columnQualifierRegexFilter: 'q\\C' })).toEqual(ALL);
        expect(await read(t, { columnQualifierRegexFilter: u8(0x71, 0x5b, 0x32, 0x33, 0x5d) /* q[23] */ })).toEqual({
          r1: ['a:q2@2000=x'],
          r3: ['b:q3@4000=hello'],
        });
      });

      it('columnRangeFilter', async () => {
        const t = await fixture('colrange');
        expect(await read(t, { columnRangeFilter: { familyName: 'a', startQualifierOpen: b('q1') } })).toEqual({ r1: ['a:q2@2000=x'] });
        expect(await read(t, { columnRangeFilter: { familyName: 'b', startQualifierClosed: b('q1'), endQualifierOpen: b('q3') } })).toEqual(
          {
            r1: ['b:q1@1000=bee'],
          },
        );
        expect(await read(t, { columnRangeFilter: { familyName: 'b', endQualifierClosed: b('q3') } })).toEqual({
          r1: ['b:q1@1000=bee'],
          r3: ALL.r3,
        });
        expect(
          await read(t, { columnRangeFilter: { familyName: 'a', startQualifierClosed: b('q1'), endQualifierClosed: b('q1') } }),
        ).toEqual({
          r1: ['a:q1@3000=v3', 'a:q1@2000=v2', 'a:q1@1000=v1'],
          r2: ['a:q1@1000=w'],
        });
        expect(await read(t, { columnRangeFilter: { familyName: 'ab' } })).toEqual({ r2: ['ab:q1@1000=y'] });
      });

      it('timestampRangeFilter: [start, end), absent end = infinity', async () => {
        const t = await fixture('tsrange');
        expect(await read(t, { timestampRangeFilter: { startTimestampMicros: 2000, endTimestampMicros: 3000 } })).toEqual({
          r1: ['a:q1@2000=v2', 'a:q2@2000=x'],
        });
        expect(await read(t, { timestampRangeFilter: { startTimestampMicros: 3000 } })).toEqual({ r1: ['a:q1@3000=v3'], r3: ALL.r3 });
        expect(await read(t, { timestampRangeFilter: { endTimestampMicros: 2000 } })).toEqual({
          r1: ['a:q1@1000=v1', 'b:q1@1000=bee'],
          r2: ALL.r2,
        });
      });

      it('valueRegexFilter (full match; . does not match \\n)', async () => {
        const t = await fixture('valregex');
        await s.mutateRow(t, b('r4'), [setCell('a', 'n', 1000, 'hel\nx'), setCell('a', 'o', 1000, 'hel')]);
        expect(await read(t, { valueRegexFilter: 'v.' })).toEqual({ r1: ['a:q1@3000=v3', 'a:q1@2000=v2', 'a:q1@1000=v1'] });
        expect(await read(t, { valueRegexFilter: 'hel' })).toEqual({ r4: ['a:o@1000=hel'] });
        expect(await read(t, { valueRegexFilter: 'hel.*' })).toEqual({ r3: ['b:q3@4000=hello'], r4: ['a:o@1000=hel'] });
        expect(await read(t, { valueRegexFilter: 'hel\\C*' })).toEqual({
          r3: ['b:q3@4000=hello'],
          r4: ['a:n@1000=hel\\x0ax', 'a:o@1000=hel'],
        });
      });

      it('valueRangeFilter (unsigned bytes; closed, open and absent bounds)', async () => {
        const t = await fixture('valrange');
        expect(await read(t, { valueRangeFilter: { startValueClosed: b('v2'), endValueOpen: b('w') } })).toEqual({
          r1: ['a:q1@3000=v3', 'a:q1@2000=v2'],
        });
        expect(await read(t, { valueRangeFilter: { startValueOpen: b('w'), endValueClosed: b('y') } })).toEqual({
          r1: ['a:q2@2000=x'],
          r2: ['ab:q1@1000=y'],
        });
        expect(await read(t, { valueRangeFilter: {} })).toEqual(ALL);
        await s.mutateRow(t, b('r5'), [
          setCell('a', 'p', 1000, u8(0x7f)),
          setCell('a', 'q', 1000, u8(0x80)),
          setCell('a', 'r', 1000, u8(0xff)),
          setCell('a', 's', 1000, u8()),
        ]);
        expect(await get(s, t, 'r5', { valueRangeFilter: { startValueClosed: u8(0x80) } })).toEqual(['a:q@1000=\\x80', 'a:r@1000=\\xff']);
        expect(await get(s, t, 'r5', { valueRangeFilter: { endValueOpen: u8(0x80) } })).toEqual(['a:p@1000=\\x7f', 'a:s@1000=']);
      });

      it('cellsPerRowOffsetFilter / cellsPerRowLimitFilter count across families', async () => {
        const t = await fixture('perrow');
        expect(await read(t, { cellsPerRowOffsetFilter: 3 })).toEqual({ r1: ['a:q2@2000=x', 'b:q1@1000=bee'] });
        expect(await read(t, { cellsPerRowOffsetFilter: 1 })).toEqual({
          r1: ['a:q1@2000=v2', 'a:q1@1000=v1', 'a:q2@2000=x', 'b:q1@1000=bee'],
          r2: ['ab:q1@1000=y'],
          r3: ['b:q3@4000=hello'],
        });
        expect(await read(t, { cellsPerRowLimitFilter: 4 })).toEqual({ r1: ALL.r1.slice(0, 4), r2: ALL.r2, r3: ALL.r3 });
        expect(await read(t, { cellsPerRowLimitFilter: 1 })).toEqual({
          r1: ['a:q1@3000=v3'],
          r2: ['a:q1@1000=w'],
          r3: ['b:q\\x0a@4000=nl'],
        });
        expect(await read(t, { chain: [{ cellsPerRowOffsetFilter: 1 }, { cellsPerRowLimitFilter: 2 }] })).toEqual({
          r1: ['a:q1@2000=v2', 'a:q1@1000=v1'],
          r2: ['ab:q1@1000=y'],
          r3: ['b:q3@4000=hello'],
        });
      });

      it('cellsPerColumnLimitFilter', async () => {
        const t = await fixture('percol');
        expect(await read(t, { cellsPerColumnLimitFilter: 1 })).toEqual({
          r1: ['a:q1@3000=v3', 'a:q2@2000=x', 'b:q1@1000=bee'],
          r2: ALL.r2,
          r3: ALL.r3,
        });
        expect(await read(t, { cellsPerColumnLimitFilter: 2 })).toEqual({
          r1: ['a:q1@3000=v3', 'a:q1@2000=v2', 'a:q2@2000=x', 'b:q1@1000=bee'],
          r2: ALL.r2,
          r3: ALL.r3,
        });
      });

      it('stripValueTransformer and applyLabelTransformer (labels appear on cells, also with stripped values)', async () => {
        const t = await fixture('transform');
        expect(await read(t, { stripValueTransformer: true })).toEqual({
          r1: ['a:q1@3000=', 'a:q1@2000=', 'a:q1@1000=', 'a:q2@2000=', 'b:q1@1000='],
          r2: ['a:q1@1000=', 'ab:q1@1000='],
          r3: ['b:q\\x0a@4000=', 'b:q3@4000='],
        });
        expect(await read(t, { chain: [{ familyNameRegexFilter: 'ab' }, { applyLabelTransformer: 'my-label-1' }] })).toEqual({
          r2: ['ab:q1@1000=y[my-label-1]'],
        });
        expect(
          await read(t, { chain: [{ familyNameRegexFilter: 'b' }, { applyLabelTransformer: 'lbl' }, { stripValueTransformer: true }] }),
        ).toEqual({
          r1: ['b:q1@1000=[lbl]'],
          r3: ['b:q\\x0a@4000=[lbl]', 'b:q3@4000=[lbl]'],
        });
        expect(
          await read(t, { chain: [{ familyNameRegexFilter: 'b' }, { stripValueTransformer: true }, { applyLabelTransformer: 'lbl' }] }),
        ).toEqual({
          r1: ['b:q1@1000=[lbl]'],
          r3: ['b:q\\x0a@4000=[lbl]', 'b:q3@4000=[lbl]'],
        });
      });

      it('INVALID_REGEX for malformed RE2 patterns', async () => {
        const t = await fixture('badregex');
        const bad: RowFilter[] = [
          { rowKeyRegexFilter: '(' },
          { familyNameRegexFilter: '[a' },
          { columnQualifierRegexFilter: '*' },
          { valueRegexFilter: 'a(?P<' },
          { chain: [{ passAllFilter: true }, { valueRegexFilter: '(' }] },
        ];
        for (const filter of bad) {
          await expectError(() => collectRows(s.readRows(t, { filter })), 'INVALID_REGEX');
        }
        await expectError(() => s.readRow(t, b('r1'), { valueRegexFilter: '[' }), 'INVALID_REGEX');
      });

      it('INVALID_FILTER for documented-invalid filters', async () => {
        const t = await fixture('badfilter');
        const bad: RowFilter[] = [
          { applyLabelTransformer: 'Upper_Case' },
          { applyLabelTransformer: 'abcdefghijklmnop' }, // 16 characters
          { rowSampleFilter: 1.5 },
          { rowSampleFilter: -0.25 },
          { condition: { predicateFilter: { sink: true }, trueFilter: { passAllFilter: true } } },
          { chain: [{ applyLabelTransformer: 'one' }, { applyLabelTransformer: 'two' }] },
        ];
        for (const filter of bad) {
          await expectError(() => collectRows(s.readRows(t, { filter })), 'INVALID_FILTER');
        }
      });
    });

    // =============================================================================================
    describe('checkAndMutateRow', () => {
      it('without a predicate: true iff the row has a cell', async () => {
        const t = await mkTable('cam-nopred', { f: null });
        const r1 = await s.checkAndMutateRow(t, b('r'), {
          trueMutations: [setCell('f', 'branch', 1000, 'true')],
          falseMutations: [setCell('f', 'branch', 1000, 'false')],
        });
        expect(r1).toBe(false);
        expect(await get(s, t, 'r')).toEqual(['f:branch@1000=false']);
        const r2 = await s.checkAndMutateRow(t, b('r'), {
          trueMutations: [setCell('f', 'branch', 2000, 'true')],
          falseMutations: [setCell('f', 'other', 2000, 'false')],
        });
        expect(r2).toBe(true);
        expect(await get(s, t, 'r')).toEqual(['f:branch@2000=true', 'f:branch@1000=false']);
      });

      it('with a predicate: matched applies trueMutations, not matched applies falseMutations', async () => {
        const t = await mkTable('cam-pred', { f: null, g: null });
        await s.mutateRow(t, b('r'), [setCell('f', 'lock', 1000, 'free'), setCell('g', 'data', 1000, 'd')]);
        const pred: RowFilter = { chain: [{ columnQualifierRegexFilter: 'lock' }, { valueRegexFilter: 'free' }] };
        expect(
          await s.checkAndMutateRow(t, b('r'), {
            predicateFilter: pred,
            trueMutations: [setCell('f', 'lock', 2000, 'taken'), delFamily('g')],
            falseMutations: [setCell('f', 'failed', 2000, 'x')],
          }),
        ).toBe(true);
        expect(await get(s, t, 'r')).toEqual(['f:lock@2000=taken', 'f:lock@1000=free']);

        // Latest-version predicate no longer matches.
        const latest: RowFilter = {
          chain: [{ columnQualifierRegexFilter: 'lock' }, { cellsPerColumnLimitFilter: 1 }, { valueRegexFilter: 'free' }],
        };
        expect(
          await s.checkAndMutateRow(t, b('r'), {
            predicateFilter: latest,
            trueMutations: [setCell('f', 'lock', 3000, 'again')],
            falseMutations: [setCell('f', 'failed', 3000, 'yes'), delColumn('f', 'lock', { endTimestampMicros: 2000 })],
          }),
        ).toBe(false);
        expect(await get(s, t, 'r')).toEqual(['f:failed@3000=yes', 'f:lock@2000=taken']);

        // A predicate naming a family with no cells is simply not matched.
        expect(await s.checkAndMutateRow(t, b('r'), { predicateFilter: { familyNameRegexFilter: 'g' }, falseMutations: [delRow] })).toBe(
          false,
        );
        expect(await get(s, t, 'r')).toBeNull();
      });

      it('a missing row never matches, even with passAll; a matched predicate with no true mutations changes nothing', async () => {
        const t = await mkTable('cam-missing', { f: null });
        expect(
          await s.checkAndMutateRow(t, b('m'), { predicateFilter: { passAllFilter: true }, trueMutations: [setCell('f', 'q', 1000, 't')] }),
        ).toBe(false);
        expect(await get(s, t, 'm')).toBeNull();
        await s.mutateRow(t, b('r'), [setCell('f', 'q', 1000, 'v')]);
        expect(await s.checkAndMutateRow(t, b('r'), { predicateFilter: { passAllFilter: true }, falseMutations: [delRow] })).toBe(true);
        expect(await get(s, t, 'r')).toEqual(['f:q@1000=v']);
      });

      it('the predicate sees the row after GC (collected versions cannot match)', async () => {
        const t = await mkTable('cam-gc', { f: { maxNumVersions: 1 } });
        await s.mutateRow(t, b('r'), [setCell('f', 'q', 1000, 'old'), setCell('f', 'q', 2000, 'new')]);
        expect(
          await s.checkAndMutateRow(t, b('r'), {
            predicateFilter: { valueRegexFilter: 'old' },
            trueMutations: [setCell('f', 'hit', 1000, 'wrong')],
            falseMutations: [setCell('f', 'miss', 1000, 'right')],
          }),
        ).toBe(false);
        expect(await get(s, t, 'r')).toEqual(['f:miss@1000=right', 'f:q@2000=new']);
      });

      it('an invalid mutation in the chosen branch throws and writes nothing; an invalid predicate throws INVALID_REGEX', async () => {
        const t = await mkTable('cam-invalid', { f: null });
        await s.mutateRow(t, b('r'), [setCell('f', 'q', 1000, 'v')]);
        await expectError(
          () => s.checkAndMutateRow(t, b('r'), { trueMutations: [delRow, setCell('nope', 'q', 1000, 'x')] }),
          'FAMILY_NOT_FOUND',
        );
        await expectError(
          () =>
            s.checkAndMutateRow(t, b('r'), {
              predicateFilter: { valueRegexFilter: '(' },
              trueMutations: [delRow],
              falseMutations: [delRow],
            }),
          'INVALID_REGEX',
        );
        expect(await get(s, t, 'r')).toEqual(['f:q@1000=v']);
      });
    });

    // =============================================================================================
    describe('readModifyWriteRow', () => {
      it('append to a missing and to an existing cell; returns the new cells at the clock time', async () => {
        const t = await mkTable('rmw-append', { f: null, g: null });
        clock.now = BASE + 1_234_567;
        const ts = BASE + 1_234_000;
        const r1 = await s.readModifyWriteRow(t, b('r'), [append('f', 'q', u8(0x00, 0x61))]);
        expect(show(r1.key)).toBe('r');
        expect(cellsOf(r1)).toEqual([`f:q@${ts}=\\x00a`]);
        expect(await get(s, t, 'r')).toEqual([`f:q@${ts}=\\x00a`]);

        await s.mutateRow(t, b('s'), [setCell('f', 'q', 1000, 'ab')]);
        const r2 = await s.readModifyWriteRow(t, b('s'), [append('g', 'z', 'new'), append('f', 'q', u8(0xff, 0x63))]);
        expect(cellsOf(r2)).toEqual([`f:q@${ts}=ab\\xffc`, `g:z@${ts}=new`]);
        expect(await get(s, t, 's', { cellsPerColumnLimitFilter: 1 })).toEqual([`f:q@${ts}=ab\\xffc`, `g:z@${ts}=new`]);
        expect(await get(s, t, 's', { timestampRangeFilter: { endTimestampMicros: 2000 } })).toEqual(['f:q@1000=ab']);
      });

      it('increment: 64-bit big-endian signed, missing cell counts as 0, negatives, wrap-around', async () => {
        const t = await mkTable('rmw-incr', { f: null });
        const value = async (key: string, q: string): Promise<bigint> => {
          const row = await s.readRow(t, b(key), { chain: [{ columnQualifierRegexFilter: q }, { cellsPerColumnLimitFilter: 1 }] });
          expect(row).not.toBeNull();
          return readI64(row!.cells[0].value);
        };
        const r1 = await s.readModifyWriteRow(t, b('c'), [incr('f', 'n', 7n)]);
        expect(r1.cells).toHaveLength(1);
        expect(r1.cells[0].timestamp).toBe(BASE);
        expect(show(r1.cells[0].value)).toBe('\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x07');
        expect(await value('c', 'n')).toBe(7n);

        const r2 = await s.readModifyWriteRow(t, b('c'), [incr('f', 'n', -10n)]);
        expect(show(r2.cells[0].value)).toBe('\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfd');
        expect(readI64(r2.cells[0].value)).toBe(-3n);
        expect(await value('c', 'n')).toBe(-3n);

        await s.mutateRow(t, b('d'), [setCell('f', 'n', 1000, u8(0, 0, 0, 0, 0, 0, 0x01, 0x00))]);
        clock.now = BASE + 2 * SEC;
        const r3 = await s.readModifyWriteRow(t, b('d'), [incr('f', 'n', 1n)]);
        expect(cellsOf(r3)).toEqual([`f:n@${BASE + 2 * SEC}=\\x00\\x00\\x00\\x00\\x00\\x00\\x01\\x01`]);

        await s.mutateRow(t, b('max'), [setCell('f', 'n', 1000, u8(0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))]);
        const r4 = await s.readModifyWriteRow(t, b('max'), [incr('f', 'n', 1n)]);
        expect(show(r4.cells[0].value)).toBe('\\x80\\x00\\x00\\x00\\x00\\x00\\x00\\x00');
        expect(readI64(r4.cells[0].value)).toBe(-9223372036854775808n);

        // Several rules in one call, results in canonical order.
        const r5 = await s.readModifyWriteRow(t, b('multi'), [incr('f', 'z', 5n), append('f', 'a', 'x'), incr('f', 'm', -1n)]);
        expect(r5.cells.map((c) => show(c.qualifier))).toEqual(['a', 'm', 'z']);
        expect(show(r5.cells[0].value)).toBe('x');
        expect(readI64(r5.cells[1].value)).toBe(-1n);
        expect(readI64(r5.cells[2].value)).toBe(5n);
        expect(i64(-1n)).toEqual(u8(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)); // helper sanity
      });

      it('incrementing a value that is not 8 bytes fails the whole request and writes nothing', async () => {
        const t = await mkTable('rmw-bad', { f: null });
        await s.mutateRow(t, b('r'), [setCell('f', 'n', 1000, 'abc')]);
        await expectError(
          () => s.readModifyWriteRow(t, b('r'), [append('f', 'other', 'zz'), incr('f', 'n', 1n)]),
          // Ours say NOT_AN_INT64; Google's emulator answers UNKNOWN (DESIGN §3).
          ['NOT_AN_INT64', 'INVALID_ARGUMENT', 'INVALID_MUTATION'],
        );
        expect(await get(s, t, 'r')).toEqual(['f:n@1000=abc']);
        await expectError(() => s.readModifyWriteRow(t, b('r'), [incr('nope', 'n', 1n)]), 'FAMILY_NOT_FOUND');
        expect(await get(s, t, 'r')).toEqual(['f:n@1000=abc']);
      });
    });

    // =============================================================================================
    describe('sampleRowKeys', () => {
      it('the last sample has an empty key; offsets never decrease', async () => {
        const t = await mkTable('samples-small', { f: null });
        await putRows(
          s,
          t,
          ['a', 'b', 'c'].map((k) => ({ key: b(k), mutations: [setCell('f', 'q', 1000, 'value')] })),
        );
        const samples = await s.sampleRowKeys(t);
        expect(samples.length).toBeGreaterThanOrEqual(1);
        expect(samples[samples.length - 1].key.length).toBe(0);
        for (let i = 1; i < samples.length; i++) expect(samples[i].offsetBytes).toBeGreaterThanOrEqual(samples[i - 1].offsetBytes);
      });

      it('with a small tabletSplitBytes, a table of ~25 KB has several sorted samples', async () => {
        const st = await open({ nowMicros, tabletSplitBytes: 4096 });
        const t = await mkTable('samples-split', { f: null }, st);
        const rnd = prng(42);
        for (let batch = 0; batch < 10; batch++) {
          const entries: MutateRowsEntry[] = [];
          for (let i = 0; i < 20; i++) {
            const n = batch * 20 + i;
            entries.push({ key: b(`k${String(n).padStart(3, '0')}`), mutations: [setCell('f', 'q', 1000, randomBytes(128, rnd))] });
          }
          await putRows(st, t, entries);
        }
        // Splitting may happen in the background: give it up to 3 s.
        let samples = await st.sampleRowKeys(t);
        for (const deadline = Date.now() + 3000; samples.length < 4 && Date.now() < deadline;) {
          await new Promise((r) => setTimeout(r, 50));
          samples = await st.sampleRowKeys(t);
        }
        expect(samples.length).toBeGreaterThanOrEqual(4);
        const last = samples[samples.length - 1];
        expect(last.key.length).toBe(0);
        const inner = samples.slice(0, -1);
        for (let i = 0; i < inner.length; i++) {
          expect(inner[i].key.length).toBeGreaterThan(0);
          expect(compareBytes(inner[i].key, b('k000'))).toBeGreaterThanOrEqual(0);
          expect(compareBytes(inner[i].key, b('k199'))).toBeLessThanOrEqual(0);
          if (i > 0) expect(compareBytes(inner[i - 1].key, inner[i].key)).toBeLessThan(0);
        }
        for (let i = 1; i < samples.length; i++) expect(samples[i].offsetBytes).toBeGreaterThanOrEqual(samples[i - 1].offsetBytes);
        // 200 rows × 128 value bytes = 25 600 bytes of values, at least.
        expect(last.offsetBytes).toBeGreaterThanOrEqual(12_800);
        // Reads across tablet boundaries: every row once, in order, either direction.
        const all = Array.from({ length: 200 }, (_, i) => `k${String(i).padStart(3, '0')}`);
        expect(keysOf(await scan(st, t))).toEqual(all);
        expect(keysOf(await scan(st, t, { reversed: true }))).toEqual([...all].reverse());
        expect(keysOf(await scan(st, t, { rows: { rowRanges: [{ startKeyClosed: b('k050'), endKeyOpen: b('k150') }] } }))).toEqual(
          all.slice(50, 150),
        );
        expect(
          keysOf(
            await scan(st, t, {
              reversed: true,
              rowsLimit: 7,
              rows: { rowRanges: [{ startKeyOpen: b('k010'), endKeyClosed: b('k190') }] },
            }),
          ),
        ).toEqual(['k190', 'k189', 'k188', 'k187', 'k186', 'k185', 'k184']);
        expect(keysOf(await scan(st, t, { rowsLimit: 150 }))).toEqual(all.slice(0, 150));
        expect(keysOf(await scan(st, t, { rows: { rowKeys: [b('k199'), b('k000'), b('k100'), b('k100')] } }))).toEqual([
          'k000',
          'k100',
          'k199',
        ]);
        expect(keysOf(await scan(st, t, { filter: { rowKeyRegexFilter: 'k..7' } }))).toEqual(all.filter((k) => k.endsWith('7')));
        // Writes and drops across tablets.
        await st.mutateRow(t, b('k150'), [setCell('f', 'q', 2000, 'new')]);
        expect(await get(st, t, 'k150', { cellsPerColumnLimitFilter: 1 })).toEqual(['f:q@2000=new']);
        await st.dropRowRange(t, { rowKeyPrefix: b('k1') });
        expect(keysOf(await scan(st, t))).toEqual(all.slice(0, 100));
        expect(await st.readRow(t, b('k150'))).toBeNull();
        expect(keysOf(await scan(st, t, { reversed: true, rowsLimit: 2 }))).toEqual(['k099', 'k098']);
        const after = await st.sampleRowKeys(t);
        expect(after[after.length - 1].key.length).toBe(0);
        for (let i = 1; i < after.length; i++) expect(after[i].offsetBytes).toBeGreaterThanOrEqual(after[i - 1].offsetBytes);
      });
    });

    // =============================================================================================
    describe('dropRowRange', () => {
      it('by prefix (binary, 0xff edge) and all data; the table and its families remain', async () => {
        const t = await mkTable('drop', { f: null });
        const keys = [
          b('a1'),
          b('a2'),
          b('ab'),
          b('b1'),
          u8(0x61, 0xfe),
          u8(0x61, 0xff),
          u8(0x61, 0xff, 0x00),
          u8(0x61, 0xff, 0xff),
          u8(0x62),
          b('`z'),
        ];
        await putRows(
          s,
          t,
          keys.map((k) => ({ key: k, mutations: [setCell('f', 'q', 1000, 'v')] })),
        );
        expect(await get(s, t, u8(0x61, 0xff, 0x00))).toEqual(['f:q@1000=v']); // read once (a cache may now hold it)
        await s.dropRowRange(t, { rowKeyPrefix: u8(0x61, 0xff) });
        expect(await s.readRow(t, u8(0x61, 0xff, 0x00))).toBeNull();
        expect(await s.readRow(t, u8(0x61, 0xff))).toBeNull();
        expect(await get(s, t, u8(0x61, 0xfe))).toEqual(['f:q@1000=v']);
        expect(keysOf(await scan(s, t))).toEqual(['`z', 'a1', 'a2', 'ab', 'a\\xfe', 'b', 'b1']);
        await s.dropRowRange(t, { rowKeyPrefix: b('a') });
        expect(keysOf(await scan(s, t))).toEqual(['`z', 'b', 'b1']);
        await s.dropRowRange(t, { rowKeyPrefix: b('zzz') });
        expect(keysOf(await scan(s, t))).toEqual(['`z', 'b', 'b1']);
        expect(await get(s, t, 'b1')).toEqual(['f:q@1000=v']);
        await s.dropRowRange(t, { deleteAllDataFromTable: true });
        expect(await scan(s, t)).toEqual([]);
        expect(await s.readRow(t, b('b1'))).toBeNull();
        expect(await s.checkAndMutateRow(t, b('b1'), { falseMutations: [setCell('f', 'q', 3000, 'cam')] })).toBe(false);
        expect(await get(s, t, 'b1')).toEqual(['f:q@3000=cam']);
        await s.mutateRow(t, b('b1'), [delRow]);
        expect(Object.keys((await s.getTable(t)).families)).toEqual(['f']);
        await s.mutateRow(t, b('a1'), [setCell('f', 'q', 2000, 'again')]);
        expect(byKey(await scan(s, t))).toEqual({ a1: ['f:q@2000=again'] });
      });
    });

    // =============================================================================================
    describe('GC rules (applied on read immediately)', () => {
      it('maxNumVersions keeps the newest N per column, before filters see the row', async () => {
        const t = await mkTable('gc-versions', { g: { maxNumVersions: 2 } });
        await s.mutateRow(t, b('r'), [
          setCell('g', 'x', 1000, 'x1'),
          setCell('g', 'x', 3000, 'x3'),
          setCell('g', 'x', 2000, 'x2'),
          setCell('g', 'y', 1000, 'y1'),
        ]);
        expect(await get(s, t, 'r')).toEqual(['g:x@3000=x3', 'g:x@2000=x2', 'g:y@1000=y1']);
        expect(await get(s, t, 'r', { timestampRangeFilter: { endTimestampMicros: 2000 } })).toEqual(['g:y@1000=y1']);
        expect(await get(s, t, 'r', { valueRegexFilter: 'x1' })).toBeNull();
        await s.mutateRow(t, b('r'), [setCell('g', 'x', 4000, 'x4')]);
        expect(await get(s, t, 'r')).toEqual(['g:x@4000=x4', 'g:x@3000=x3', 'g:y@1000=y1']);
      });

      it('maxAgeMicros is measured against the injected clock', async () => {
        const t = await mkTable('gc-age', { g: { maxAgeMicros: 10 * SEC }, keep: null });
        await s.mutateRow(t, b('r'), [
          setCell('g', 'q', BASE - 20 * SEC, 'old'),
          setCell('g', 'q', BASE - 5 * SEC, 'mid'),
          setCell('g', 'q', -1, 'now'),
          setCell('keep', 'q', BASE - 100 * SEC, 'kept'),
        ]);
        expect(await get(s, t, 'r')).toEqual([`g:q@${BASE}=now`, `g:q@${BASE - 5 * SEC}=mid`, `keep:q@${BASE - 100 * SEC}=kept`]);
        clock.now = BASE + 6 * SEC;
        expect(await get(s, t, 'r')).toEqual([`g:q@${BASE}=now`, `keep:q@${BASE - 100 * SEC}=kept`]);
        clock.now = BASE + 11 * SEC;
        expect(await get(s, t, 'r')).toEqual([`keep:q@${BASE - 100 * SEC}=kept`]);
        await s.mutateRow(t, b('r'), [delFamily('keep')]);
        expect(await get(s, t, 'r')).toBeNull();
        expect(await scan(s, t)).toEqual([]);
      });

      it('union: a cell goes if ANY rule collects it', async () => {
        const t = await mkTable('gc-union', { g: { union: [{ maxNumVersions: 1 }, { maxAgeMicros: 10 * SEC }] } });
        await s.mutateRow(t, b('r'), [
          setCell('g', 'q', BASE - 20 * SEC, 'old'),
          setCell('g', 'q', BASE - 5 * SEC, 'mid'),
          setCell('g', 'q', BASE - 2 * SEC, 'new'),
        ]);
        expect(await get(s, t, 'r')).toEqual([`g:q@${BASE - 2 * SEC}=new`]);
        clock.now = BASE + 9 * SEC;
        expect(await get(s, t, 'r')).toBeNull();
      });

      it('the background sweep never removes a visible cell', async () => {
        const st = await open({ nowMicros, gcIntervalMs: 10 });
        const t = await mkTable('gc-sweep', { v: { maxNumVersions: 2 }, age: { maxAgeMicros: 10 * SEC }, keep: null }, st);
        const entries: MutateRowsEntry[] = [];
        for (let i = 0; i < 20; i++) {
          entries.push({
            key: b(`r${String(i).padStart(2, '0')}`),
            mutations: [
              setCell('v', 'q', 1000, 'v1'),
              setCell('v', 'q', 2000, 'v2'),
              setCell('v', 'q', 3000, 'v3'),
              setCell('age', 'q', BASE - 20 * SEC, 'old'),
              setCell('age', 'q', BASE - 5 * SEC, 'mid'),
              setCell('keep', 'q', 1000, 'k'),
            ],
          });
        }
        await putRows(st, t, entries);
        const expected = ['age:q@' + (BASE - 5 * SEC) + '=mid', 'keep:q@1000=k', 'v:q@3000=v3', 'v:q@2000=v2'];
        await new Promise((r) => setTimeout(r, 150));
        let rows = await scan(st, t);
        expect(rows).toHaveLength(20);
        for (const r of rows) expect(cellsOf(r)).toEqual(expected);
        clock.now = BASE + 6 * SEC;
        await new Promise((r) => setTimeout(r, 150));
        rows = await scan(st, t);
        expect(rows).toHaveLength(20);
        for (const r of rows) expect(cellsOf(r)).toEqual(['keep:q@1000=k', 'v:q@3000=v3', 'v:q@2000=v2']);
        await st.mutateRow(t, b('r00'), [setCell('v', 'q', 4000, 'v4')]);
        await new Promise((r) => setTimeout(r, 100));
        expect(await get(st, t, 'r00')).toEqual(['keep:q@1000=k', 'v:q@4000=v4', 'v:q@3000=v3']);
      });

      it('intersection: a cell goes only if ALL rules collect it', async () => {
        const t = await mkTable('gc-inter', { g: { intersection: [{ maxNumVersions: 1 }, { maxAgeMicros: 10 * SEC }] } });
        await s.mutateRow(t, b('r'), [
          setCell('g', 'q', BASE - 20 * SEC, 'old'),
          setCell('g', 'q', BASE - 5 * SEC, 'mid'),
          setCell('g', 'q', BASE - 2 * SEC, 'new'),
        ]);
        expect(await get(s, t, 'r')).toEqual([`g:q@${BASE - 2 * SEC}=new`, `g:q@${BASE - 5 * SEC}=mid`]);
        clock.now = BASE + 6 * SEC;
        expect(await get(s, t, 'r')).toEqual([`g:q@${BASE - 2 * SEC}=new`]);
        clock.now = BASE + 30 * SEC;
        expect(await get(s, t, 'r')).toEqual([`g:q@${BASE - 2 * SEC}=new`]);
      });
    });

    // =============================================================================================
    describe('limits (no partial writes)', () => {
      it('EMPTY_ROW_KEY', async () => {
        const t = await mkTable('emptykey', { f: null });
        await expectError(() => s.mutateRow(t, u8(), [setCell('f', 'q', 1000, 'v')]), 'EMPTY_ROW_KEY');
        await expectError(() => s.checkAndMutateRow(t, u8(), { falseMutations: [setCell('f', 'q', 1000, 'v')] }), 'EMPTY_ROW_KEY');
        await expectError(() => s.readModifyWriteRow(t, u8(), [incr('f', 'n', 1n)]), 'EMPTY_ROW_KEY');
        const results = await s.mutateRows(t, [
          { key: b('ok'), mutations: [setCell('f', 'q', 1000, 'v')] },
          { key: u8(), mutations: [setCell('f', 'q', 1000, 'v')] },
        ]);
        expect(results.map((r) => r.error?.code ?? 'OK')).toEqual(['OK', 'EMPTY_ROW_KEY']);
        expect(byKey(await scan(s, t))).toEqual({ ok: ['f:q@1000=v'] });
      });

      it('ROW_KEY_TOO_LARGE above 4096 bytes by default, whatever writes or reads the row', async () => {
        const t = await mkTable('bigkey', { f: null });
        const k4096 = new Uint8Array(4096).fill(0x6b);
        const k4097 = new Uint8Array(4097).fill(0x6b);
        await s.mutateRow(t, k4096, [setCell('f', 'q', 1000, 'v')]);
        const row = await s.readRow(t, k4096);
        expect(row?.key.length).toBe(4096);
        await expectError(() => s.mutateRow(t, k4097, [setCell('f', 'q', 1000, 'v')]), 'ROW_KEY_TOO_LARGE');
        await expectError(() => s.readModifyWriteRow(t, k4097, [append('f', 'q', 'v')]), 'ROW_KEY_TOO_LARGE');
        await expectError(() => s.checkAndMutateRow(t, k4097, { falseMutations: [setCell('f', 'q', 1000, 'v')] }), 'ROW_KEY_TOO_LARGE');
        const results = await s.mutateRows(t, [{ key: k4097, mutations: [setCell('f', 'q', 1000, 'v')] }]);
        expect(results.map((r) => r.error?.code ?? 'OK')).toEqual(['ROW_KEY_TOO_LARGE']);
        await expectError(() => s.readRow(t, k4097), 'ROW_KEY_TOO_LARGE');
        // A longer key names no row, as the empty key does: a row set may hold one and read nothing for it.
        expect(await scan(s, t, { rows: { rowKeys: [k4097] } })).toEqual([]);
        const rows = await scan(s, t);
        expect(rows.map((r) => r.key.length)).toEqual([4096]);
      });

      it('column qualifiers up to 16 KiB (Cloud Bigtable: 16 384 bytes); a longer one is INVALID_MUTATION, whatever writes it', async () => {
        const t = await mkTable('bigqualifier', { f: null });
        const q16k = new Uint8Array(16 * 1024).fill(0x71);
        const over = new Uint8Array(16 * 1024 + 1).fill(0x71);
        await s.mutateRow(t, b('r'), [setCell('f', q16k, 1000, 'v')]);
        expect((await s.readRow(t, b('r')))?.cells.map((c) => c.qualifier.length)).toEqual([16 * 1024]);
        const e = await expectError(() => s.mutateRow(t, b('r'), [delRow, setCell('f', over, 2000, 'v')]), 'INVALID_MUTATION');
        expect(e.message).toMatch(/16385 bytes exceeds the limit of 16384/);
        expect(e.details).toMatchObject({ family: 'f', size: 16385, limit: 16384 });
        await expectError(() => s.mutateRow(t, b('r'), [delRow, delColumn('f', over)]), 'INVALID_MUTATION');
        await expectError(
          () => s.checkAndMutateRow(t, b('r'), { trueMutations: [delRow, setCell('f', over, 2000, 'v')] }),
          'INVALID_MUTATION',
        );
        await expectError(() => s.readModifyWriteRow(t, b('r'), [append('f', over, 'v')]), 'INVALID_MUTATION');
        const results = await s.mutateRows(t, [
          { key: b('r'), mutations: [delRow, setCell('f', over, 2000, 'v')] },
          { key: b('ok'), mutations: [setCell('f', 'q', 1000, 'v')] },
        ]);
        expect(results.map((r) => r.error?.code ?? 'OK')).toEqual(['INVALID_MUTATION', 'OK']);
        expect((await s.readRow(t, b('r')))?.cells.map((c) => c.qualifier.length)).toEqual([16 * 1024]);
      });

      it('write options that are not an object, a durability not known or a misspelt option are INVALID_ARGUMENT and write nothing', async () => {
        const t = await mkTable('badoptions', { f: null });
        const any = <T>(x: unknown): T => x as T;
        const set = [setCell('f', 'q', 1000, 'v')];
        // Each was ignored: the write was made, durably.
        for (const options of [5, 'deferred', null, true, { durability: 'Deferred' }, { durability: 5 }, { durabilty: 'deferred' }]) {
          const o = any<WriteOptions>(options);
          const e = await expectError(() => s.mutateRow(t, b('r'), set, o), 'INVALID_ARGUMENT');
          expect(e.details.option).toBe(typeof options === 'object' && options !== null ? Object.keys(options)[0] : 'options');
          await expectError(() => s.mutateRows(t, [{ key: b('r'), mutations: set }], o), 'INVALID_ARGUMENT');
          if (typeof options === 'object' && options !== null && 'durability' in options) {
            await expectError(() => s.checkAndMutateRow(t, b('r'), { falseMutations: set, ...o }), 'INVALID_ARGUMENT');
          }
        }
        expect(await scan(s, t)).toEqual([]);
      });

      it('input of the wrong runtime type, or ambiguous, is a typed error and writes nothing', async () => {
        const t = await mkTable('badtypes', { f: null });
        await s.mutateRow(t, b('a'), [setCell('f', 'q', 1000, 'v')]);
        await s.mutateRow(t, b('z'), [setCell('f', 'q', 1000, 'v')]);
        const any = <T>(x: unknown): T => x as T;
        // Bytes given as strings: a string bound used to read as an absent one (the whole table).
        for (const rows of [
          { rowRanges: [{ startKeyClosed: any<Bytes>('m') }] },
          { rowRanges: [{ endKeyOpen: any<Bytes>('b') }] },
          { rowRanges: [any<RowRange>(null)] },
          { rowKeys: [any<Bytes>('a')] },
          { rowKeys: any<Bytes[]>('a') },
          any<RowSet>(5),
        ]) {
          await expectError(() => scan(s, t, { rows }), 'INVALID_ARGUMENT');
        }
        await expectError(() => scan(s, t, { reversed: any<boolean>('yes') }), 'INVALID_ARGUMENT');
        await expectError(() => scan(s, t, any<ReadRowsOptions>(5)), 'INVALID_ARGUMENT');
        // A mutation of two kinds: the first one checked used to win, and the other was dropped.
        const both = any<Mutation>({
          setCell: { familyName: 'f', columnQualifier: b('q'), timestampMicros: 2000, value: b('w') },
          deleteFromRow: {},
        });
        const e = await expectError(() => s.mutateRow(t, b('a'), [both]), 'INVALID_MUTATION');
        expect(e.details).toMatchObject({ kinds: ['setCell', 'deleteFromRow'] });
        await expectError(() => s.mutateRow(t, b('a'), [any<Mutation>({ setCell: null })]), 'INVALID_MUTATION');
        await expectError(() => s.mutateRow(t, b('a'), [any<Mutation>({ deleteFromFamily: undefined })]), 'INVALID_MUTATION');
        await expectError(() => s.mutateRow(t, b('a'), [delColumn('f', 'q', any<TimestampRange>(null))]), 'INVALID_RANGE');
        await expectError(
          () =>
            s.mutateRow(t, b('a'), [
              any<Mutation>({ setCell: { familyName: 7, columnQualifier: b('q'), timestampMicros: 2000, value: b('w') } }),
            ]),
          'INVALID_MUTATION',
        );
        await expectError(
          () =>
            s.readModifyWriteRow(t, b('a'), [
              any<ReadModifyWriteRule>({ familyName: 'f', columnQualifier: b('n'), appendValue: b('x'), incrementAmount: 1n }),
            ]),
          'INVALID_MUTATION',
        );
        await expectError(() => s.readModifyWriteRow(t, b('a'), [any<ReadModifyWriteRule>(null)]), 'INVALID_MUTATION');
        await expectError(() => s.checkAndMutateRow(t, b('a'), any<CheckAndMutateRequest>(null)), 'INVALID_ARGUMENT');
        const results = await s.mutateRows(t, [any<MutateRowsEntry>(null), { key: b('ok'), mutations: [setCell('f', 'q', 1000, 'v')] }]);
        expect(results.map((r) => r.error?.code ?? 'OK')).toEqual(['INVALID_MUTATION', 'OK']);
        // One of them drops every row: which one was meant is anyone's guess.
        await expectError(
          () => s.dropRowRange(t, any<DropRowRangeRequest>({ rowKeyPrefix: b('a'), deleteAllDataFromTable: true })),
          'INVALID_ARGUMENT',
        );
        await expectError(() => s.dropRowRange(t, any<DropRowRangeRequest>(null)), 'INVALID_ARGUMENT');
        expect(byKey(await scan(s, t))).toEqual({ a: ['f:q@1000=v'], ok: ['f:q@1000=v'], z: ['f:q@1000=v'] });
      });

      it('configured limits: ROW_KEY_TOO_LARGE, VALUE_TOO_LARGE, TOO_MANY_MUTATIONS', async () => {
        const st = await open({ nowMicros, limits: { maxRowKeyBytes: 8, maxValueBytes: 16, maxMutationsPerRow: 3 } });
        const t = await mkTable('limits', { f: null }, st);
        await st.mutateRow(t, b('12345678'), [setCell('f', 'q', 1000, '0123456789abcdef')]);
        await st.mutateRow(t, b('r'), [setCell('f', 'a', 1000, 'keep'), setCell('f', 'b', 1000, 'keep'), setCell('f', 'c', 1000, 'keep')]);
        const before = ['f:a@1000=keep', 'f:b@1000=keep', 'f:c@1000=keep'];

        await expectError(() => st.mutateRow(t, b('123456789'), [setCell('f', 'q', 1000, 'v')]), 'ROW_KEY_TOO_LARGE');
        await expectError(() => st.mutateRow(t, b('r'), [delRow, setCell('f', 'q', 2000, '0123456789abcdefX')]), 'VALUE_TOO_LARGE');
        await expectError(
          () => st.mutateRow(t, b('r'), [delRow, setCell('f', 'a', 2000, 'x'), setCell('f', 'b', 2000, 'x'), setCell('f', 'c', 2000, 'x')]),
          'TOO_MANY_MUTATIONS',
        );
        await expectError(
          () =>
            st.checkAndMutateRow(t, b('r'), {
              trueMutations: [delRow, setCell('f', 'a', 2000, 'x'), setCell('f', 'b', 2000, 'x'), setCell('f', 'c', 2000, 'x')],
            }),
          'TOO_MANY_MUTATIONS',
        );
        await expectError(
          () => st.checkAndMutateRow(t, b('r'), { trueMutations: [delRow, setCell('f', 'q', 2000, '0123456789abcdefX')] }),
          'VALUE_TOO_LARGE',
        );
        expect(await get(st, t, 'r')).toEqual(before);

        const results = await st.mutateRows(t, [
          { key: b('ok1'), mutations: [setCell('f', 'q', 1000, 'v')] },
          { key: b('123456789'), mutations: [setCell('f', 'q', 1000, 'v')] },
          { key: b('r'), mutations: [delRow, setCell('f', 'q', 1000, '0123456789abcdefX')] },
          { key: b('r'), mutations: [delRow, setCell('f', 'x', 1000, 'v'), setCell('f', 'y', 1000, 'v'), setCell('f', 'z', 1000, 'v')] },
          { key: b('ok2'), mutations: [setCell('f', 'q', 1000, 'v')] },
        ]);
        expect(results.map((r) => r.error?.code ?? 'OK')).toEqual([
          'OK',
          'ROW_KEY_TOO_LARGE',
          'VALUE_TOO_LARGE',
          'TOO_MANY_MUTATIONS',
          'OK',
        ]);
        expect(byKey(await scan(st, t))).toEqual({
          '12345678': ['f:q@1000=0123456789abcdef'],
          ok1: ['f:q@1000=v'],
          ok2: ['f:q@1000=v'],
          r: before,
        });
      });
    });

    // =============================================================================================
    describe('close', () => {
      it('every operation throws STORE_CLOSED after close; close is idempotent', async () => {
        const st = await open({ nowMicros });
        const t = await mkTable('closed', { f: null }, st);
        await st.mutateRow(t, b('r'), [setCell('f', 'q', 1000, 'v')]);
        await st.close();
        await st.close();
        const k = b('r');
        await expectError(() => st.listTables(), 'STORE_CLOSED');
        await expectError(() => st.createTable(tn('x'), spec({ f: null })), 'STORE_CLOSED');
        await expectError(() => st.getTable(t), 'STORE_CLOSED');
        await expectError(() => st.deleteTable(t), 'STORE_CLOSED');
        await expectError(() => st.modifyColumnFamilies(t, [{ id: 'g', create: {} }]), 'STORE_CLOSED');
        await expectError(() => st.dropRowRange(t, { deleteAllDataFromTable: true }), 'STORE_CLOSED');
        await expectError(() => st.readRow(t, k), 'STORE_CLOSED');
        await expectError(() => collectRows(st.readRows(t)), 'STORE_CLOSED');
        await expectError(() => st.mutateRow(t, k, [setCell('f', 'q', 2000, 'v')]), 'STORE_CLOSED');
        await expectError(() => st.mutateRows(t, [{ key: k, mutations: [setCell('f', 'q', 2000, 'v')] }]), 'STORE_CLOSED');
        await expectError(() => st.checkAndMutateRow(t, k, { trueMutations: [delRow] }), 'STORE_CLOSED');
        await expectError(() => st.readModifyWriteRow(t, k, [incr('f', 'n', 1n)]), 'STORE_CLOSED');
        await expectError(() => st.sampleRowKeys(t), 'STORE_CLOSED');
      });
    });

    // =============================================================================================
    describe('concurrency', () => {
      it('200 concurrent readModifyWriteRow increments on one row yield exactly 200', async () => {
        const t = await mkTable('conc-incr', { f: null });
        const results = await Promise.all(Array.from({ length: 200 }, () => s.readModifyWriteRow(t, b('counter'), [incr('f', 'n', 1n)])));
        const seen = results.map((r) => Number(readI64(r.cells[0].value))).sort((x, y) => x - y);
        expect(seen).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
        const row = await s.readRow(t, b('counter'), { cellsPerColumnLimitFilter: 1 });
        expect(readI64(row!.cells[0].value)).toBe(200n);
      });

      it('deferred writes are visible to every read when their promise resolves, and serialize with other writers of the row', async () => {
        const t = await mkTable('deferred', { f: null });
        const deferred = { durability: 'deferred' } as const;
        await s.mutateRow(t, b('r1'), [setCell('f', 'a', 1000, 'x')], deferred);
        expect(await get(s, t, 'r1')).toEqual(['f:a@1000=x']);
        const results = await s.mutateRows(t, [{ key: b('r2'), mutations: [setCell('f', 'a', 1000, 'y')] }], deferred);
        expect(results).toEqual([{ index: 0 }]);
        expect(await get(s, t, 'r2')).toEqual(['f:a@1000=y']);
        // A deferred conditional "set if absent" races like a durable one: exactly one winner.
        const matched = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            s.checkAndMutateRow(t, b('r3'), { falseMutations: [setCell('f', 'a', 1000 * (i + 1), `w${i}`)], durability: 'deferred' }),
          ),
        );
        expect(matched.filter((m) => !m)).toHaveLength(1);
        const rows: string[] = [];
        for await (const r of s.readRows(t)) rows.push(Buffer.from(r.key).toString());
        expect(rows).toEqual(['r1', 'r2', 'r3']);
        // Followed by a durable write, everything is there after a reopen (durable backends).
        await s.mutateRow(t, b('r4'), [setCell('f', 'a', 1000, 'z')]);
        if (!factory.reopen) return;
        s = await reopen(s);
        expect(await get(s, t, 'r1')).toEqual(['f:a@1000=x']);
        expect(await get(s, t, 'r3')).toHaveLength(1);
      });

      it('concurrent checkAndMutateRow "set if absent" on one row: exactly one wins', async () => {
        const t = await mkTable('conc-cas', { f: null });
        const n = 50;
        const matched = await Promise.all(
          Array.from({ length: n }, (_, i) =>
            s.checkAndMutateRow(t, b('lock'), { falseMutations: [setCell('f', 'owner', 1000 * (i + 1), `w${i}`)] }),
          ),
        );
        const winners = matched.flatMap((m, i) => (m ? [] : [i]));
        expect(winners).toHaveLength(1);
        const w = winners[0];
        expect(await get(s, t, 'lock')).toEqual([`f:owner@${1000 * (w + 1)}=w${w}`]);

        // Compare-and-swap on a value: exactly one of the racers sees "free".
        await s.mutateRow(t, b('cas'), [setCell('f', 'state', 1000, 'free')]);
        const pred: RowFilter = { chain: [{ cellsPerColumnLimitFilter: 1 }, { valueRegexFilter: 'free' }] };
        const took = await Promise.all(
          Array.from({ length: n }, (_, i) =>
            s.checkAndMutateRow(t, b('cas'), { predicateFilter: pred, trueMutations: [setCell('f', 'state', 2000, `taken-${i}`)] }),
          ),
        );
        const takers = took.flatMap((m, i) => (m ? [i] : []));
        expect(takers).toHaveLength(1);
        expect(await get(s, t, 'cas')).toEqual([`f:state@2000=taken-${takers[0]}`, 'f:state@1000=free']);
      });

      it('a concurrent reader never sees part of a multi-cell mutateRow (randomized, seeded)', async () => {
        const t = await mkTable('conc-atomic', { a: null, b: null });
        const rnd = prng(1234);
        const expected = new Map<string, string[]>(); // generation value → exact cells
        const gens = 60;
        const plans: Mutation[][] = [];
        for (let g = 0; g < gens; g++) {
          const value = `g${String(g).padStart(3, '0')}`;
          const k = 1 + Math.floor(rnd() * 12);
          const cols = shuffled(
            Array.from({ length: 12 }, (_, i) => i),
            rnd,
          )
            .slice(0, k)
            .sort((x, y) => x - y);
          const cells = cols.map((c) => ({ fam: c % 2 === 0 ? 'a' : 'b', q: `c${String(c).padStart(2, '0')}` }));
          const setMuts = cells.map((c) => setCell(c.fam, c.q, 1000, value));
          const clear = rnd() < 0.5 ? [delRow] : [delFamily('a'), delFamily('b')];
          plans.push([...clear, ...shuffled(setMuts, rnd)]);
          const sorted = [...cells].sort((x, y) => compareStrings(x.fam, y.fam) || compareStrings(x.q, y.q));
          expected.set(
            value,
            sorted.map((c) => `${c.fam}:${c.q}@1000=${value}`),
          );
        }
        let done = false;
        const snapshots: (Row | null)[] = [];
        const reader = async (useScan: boolean): Promise<void> => {
          while (!done) {
            if (useScan) {
              const rows = await collectRows(
                s.readRows(t, { rows: { rowRanges: [{ startKeyClosed: b('row'), endKeyClosed: b('row') }] } }),
              );
              snapshots.push(rows[0] ?? null);
            } else {
              snapshots.push(await s.readRow(t, b('row')));
            }
            await new Promise((r) => setImmediate(r));
          }
        };
        const writer = async (): Promise<void> => {
          for (const plan of plans) {
            await s.mutateRow(t, b('row'), plan);
            await new Promise((r) => setImmediate(r));
          }
          done = true;
        };
        await Promise.all([writer(), reader(false), reader(true), reader(false)]);
        expect(snapshots.length).toBeGreaterThan(gens / 2);
        let nonNull = 0;
        for (const snap of snapshots) {
          if (snap === null) continue;
          nonNull++;
          const cells = cellsOf(snap)!;
          const value = show(snap.cells[0].value);
          expect(expected.has(value), `unknown value ${value}`).toBe(true);
          expect(cells, `snapshot of generation ${value}`).toEqual(expected.get(value));
        }
        expect(nonNull).toBeGreaterThan(0);
        const finalValue = `g${String(gens - 1).padStart(3, '0')}`;
        expect(await get(s, t, 'row')).toEqual(expected.get(finalValue));
      });
    });

    // =============================================================================================
    describe('locality groups', () => {
      it('families in different groups are read together; a one-family filter returns only that family', async () => {
        const t = tn('locality');
        await s.createTable(t, {
          families: { data: { localityGroup: 'main' }, notify: { localityGroup: 'side', gcRule: { maxNumVersions: 1 } }, other: {} },
        });
        await putRows(s, t, [
          {
            key: b('r1'),
            mutations: [setCell('data', 'q', 1000, 'd1'), setCell('notify', 'n', 1000, 'n1'), setCell('other', 'o', 1000, 'o1')],
          },
          { key: b('r2'), mutations: [setCell('data', 'q', 1000, 'd2')] },
          { key: b('r3'), mutations: [setCell('notify', 'n', 1000, 'n3-old'), setCell('notify', 'n', 2000, 'n3')] },
        ]);
        expect(await get(s, t, 'r1')).toEqual(['data:q@1000=d1', 'notify:n@1000=n1', 'other:o@1000=o1']);
        expect(await get(s, t, 'r1', { familyNameRegexFilter: 'notify' })).toEqual(['notify:n@1000=n1']);
        expect(await get(s, t, 'r2', { familyNameRegexFilter: 'notify' })).toBeNull();
        expect(byKey(await scan(s, t, { filter: { familyNameRegexFilter: 'notify' } }))).toEqual({
          r1: ['notify:n@1000=n1'],
          r3: ['notify:n@2000=n3'],
        });
        expect(byKey(await scan(s, t, { filter: { familyNameRegexFilter: 'data' } }))).toEqual({
          r1: ['data:q@1000=d1'],
          r2: ['data:q@1000=d2'],
        });
        expect(byKey(await scan(s, t, { filter: { columnRangeFilter: { familyName: 'notify' } }, reversed: true }))).toEqual({
          r3: ['notify:n@2000=n3'],
          r1: ['notify:n@1000=n1'],
        });

        await s.modifyColumnFamilies(t, [{ id: 'late', create: { localityGroup: 'side' } }]);
        await s.mutateRow(t, b('r2'), [setCell('late', 'l', 1000, 'l2'), setCell('data', 'q', 2000, 'd2b')]);
        expect(await get(s, t, 'r2')).toEqual(['data:q@2000=d2b', 'data:q@1000=d2', 'late:l@1000=l2']);
        expect(await get(s, t, 'r2', { familyNameRegexFilter: 'late' })).toEqual(['late:l@1000=l2']);
      });
    });

    // =============================================================================================
    describe.skipIf(!factory.reopen)('persistence (reopen)', () => {
      it('tables, families, GC rules and all data survive close and reopen', async () => {
        let st = await open({ nowMicros });
        const t = tn('persist');
        const gone = tn('persist-gone');
        const rules: Record<string, GcRule> = {
          v: { maxNumVersions: 2 },
          u: { union: [{ maxNumVersions: 3 }, { maxAgeMicros: 3600 * SEC }] },
          i: { intersection: [{ maxNumVersions: 1 }, { maxAgeMicros: 60 * SEC }] },
        };
        await st.createTable(t, {
          families: {
            v: { gcRule: rules.v, localityGroup: 'g1' },
            u: { gcRule: rules.u },
            i: { gcRule: rules.i, localityGroup: 'g2' },
            plain: {},
            dropme: {},
          },
        });
        await st.createTable(gone, spec({ f: null }));
        await st.mutateRow(gone, b('r'), [setCell('f', 'q', 1000, 'v')]);

        const rnd = prng(99);
        const binKeys = [u8(0x00), u8(0xff, 0x00, 0xff), u8(0x80), b('text')];
        for (const k of binKeys) {
          await st.mutateRow(t, k, [
            setCell('v', u8(0x00), 1000, randomBytes(10, rnd)),
            setCell('v', u8(0x00), 2000, randomBytes(10, rnd)),
            setCell('v', u8(0x00), 3000, randomBytes(10, rnd)),
            setCell('plain', u8(), 1000, u8()),
            setCell('plain', u8(0xff), 1000, randomBytes(300, rnd)),
            setCell('dropme', 'x', 1000, 'x'),
          ]);
        }
        await st.mutateRow(t, b('ages'), [
          setCell('u', 'q', BASE - 2 * SEC, 'u-recent'),
          setCell('i', 'q', BASE - 120 * SEC, 'i-old'),
          setCell('i', 'q', BASE - 30 * SEC, 'i-young'),
          setCell('i', 'q', BASE - 10 * SEC, 'i-newest'),
        ]);
        await st.readModifyWriteRow(t, b('counter'), [incr('plain', 'n', 41n)]);
        await st.mutateRow(t, b('deleted'), [setCell('plain', 'q', 1000, 'x')]);
        await st.mutateRow(t, b('deleted'), [delRow]);
        await st.mutateRow(t, b('text'), [delColumn('plain', u8())]);
        await st.modifyColumnFamilies(t, [{ id: 'dropme', drop: true }]);
        await st.dropRowRange(t, { rowKeyPrefix: u8(0x80) });
        await st.deleteTable(gone);

        const snapshot = byKey(await scan(st, t));
        expect(Object.keys(snapshot)).toEqual(['\\x00', 'ages', 'counter', 'text', '\\xff\\x00\\xff']);
        expect(snapshot.ages).toEqual([
          `i:q@${BASE - 10 * SEC}=i-newest`,
          `i:q@${BASE - 30 * SEC}=i-young`,
          `u:q@${BASE - 2 * SEC}=u-recent`,
        ]);
        expect(snapshot.text).toHaveLength(3); // v: 2 versions, plain:\xff
        const tablesBefore = await st.listTables();

        st = await reopen(st);
        expect(await st.listTables()).toEqual(tablesBefore);
        expect(tablesBefore).toContain(t);
        expect(tablesBefore).not.toContain(gone);
        await expectError(() => st.getTable(gone), 'TABLE_NOT_FOUND');
        const got = await st.getTable(t);
        expect(Object.keys(got.families).sort()).toEqual(['i', 'plain', 'u', 'v']);
        for (const [fam, rule] of Object.entries(rules)) expect(got.families[fam].gcRule, fam).toEqual(rule);
        expect(got.families.plain.gcRule).toBeUndefined();
        expect(byKey(await scan(st, t))).toEqual(snapshot);
        expect(byKey(await scan(st, t, { filter: { familyNameRegexFilter: 'i' } }))).toEqual({
          ages: [`i:q@${BASE - 10 * SEC}=i-newest`, `i:q@${BASE - 30 * SEC}=i-young`],
        });

        // GC rules still apply, the counter continues, the dropped family stays dropped.
        await st.mutateRow(t, b('text'), [setCell('v', u8(0x00), 4000, 'v4')]);
        const textV = await get(st, t, 'text', { familyNameRegexFilter: 'v' });
        expect(textV).toHaveLength(2);
        expect(textV![0]).toBe('v:\\x00@4000=v4');
        expect(textV![1].startsWith('v:\\x00@3000=')).toBe(true);
        const c = await st.readModifyWriteRow(t, b('counter'), [incr('plain', 'n', 1n)]);
        expect(readI64(c.cells[0].value)).toBe(42n);
        await st.modifyColumnFamilies(t, [{ id: 'dropme', create: {} }]);
        expect(await st.readRow(t, u8(0x00), { familyNameRegexFilter: 'dropme' })).toBeNull();
        clock.now = BASE + 25 * SEC; // i-young becomes 55 s old: kept (only ≥ 60 s and not newest goes)
        const snapshot2 = byKey(await scan(st, t));

        st = await reopen(st);
        expect(byKey(await scan(st, t))).toEqual(snapshot2);
        clock.now = BASE + 31 * SEC; // i-young is now 61 s old and not the newest: collected
        expect(await get(st, t, 'ages', { familyNameRegexFilter: 'i' })).toEqual([`i:q@${BASE - 10 * SEC}=i-newest`]);
        expect(Object.keys((await st.getTable(t)).families).sort()).toEqual(['dropme', 'i', 'plain', 'u', 'v']);
      });

      it('the previous handle is closed by reopen (STORE_CLOSED), the new one works', async () => {
        const st = await open({ nowMicros });
        const t = await mkTable('persist-handle', { f: null }, st);
        await st.mutateRow(t, b('r'), [setCell('f', 'q', 1000, 'v')]);
        const st2 = await reopen(st);
        await expectError(() => st.readRow(t, b('r')), 'STORE_CLOSED');
        expect(await get(st2, t, 'r')).toEqual(['f:q@1000=v']);
      });
    });
  });
}
