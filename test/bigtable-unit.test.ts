/**
 * Unit and property tests of the bigtable:// backend's pure parts (no server needed): URL
 * parsing, timestamp mapping, GC rules as filters, the family-complement regex, filter
 * translation, chunk merging, stream resumption, error mapping and the read-modify-write CAS
 * condition. Filters are checked by evaluating them with our own filter engine.
 */
import { describe, expect, it } from 'vitest';
import { checkModifications, gcRuleFromProto, gcRuleToProto } from '../src/store/bigtable/admin-convert.js';
import { emulatorUnsafe, toProtoFilter } from '../src/store/bigtable/filter-translate.js';
import { familyComplementRegex, gcKeepFilter } from '../src/store/bigtable/gc-filter.js';
import { codeFromStatusDetails, statusToStoreError, toStoreError } from '../src/store/bigtable/grpc-errors.js';
import { toProtoMutations } from '../src/store/bigtable/mutations.js';
import { filterIdentity } from '../src/store/bigtable/read-row-batcher.js';
import { ChunkMerger, remainingRowSet } from '../src/store/bigtable/read-rows.js';
import { applyRules, columnKey, ruleColumns, unchangedCondition } from '../src/store/bigtable/rmw-cas.js';
import { TimestampMapping } from '../src/store/bigtable/timestamps.js';
import { parseBigtableUrl } from '../src/store/bigtable/url.js';
import { makeCell } from '../src/store/cells.js';
import { compileFilter } from '../src/store/filter/row-filter.js';
import { collectColumn } from '../src/store/gc-rule.js';
import { intervalContains, planRowSet } from '../src/store/row-set.js';
import type { Cell, GcRule, RowFilter, RowSet, TableSpec } from '../src/store/types.js';
import { mulberry32 as prng } from '../src/util/seeded-random.js';

const b = (s: string): Uint8Array => Buffer.from(s, 'latin1');
const fmt = (cells: readonly Cell[]): string[] =>
  cells.map((c) => `${c.family}:${Buffer.from(c.qualifier).toString('hex')}@${c.timestamp}`);

describe('parseBigtableUrl', () => {
  it('host forms, Cloud form, defaults and options', () => {
    expect(parseBigtableUrl('bigtable://127.0.0.1:8086')).toMatchObject({
      host: '127.0.0.1:8086',
      project: 'percolator',
      instance: 'percolator',
      timestampScale: 1,
      emulator: false,
    });
    expect(parseBigtableUrl('bigtable://localhost:9000/p1/i-2?emulator=1&timestampScale=1000')).toMatchObject({
      host: 'localhost:9000',
      project: 'p1',
      instance: 'i-2',
      timestampScale: 1000,
      emulator: true,
    });
    expect(parseBigtableUrl('bigtable://[::1]:8086?emulator')).toMatchObject({ host: '[::1]:8086', emulator: true });
    const cloud = parseBigtableUrl('bigtable://my-project/my-instance?appProfile=batch&schemaCacheMs=500');
    expect(cloud.host).toBeUndefined();
    expect(cloud).toMatchObject({
      project: 'my-project',
      instance: 'my-instance',
      timestampScale: 1000,
      appProfileId: 'batch',
      schemaCacheMs: 500,
    });
    expect(parseBigtableUrl('bigtable://my-project/my-instance?timestampScale=1').timestampScale).toBe(1);
  });

  it('rejects malformed URLs with INVALID_STORE_URL', () => {
    for (const bad of [
      'bigtable://',
      'bigtable://host:99999',
      'bigtable://host:80/only-project',
      'bigtable://project',
      'bigtable://p/i/extra',
      'bigtable://h:1?timestampScale=10',
      'bigtable://h:1?nope=1',
      'bigtable://p/i?emulator=1',
      'bigtable://h:1?emulator=maybe',
      'memory:',
    ]) {
      expect(() => parseBigtableUrl(bad), bad).toThrow(expect.objectContaining({ code: 'INVALID_STORE_URL' }));
    }
  });
});

