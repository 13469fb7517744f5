/**
 * readVersionNow, the synchronous point read every `get` on an embedded store starts with, and
 * readVersionsNow, its several-column form (`getMany`): they answer from a per-row summary the
 * store keeps with its cached row, and must agree with the row's history at every read timestamp
 * — declining (undefined) exactly when a lock at or below the read timestamp or a value kept in
 * `data` is in the way. Histories are random: puts, long
 * puts, deletes, rollbacks, locks taken and released, unrelated data and notify cells; reads at
 * random timestamps, with and without the column's map key, the row as bytes or as its bytesKey,
 * through a cache that keeps every row,
 * one that keeps almost none, and none. Scans of a row (scanAt) at timestamps where nothing is in
 * its way must agree with the same histories.
 */
import { describe, expect, it } from 'vitest';
import { openStore } from '../store/open-store.js';
import { atomicRowsOf } from '../store/store.js';
import type { Mutation } from '../store/types.js';
import { mulberry32 } from '../util/seeded-random.js';
import {
  DATA,
  LOCK,
  NOTIFY,
  PERCOLATOR_TABLE_SPEC,
  WRITE,
  type WriteRecord,
  encodeColumn,
  encodeLock,
  encodeWrite,
  userColumn,
} from './layout.js';
import {
  type ReadContext,
  type VersionAt,
  readResolvedNow,
  readVersionNow,
  readVersionsAt,
  readVersionsNow,
  scanAt,
} from './snapshot-read.js';

interface Committed {
  readonly ts: number;
  readonly kind: 'put' | 'long' | 'delete' | 'rollback';
  readonly value: string;
}
interface History {
  writes: Committed[];
  locks: number[];
}

/** What a read at `ts` must return: undefined when a lock at or below ts or a long value is in the way. */
function expected(h: History, ts: number): { value: string | null; commitTs: number } | undefined {
  if (h.locks.some((l) => l <= ts)) return undefined;
  let newest: Committed | undefined;
  for (const w of h.writes) if (w.ts <= ts && w.kind !== 'rollback' && (newest === undefined || w.ts > newest.ts)) newest = w;
  if (newest === undefined) return { value: null, commitTs: 0 };
  if (newest.kind === 'long') return undefined;
  return { value: newest.kind === 'delete' ? null : newest.value, commitTs: newest.ts };
}

const shown = (v: VersionAt | undefined) =>
  v === undefined ? undefined : { value: v.value === null ? null : Buffer.from(v.value).toString(), commitTs: v.commitTs };

const ROWS = ['r1', 'r2', 'r3'];
const COLUMNS = ['c:x', 'c:y', 'd:z'];