describe('TimestampMapping', () => {
  it('is exact up to 2^53 µs with scale 1000 (int64 strings on the wire)', () => {
    const m = new TimestampMapping(1000, true);
    const t = Number.MAX_SAFE_INTEGER;
    expect(m.toWire(t)).toBe('9007199254740991000');
    expect(m.fromWire(m.toWire(t))).toBe(t);
    expect(m.fromWire('1700000000123456000')).toBe(1_700_000_000_123_456);
    expect(m.fromWire('1999')).toBe(1); // floor for foreign cells
  });

  it('rounds range bounds up to milliseconds only for millisecond servers at scale 1', () => {
    expect(new TimestampMapping(1, true).rangeToWire(1001, 2500)).toEqual({ start: 2000n, end: 3000n });
    expect(new TimestampMapping(1, true).rangeToWire(1001, 1999)).toBeNull();
    expect(new TimestampMapping(1, false).rangeToWire(1001, 2500)).toEqual({ start: 1001n, end: 2500n });
    expect(new TimestampMapping(1000, true).rangeToWire(1001, 0)).toEqual({ start: 1001000n, end: 0n });
    expect(new TimestampMapping(1, true).rangeToWire(5, 5)).toBeNull();
    expect(new TimestampMapping(1, true).requiresMillis).toBe(true);
    expect(new TimestampMapping(1000, true).requiresMillis).toBe(false);
  });
});

describe('GC rules as a server-side filter', () => {
  const rules: GcRule[] = [
    { maxNumVersions: 1 },
    { maxNumVersions: 3 },
    { maxAgeMicros: 5_000 },
    { union: [] },
    { union: [{ maxNumVersions: 2 }, { maxAgeMicros: 7_000 }] },
    { intersection: [{ maxNumVersions: 1 }, { maxAgeMicros: 4_000 }] },
    { intersection: [{ maxNumVersions: 2 }, { union: [{ maxAgeMicros: 3_000 }, { maxNumVersions: 4 }] }] },
    {
      union: [
        { intersection: [{ maxNumVersions: 1 }, { maxAgeMicros: 2_000 }] },
        { intersection: [{ maxNumVersions: 3 }, { maxAgeMicros: 9_000 }] },
      ],
    },
    { intersection: [{ maxAgeMicros: 100_000 }] },
  ];

  it('keeps exactly what collectColumn keeps (randomized over rules, columns and clocks)', () => {
    const rnd = prng(11);
    for (let trial = 0; trial < 400; trial++) {
      const families: Record<string, { gcRule?: GcRule }> = {};
      const names = ['a', 'b', 'c.d', 'e'];
      for (const f of names) {
        const r = rnd();
        families[f] = r < 0.3 ? {} : { gcRule: rules[Math.floor(rnd() * rules.length)] as GcRule };
      }
      const spec: TableSpec = { families };
      const now = 20_000 + Math.floor(rnd() * 5) * 1000;
      const cells: Cell[] = [];
      for (const f of [...names, 'other'].sort()) {
        for (const q of ['', 'q1', 'q2']) {
          const n = Math.floor(rnd() * 6);
          const ts = new Set<number>();
          while (ts.size < n) ts.add(Math.floor(rnd() * 30) * 1000);
          for (const t of [...ts].sort((x, y) => y - x)) cells.push(makeCell(f, b(q), t, b('v')));
        }
      }
      const expected: Cell[] = [];
      for (let i = 0; i < cells.length;) {
        let j = i;
        const c = cells[i] as Cell;
        while (
          j < cells.length &&
          (cells[j] as Cell).family === c.family &&
          Buffer.compare((cells[j] as Cell).qualifier, c.qualifier) === 0
        )
          j++;
        expected.push(...collectColumn(families[c.family]?.gcRule, cells.slice(i, j), now));
        i = j;
      }
      const filter = gcKeepFilter(spec, now);
      const got = filter === null ? cells : compileFilter(filter).apply(b('row'), cells);
      expect(fmt(got), JSON.stringify({ families, now })).toEqual(fmt(expected));
    }
  });

  it('is null when no rule can remove anything', () => {
    expect(gcKeepFilter({ families: { a: {}, b: { gcRule: { union: [] } } } }, 1000)).toBeNull();
  });

  it('the complement regex matches every family name but the given ones', () => {
    const rnd = prng(5);
    const alphabet = 'ab.-_Z0';
    const word = (): string =>
      Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => alphabet[Math.floor(rnd() * alphabet.length)]).join('');
    for (let trial = 0; trial < 200; trial++) {
      const names = Array.from({ length: 1 + Math.floor(rnd() * 4) }, word);
      const re = familyComplementRegex(names);
      expect(re).not.toContain(':');
      const f = compileFilter({ familyNameRegexFilter: re });
      for (let k = 0; k < 30; k++) {
        const candidate = rnd() < 0.4 ? (names[Math.floor(rnd() * names.length)] as string) : word();
        const kept = f.apply(b('r'), [makeCell(candidate, b('q'), 1000, b('v'))]).length === 1;
        expect(kept, `${candidate} vs ${JSON.stringify(names)} (${re})`).toBe(!names.includes(candidate));
      }
    }
  });
});

describe('admin conversion', () => {
  it('GC rules round-trip through the admin protos exactly', () => {
    const rules: GcRule[] = [
      { maxNumVersions: 7 },
      { maxAgeMicros: 1 },
      { maxAgeMicros: 3_600_000_123 },
      { union: [{ maxNumVersions: 1 }, { intersection: [{ maxAgeMicros: 60_000_000 }, { maxNumVersions: 2 }] }] },
    ];
    for (const r of rules) expect(gcRuleFromProto(gcRuleToProto(r))).toEqual(r);
    expect(gcRuleFromProto({})).toBeUndefined();
    expect(gcRuleFromProto({ maxAge: { seconds: '2', nanos: 5000 }, rule: 'maxAge' } as never)).toEqual({ maxAgeMicros: 2_000_005 });
  });

  it('a failing modification list is rejected before anything is sent', () => {
    const spec: TableSpec = { families: { a: {} } };
    expect(() =>
      checkModifications('t', spec, [
        { id: 'x', create: {} },
        { id: 'a', drop: true },
        { id: 'a', create: {} },
        { id: 'a', create: {} },
      ]),
    ).toThrow(expect.objectContaining({ code: 'FAMILY_EXISTS' }));
    expect(() => checkModifications('t', spec, [{ id: 'nope', update: {} }])).toThrow(
      expect.objectContaining({ code: 'FAMILY_NOT_FOUND' }),
    );
    expect(() => checkModifications('t', spec, [{ id: 'bad name', create: {} }])).toThrow(
      expect.objectContaining({ code: 'INVALID_NAME' }),
    );
    expect(
      checkModifications('t', spec, [
        { id: 'a', drop: true },
        { id: 'a', create: { gcRule: { maxNumVersions: 1 } } },
      ]),
    ).toEqual([
      { id: 'a', drop: true },
      { id: 'a', create: { gcRule: { maxNumVersions: 1 } } },
    ]);
  });
});

describe('filter translation', () => {
  const ms = new TimestampMapping(1, true);
  it('normalizes what some servers reject, keeping the meaning', () => {
    expect(toProtoFilter({ chain: [] }, ms)).toEqual({ passAllFilter: true });
    expect(toProtoFilter({ interleave: [] }, ms)).toEqual({ blockAllFilter: true });
    expect(toProtoFilter({ chain: [{ interleave: [{ cellsPerColumnLimitFilter: 0 }] }] }, ms)).toEqual({ blockAllFilter: true });
    expect(toProtoFilter({ cellsPerRowLimitFilter: 0 }, ms)).toEqual({ blockAllFilter: true });
    expect(toProtoFilter({ cellsPerRowOffsetFilter: 0 }, ms)).toEqual({ passAllFilter: true });
    expect(toProtoFilter({ rowKeyRegexFilter: '' }, ms)).toEqual({ blockAllFilter: true });
    expect(toProtoFilter({ timestampRangeFilter: { startTimestampMicros: 1500, endTimestampMicros: 1800 } }, ms)).toEqual({
      blockAllFilter: true,
    });
    expect(toProtoFilter({ timestampRangeFilter: { startTimestampMicros: 1500 } }, new TimestampMapping(1000, true))).toEqual({
      timestampRangeFilter: { startTimestampMicros: '1500000' },
    });
    expect(toProtoFilter({ columnRangeFilter: { familyName: 'f', startQualifierOpen: b('a') } }, ms)).toEqual({
      columnRangeFilter: { familyName: 'f', startQualifierOpen: Buffer.from('a') },
    });
  });

  it('knows which filters the emulator evaluates differently', () => {
    expect(emulatorUnsafe({ chain: [{ familyNameRegexFilter: 'a' }, { sink: true }] })).toBe(true);
    expect(emulatorUnsafe({ cellsPerRowLimitFilter: 2 })).toBe(true);
    expect(emulatorUnsafe({ cellsPerRowLimitFilter: 0 })).toBe(false);
    expect(emulatorUnsafe({ chain: [{ applyLabelTransformer: 'x' }, { stripValueTransformer: true }] })).toBe(true);
    expect(emulatorUnsafe({ stripValueTransformer: true })).toBe(false);
    expect(emulatorUnsafe({ condition: { predicateFilter: { cellsPerRowOffsetFilter: 1 } } })).toBe(true);
  });

  it('filter identity tells bytes from strings', () => {
    expect(filterIdentity({ valueRegexFilter: 'a' })).not.toBe(filterIdentity({ valueRegexFilter: b('a') }));
    expect(filterIdentity({ valueRegexFilter: Buffer.from('a') })).toBe(filterIdentity({ valueRegexFilter: Uint8Array.from([0x61]) }));
  });
});