describe('readVersionNow', () => {
  for (const [name, cacheBytes, encodedCacheBytes] of [
    ['a cache that keeps every row', undefined, undefined],
    ['a cache that keeps almost nothing', 4096, 0],
    ['a cache that keeps almost nothing decoded, the rest encoded', 4096, 1024 * 1024],
    ['no cache', 0, undefined],
  ] as const) {
    it(`agrees with the row's history at random timestamps, through ${name}`, async () => {
      const store = atomicRowsOf(
        await openStore('memory:', {
          gcIntervalMs: 0,
          ...(cacheBytes === undefined ? {} : { cacheBytes }),
          ...(encodedCacheBytes === undefined ? {} : { encodedCacheBytes }),
        }),
      );
      if (store === null) throw new Error('memory: implements the atomic extension');
      await store.createTable('t', PERCOLATOR_TABLE_SPEC);
      const ctx: ReadContext = { syncStore: store, lockWaitMs: 0, liveness: { isAlive: async () => true }, nowMs: () => 0 };
      const rand = mulberry32(20261126);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
      const histories = new Map<string, History>();
      const historyOf = (row: string, column: string): History => {
        const k = `${row}/${column}`;
        let h = histories.get(k);
        if (h === undefined) histories.set(k, (h = { writes: [], locks: [] }));
        return h;
      };
      const write = (q: Uint8Array, ts: number, w: WriteRecord): Mutation => ({
        setCell: { familyName: WRITE, columnQualifier: q, timestampMicros: ts, value: encodeWrite(w) },
      });
      let ts = 1000;
      let declined = 0;
      let answered = 0;
      let scanned = 0;
      for (let step = 0; step < 1500; step++) {
        const row = pick(ROWS);
        const column = pick(COLUMNS);
        const h = historyOf(row, column);
        const q = encodeColumn(column);
        ts += 1 + Math.floor(rand() * 3);
        const r = rand();
        const value = `v${step}`;
        let m: Mutation[];
        if (r < 0.3) {
          m = [write(q, ts, { kind: 'put', startTs: ts - 1, value: { mode: 'inline', value: Buffer.from(value) } })];
          h.writes.push({ ts, kind: 'put', value });
        } else if (r < 0.36) {
          m = [write(q, ts, { kind: 'put', startTs: ts - 1, value: { mode: 'data' } })];
          h.writes.push({ ts, kind: 'long', value });
        } else if (r < 0.46) {
          m = [write(q, ts, { kind: 'delete', startTs: ts - 1, value: { mode: 'none' } })];
          h.writes.push({ ts, kind: 'delete', value });
        } else if (r < 0.56) {
          m = [write(q, ts, { kind: 'rollback', startTs: ts, value: { mode: 'none' } })];
          h.writes.push({ ts, kind: 'rollback', value });
        } else if (r < 0.66) {
          const lock = encodeLock({
            kind: 'put',
            notify: false,
            primaryTable: 't',
            primaryRow: Buffer.from(row),
            primaryColumn: column,
            wallTimeMs: 0,
            ttlMs: 1000,
            owner: 'w',
            value: { mode: 'inline', value: Buffer.from(value) },
          });
          m = [{ setCell: { familyName: LOCK, columnQualifier: q, timestampMicros: ts, value: lock } }];
          h.locks.push(ts);
        } else if (r < 0.8 && h.locks.length > 0) {
          const l = h.locks.splice(Math.floor(rand() * h.locks.length), 1)[0] as number;
          m = [
            {
              deleteFromColumn: { familyName: LOCK, columnQualifier: q, timeRange: { startTimestampMicros: l, endTimestampMicros: l + 1 } },
            },
          ];
        } else {
          // Cells a read must ignore: data of another transaction, a notification.
          m = [
            { setCell: { familyName: DATA, columnQualifier: q, timestampMicros: ts, value: Buffer.from(value) } },
            { setCell: { familyName: NOTIFY, columnQualifier: q, timestampMicros: ts, value: Buffer.alloc(0) } },
          ];
        }
        await store.mutateRow('t', Buffer.from(row), m);
        for (let i = 0; i < 4; i++) {
          const readRow = pick(ROWS);
          const readColumn = pick(COLUMNS);
          const at = rand() < 0.3 ? Number.MAX_SAFE_INTEGER : 990 + Math.floor(rand() * (ts - 985));
          const ref = rand() < 0.5 ? userColumn(readColumn) : { column: readColumn, q: encodeColumn(readColumn) };
          const got = readVersionNow('t', rand() < 0.5 ? Buffer.from(readRow) : readRow, ref, at, ctx); // bytes or bytesKey
          const want = expected(historyOf(readRow, readColumn), at);
          expect(shown(got), `${readRow} ${readColumn} at ${at} after step ${step}`).toEqual(want);
          if (want === undefined) declined++;
          else answered++;
          // The same read as a promise already resolved; at or above the newest commit, the same
          // promise again until the cell changes.
          const resolved = readResolvedNow('t', rand() < 0.5 ? Buffer.from(readRow) : readRow, ref, at, ctx);
          if (want === undefined) expect(resolved).toBeUndefined();
          else {
            const v = await (resolved as Promise<Uint8Array | null>);
            expect(v === null ? null : Buffer.from(v).toString(), `${readRow} ${readColumn} resolved at ${at} after step ${step}`).toBe(
              want.value,
            );
            const newest = historyOf(readRow, readColumn).writes.every((w) => w.ts <= at);
            if (newest && cacheBytes === undefined) expect(readResolvedNow('t', readRow, ref, at, ctx)).toBe(resolved); // the row stays cached
          }
        }
        for (let i = 0; i < 2; i++) {
          const readRow = pick(ROWS);
          const columns = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(COLUMNS));
          const at = rand() < 0.3 ? Number.MAX_SAFE_INTEGER : 990 + Math.floor(rand() * (ts - 985));
          const refs = columns.map((c) => (rand() < 0.5 ? userColumn(c) : { column: c, q: encodeColumn(c) }));
          const got = readVersionsNow('t', rand() < 0.5 ? Buffer.from(readRow) : readRow, refs, at, ctx);
          const wants = columns.map((c) => expected(historyOf(readRow, c), at));
          const want = wants.includes(undefined) ? undefined : wants;
          expect(got?.map(shown), `${readRow} ${columns.join(',')} at ${at} after step ${step}`).toEqual(want);
        }
        // A scan of each row at a timestamp where nothing is in its way (no lock at or below it,
        // no long value): the row's visible columns, as the histories say.
        if (step % 5 === 4) {
          const at = rand() < 0.3 ? Number.MAX_SAFE_INTEGER : 990 + Math.floor(rand() * (ts - 985));
          for (const row of ROWS) {
            const want: Record<string, string> = {};
            const wants = COLUMNS.map((column) => [column, expected(historyOf(row, column), at)] as const);
            if (wants.some(([, v]) => v === undefined)) continue;
            for (const [column, v] of wants) if (v?.value != null) want[column] = v.value;
            const got: Record<string, string>[] = [];
            const range = { startKeyClosed: Buffer.from(row), endKeyOpen: Buffer.from(`${row}\u0000`) };
            for await (const r of scanAt(store, 't', range, at, ctx))
              got.push(Object.fromEntries([...r.columns].map(([c, v]) => [c, Buffer.from(v).toString()])));
            expect(got, `scan of ${row} at ${at} after step ${step}`).toEqual(Object.keys(want).length === 0 ? [] : [want]);
            scanned++;
          }
        }
      }
      // Both outcomes were exercised often, and scans too.
      expect(scanned).toBeGreaterThan(10);
      expect(declined).toBeGreaterThan(200);
      expect(answered).toBeGreaterThan(2000);
      await store.close();
    });
  }
});