describe('mutation translation', () => {
  it('scales timestamps, stamps server time on the client when asked, drops empty deletes', () => {
    const m = new TimestampMapping(1000, true);
    const out = toProtoMutations(
      [
        { setCell: { familyName: 'f', columnQualifier: b('q'), timestampMicros: 1234, value: b('v') } },
        { setCell: { familyName: 'f', columnQualifier: b('q'), timestampMicros: -1, value: b('v') } },
        { deleteFromColumn: { familyName: 'f', columnQualifier: b('q'), timeRange: { startTimestampMicros: 7, endTimestampMicros: 7 } } },
        { deleteFromColumn: { familyName: 'f', columnQualifier: b('q'), timeRange: { startTimestampMicros: 7 } } },
        { deleteFromRow: {} },
      ],
      m,
      () => 5000,
    );
    expect(out.map((x) => x.setCell?.timestampMicros ?? x.deleteFromColumn?.timeRange?.startTimestampMicros ?? Object.keys(x)[0])).toEqual([
      '1234000',
      '5000000',
      '7000',
      'deleteFromRow',
    ]);
    expect(
      toProtoMutations(
        [{ setCell: { familyName: 'f', columnQualifier: b('q'), timestampMicros: -1, value: b('v') } }],
        new TimestampMapping(1, false),
        null,
      )[0]?.setCell?.timestampMicros,
    ).toBe('-1');
  });
});

describe('ChunkMerger', () => {
  const ts = new TimestampMapping(1, false);
  it('merges split values, labels, resets and commits; sorts families', () => {
    const m = new ChunkMerger(ts);
    const rows = m.push([
      {
        rowKey: b('r1'),
        familyName: { value: 'z' },
        qualifier: { value: b('q') },
        timestampMicros: '2000',
        value: b('ab'),
        valueSize: 5,
        labels: ['l'],
      },
      { value: b('cde'), valueSize: 0 },
      { familyName: { value: 'a' }, qualifier: { value: b('x') }, timestampMicros: '1000', value: b('1') },
      { qualifier: { value: b('y') }, timestampMicros: '1000', value: b('2'), commitRow: true },
      { rowKey: b('r2'), familyName: { value: 'f' }, qualifier: { value: b('q') }, timestampMicros: '1', value: b('gone') },
      { resetRow: true },
      {
        rowKey: b('r2'),
        familyName: { value: 'f' },
        qualifier: { value: b('q') },
        timestampMicros: '3000',
        value: b('kept'),
        commitRow: true,
      },
    ] as never);
    expect(
      rows.map((r) => [
        Buffer.from(r.key).toString(),
        r.cells.map((c) => `${c.family}:${Buffer.from(c.qualifier)}@${c.timestamp}=${Buffer.from(c.value)}[${c.labels.join(',')}]`),
      ]),
    ).toEqual([
      ['r1', ['a:x@1000=1[]', 'a:y@1000=2[]', 'z:q@2000=abcde[l]']],
      ['r2', ['f:q@3000=kept[]']],
    ]);
    expect(m.idle).toBe(true);
  });

  it('rejects a chunk stream that switches rows without a commit', () => {
    const m = new ChunkMerger(ts);
    expect(() =>
      m.push([
        { rowKey: b('a'), familyName: { value: 'f' }, qualifier: { value: b('q') }, timestampMicros: '1', value: b('v') },
        { rowKey: b('b'), familyName: { value: 'f' }, qualifier: { value: b('q') }, timestampMicros: '1', value: b('v') },
      ] as never),
    ).toThrow(expect.objectContaining({ code: 'DATA_CORRUPTED' }));
  });
});

describe('remainingRowSet (resuming a broken ReadRows)', () => {
  it('holds exactly the keys of the set strictly after (before, reversed) the last row', () => {
    const rnd = prng(3);
    const pool = ['', 'a', 'ab', 'b', 'c', 'c\u0000', 'd', 'zz', '\u00ff'].map(b);
    const pickKey = (): Uint8Array => pool[1 + Math.floor(rnd() * (pool.length - 1))] as Uint8Array;
    for (let trial = 0; trial < 300; trial++) {
      const rows: RowSet = {
        rowKeys: Array.from({ length: Math.floor(rnd() * 3) }, pickKey),
        rowRanges: Array.from({ length: Math.floor(rnd() * 3) }, () => {
          let [lo, hi] = [pickKey(), pickKey()];
          if (Buffer.compare(lo, hi) > 0) [lo, hi] = [hi, lo];
          const r: Record<string, Uint8Array> = {};
          const s = rnd();
          if (s < 0.4) r.startKeyClosed = lo;
          else if (s < 0.7) r.startKeyOpen = lo;
          const e = rnd();
          if (e < 0.4) r.endKeyClosed = hi;
          else if (e < 0.7) r.endKeyOpen = hi;
          return r;
        }),
      };
      const last = pickKey();
      const reversed = rnd() < 0.5;
      const rest = remainingRowSet(rows, last, reversed, 't');
      const inSet = (k: Uint8Array, set: RowSet): boolean => planRowSet(set, 't').some((iv) => intervalContains(iv, k));
      for (const probe of [...pool.slice(1), b('a\u0000'), b('c\u0000\u0000'), b('e')]) {
        const c = Buffer.compare(probe, last);
        const want = inSet(probe, rows) && (reversed ? c < 0 : c > 0);
        const got = rest === null ? false : inSet(probe, rest as RowSet);
        expect(got, JSON.stringify({ rows, last: Buffer.from(last).toString(), reversed, probe: Buffer.from(probe).toString() })).toBe(
          want,
        );
      }
    }
  });
});

describe('gRPC status mapping', () => {
  it('a unary call gax gave up retrying says what failed once; its whole text stays in details', () => {
    // gax's messages (normalCalls/retries.js), as a worker logged them while its percolator serve restarted.
    const what = 'No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:47310.';
    const attempt = `{message: 14 UNAVAILABLE: ${what} Resolution note: , code: 14, details: , note: }`;
    for (const head of [
      'Exceeded maximum number of retries',
      'Total timeout of API google.bigtable.admin.v2.BigtableTableAdmin exceeded 600000 milliseconds',
    ]) {
      const message = `${head} retrying error Error: 14 UNAVAILABLE: ${what} Resolution note:  before any response was received : Previous errors : [${attempt},${attempt}]`;
      const e = toStoreError({ code: 4, message }, { table: 't' });
      expect(e.code).toBe('IO_ERROR');
      expect(e.message).toBe(`${what} (retries exhausted)`);
      expect(e.details).toMatchObject({ table: 't', grpcCode: 4, grpcMessage: message });
    }
    // Anything else is left as it came.
    expect(toStoreError({ code: 14, details: `${what} Resolution note: ` }, {}).message).toBe(what);
  });

  it('uses percolator serve codes when present, else status and message', () => {
    const md = { get: (k: string) => (k === 'percolator-error-code' ? ['VALUE_TOO_LARGE'] : []) };
    expect(toStoreError({ code: 3, details: 'VALUE_TOO_LARGE: too big', metadata: md }, {}).code).toBe('VALUE_TOO_LARGE');
    expect(toStoreError({ code: 3, details: 'VALUE_TOO_LARGE: too big', metadata: md }, {}).message).toBe('too big');
    expect(toStoreError({ code: 5, details: 'table "x" not found' }, {}).code).toBe('TABLE_NOT_FOUND');
    expect(toStoreError({ code: 6, details: 'family "f" already exists' }, {}).code).toBe('FAMILY_EXISTS');
    expect(toStoreError({ code: 6, details: 'table exists' }, {}).code).toBe('TABLE_EXISTS');
    expect(toStoreError({ code: 2, details: 'unknown family "zz"' }, {}).code).toBe('FAMILY_NOT_FOUND');
    expect(toStoreError({ code: 2, details: 'invalid timestamp 1500' }, {}).code).toBe('INVALID_TIMESTAMP');
    expect(toStoreError({ code: 14, details: 'connection refused' }, {}).code).toBe('IO_ERROR');
    expect(toStoreError(new Error('boom'), {}).code).toBe('IO_ERROR');
    // google.rpc.ErrorInfo { reason: "FAMILY_NOT_FOUND", domain: "percolator" }
    const info = Buffer.concat([
      Buffer.from([0x0a, 16]),
      Buffer.from('FAMILY_NOT_FOUND'),
      Buffer.from([0x12, 10]),
      Buffer.from('percolator'),
    ]);
    const code = codeFromStatusDetails([{ type_url: 'type.googleapis.com/google.rpc.ErrorInfo', value: info }]);
    expect(statusToStoreError(5, 'FAMILY_NOT_FOUND: nope', {}, code).code).toBe('FAMILY_NOT_FOUND');
  });

  it("drops grpc-js's empty resolution note from the message, keeping the raw one in the context", () => {
    const raw = 'No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: ';
    const e = statusToStoreError(14, raw, {});
    expect(e.code).toBe('IO_ERROR');
    expect(e.message).toBe('No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1.');
    expect(e.details).toMatchObject({ grpcMessage: raw });
    expect(statusToStoreError(14, 'Resolution note: kept when it says something', {}).message).toBe(
      'Resolution note: kept when it says something',
    );
  });
});