describe('long values (kept in data)', () => {
  for (const sync of [true, false]) {
    it(`are read from their data cell by readVersionsAt and scanAt (${sync ? 'synchronous store reads' : 'async reads'}); a missing one is CORRUPTED_RECORD`, async () => {
      const store = atomicRowsOf(await openStore('memory:', { gcIntervalMs: 0 }));
      if (store === null) throw new Error('memory: implements the atomic extension');
      await store.createTable('t', PERCOLATOR_TABLE_SPEC);
      const ctx: ReadContext = {
        ...(sync ? { syncStore: store } : {}),
        lockWaitMs: 0,
        liveness: { isAlive: async () => true },
        nowMs: () => 0,
      };
      const row = Buffer.from('r');
      const [x, y] = [userColumn('c:x'), userColumn('c:y')];
      const long = (start: number) => Buffer.alloc(400, start % 256);
      const put = (q: Uint8Array, start: number, commit: number, inline: Buffer | null): Mutation[] => [
        ...(inline === null ? [{ setCell: { familyName: DATA, columnQualifier: q, timestampMicros: start, value: long(start) } }] : []),
        {
          setCell: {
            familyName: WRITE,
            columnQualifier: q,
            timestampMicros: commit,
            value: encodeWrite({
              kind: 'put',
              startTs: start,
              value: inline === null ? { mode: 'data' } : { mode: 'inline', value: inline },
            }),
          },
        },
      ];
      // Two long versions of c:x (and a data cell of c:y at x's second start ts: not x's).
      await store.mutateRow('t', row, [...put(x.q, 10, 20, null), ...put(y.q, 11, 21, Buffer.from('short')), ...put(x.q, 30, 40, null)]);
      await store.mutateRow('t', row, [
        { setCell: { familyName: DATA, columnQualifier: y.q, timestampMicros: 30, value: Buffer.from('not x') } },
      ]);
      const values = async (ts: number) => (await readVersionsAt(store, 't', row, [x, y], ts, ctx)).map((v) => v.value);
      expect(await values(25)).toEqual([long(10), Buffer.from('short')]);
      expect(await values(45)).toEqual([long(30), Buffer.from('short')]);
      const scanned = async (ts: number) => {
        const out: [string, Uint8Array][] = [];
        for await (const r of scanAt(store, 't', {}, ts, ctx)) out.push(...r.columns);
        return out;
      };
      expect(await scanned(25)).toEqual([
        ['c:x', long(10)],
        ['c:y', Buffer.from('short')],
      ]);
      await store.mutateRow('t', row, [
        { deleteFromColumn: { familyName: DATA, columnQualifier: x.q, timeRange: { startTimestampMicros: 30, endTimestampMicros: 31 } } },
      ]);
      expect(await values(25)).toEqual([long(10), Buffer.from('short')]);
      for (const read of [() => values(45), () => scanned(45)]) {
        const e = await read().then(
          () => null,
          (err: unknown) => err,
        );
        expect(e).toMatchObject({ code: 'CORRUPTED_RECORD', details: { startTs: 30, commitTs: 40, readTs: 45 } });
      }
      await store.close();
    });
  }
});