describe('read-modify-write by compare-and-set', () => {
  it('the condition holds exactly when every touched column is as read (randomized)', () => {
    const rnd = prng(17);
    const cols = ruleColumns([
      { familyName: 'f', columnQualifier: b('a'), appendValue: b('x') },
      { familyName: 'f', columnQualifier: b('b'), incrementAmount: 1n },
      { familyName: 'g', columnQualifier: b('a'), appendValue: b('x') },
      { familyName: 'f', columnQualifier: b('a'), appendValue: b('y') },
    ]);
    expect(cols).toHaveLength(3);
    const randomRow = (): Cell[] => {
      const cells: Cell[] = [];
      for (const [f, q] of [
        ['f', 'a'],
        ['f', 'b'],
        ['g', 'a'],
        ['g', 'z'],
      ] as const) {
        const n = Math.floor(rnd() * 3);
        for (let i = n; i > 0; i--) cells.push(makeCell(f, b(q), i * 1000, b(rnd() < 0.5 ? 'v' : 'w')));
      }
      return cells;
    };
    for (let trial = 0; trial < 500; trial++) {
      const before = randomRow();
      const latest = new Map<string, Cell>();
      for (const c of before) if (!latest.has(columnKey(c.family, c.qualifier))) latest.set(columnKey(c.family, c.qualifier), c);
      const cond = unchangedCondition(cols, latest);
      const after = rnd() < 0.5 ? before : randomRow();
      const newest = new Map<string, Cell>();
      for (const c of after) if (!newest.has(columnKey(c.family, c.qualifier))) newest.set(columnKey(c.family, c.qualifier), c);
      const unchanged = cols.every((c) => {
        const x = latest.get(columnKey(c.family, c.qualifier));
        const y = newest.get(columnKey(c.family, c.qualifier));
        return x === undefined ? y === undefined : y !== undefined && x.timestamp === y.timestamp && Buffer.compare(x.value, y.value) === 0;
      });
      const matched = compileFilter(cond.predicate as RowFilter).apply(b('r'), after).length > 0;
      expect(matched === cond.writeWhen, JSON.stringify({ before: fmt(before), after: fmt(after) })).toBe(unchanged);
    }
  });

  it('applies rules in order on the newest cells; a bad increment writes nothing', () => {
    const latest = new Map<string, Cell>([[columnKey('f', b('n')), makeCell('f', b('n'), 9000, Buffer.from([0, 0, 0, 0, 0, 0, 0, 5]))]]);
    const out = applyRules(
      [
        { familyName: 'f', columnQualifier: b('n'), incrementAmount: 2n },
        { familyName: 'f', columnQualifier: b('n'), incrementAmount: -10n },
        { familyName: 'f', columnQualifier: b('s'), appendValue: b('ab') },
      ],
      latest,
      5000,
      't',
      b('r'),
    );
    expect(out.get(columnKey('f', b('n')))?.timestamp).toBe(9000);
    expect(Buffer.from(out.get(columnKey('f', b('n')))?.value ?? []).readBigInt64BE(0)).toBe(-3n);
    expect(out.get(columnKey('f', b('s')))?.timestamp).toBe(5000);
    const bad = new Map<string, Cell>([[columnKey('f', b('n')), makeCell('f', b('n'), 1000, b('abc'))]]);
    expect(() => applyRules([{ familyName: 'f', columnQualifier: b('n'), incrementAmount: 1n }], bad, 5000, 't', b('r'))).toThrow(
      expect.objectContaining({ code: 'NOT_AN_INT64' }),
    );
  });
});
