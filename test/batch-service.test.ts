/**
 * `percolator serve`'s BatchService (src/server/batch-protocol.ts): many CheckAndMutateRow in one
 * call, each entry with its own outcome; and the `bigtable://` client coalescing concurrent
 * conditional mutations into it (src/store/bigtable/check-and-mutate-batcher.ts).
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_SERVICE, MAX_BATCH_ENTRIES, batchServiceDefinition } from '../src/server/batch-protocol.js';
import { type PercolatorServer, startServer } from '../src/server/server.js';
import type { BigtableStore } from '../src/store/bigtable/bigtable-store.js';
import { isStoreError } from '../src/store/errors.js';
import { openStore } from '../src/store/open-store.js';
import type { Store } from '../src/store/store.js';
import type { RowFilter } from '../src/store/types.js';

process.env.METADATA_SERVER_DETECTION = 'none';

const T = (table: string) => `projects/p/instances/i/tables/${table}`;
const b = (s: string) => Buffer.from(s);
const set = (family: string, q: string, v: string) => ({
  setCell: { familyName: family, columnQualifier: b(q), timestampMicros: '1000', value: b(v) },
});

let server: PercolatorServer;
let inner: Store;
let client: grpc.Client &
  Record<string, (req: unknown, md: grpc.Metadata, opts: object, cb: (e: grpc.ServiceError | null, r?: unknown) => void) => void>;
const logs: string[] = [];

// biome-ignore lint/suspicious/noExplicitAny: decoded protobuf messages
function batch(req: object | Buffer, method = 'CheckAndMutateRows'): Promise<{ err: grpc.ServiceError | null; res: any }> {
  const def = (batchServiceDefinition() as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>)[method];
  if (def === undefined) throw new Error(`no ${method}`);
  return new Promise((resolve) =>
    client.makeUnaryRequest(
      def.path,
      (v: unknown) => (Buffer.isBuffer(v) ? v : def.requestSerialize(v)),
      def.responseDeserialize,
      req,
      new grpc.Metadata(),
      { deadline: Date.now() + 20_000 },
      (err, res) => resolve({ err: err ?? null, res }),
    ),
  );
}

async function cell(table: string, row: string): Promise<string | null> {
  const r = await inner.readRow(table, b(row));
  const c = r?.cells[0];
  return c === undefined ? null : `${c.family}:${Buffer.from(c.qualifier).toString()}=${Buffer.from(c.value).toString()}`;
}

beforeAll(async () => {
  inner = await openStore('memory:');
  server = await startServer({ store: inner, port: 0, httpPort: 0, log: (l) => logs.push(l) });
  const Client = grpc.makeGenericClientConstructor(batchServiceDefinition(), 'BatchService');
  client = new Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure()) as unknown as typeof client;
  await inner.createTable('t', { families: { f: {}, g: {} } });
});

afterAll(async () => {
  client?.close();
  await server?.close();
  await inner?.close();
});

describe('BatchService.CheckAndMutateRows, seen raw', () => {
  it(`is served as ${BATCH_SERVICE}: each entry a CheckAndMutateRow of its own, answered in order`, async () => {
    await inner.mutateRow('t', b('matched'), [
      { setCell: { familyName: 'f', columnQualifier: b('lock'), timestampMicros: 1000, value: b('x') } },
    ]);
    const has = (q: string) => ({ columnQualifierRegexFilter: b(q) });
    const { err, res } = await batch({
      entries: [
        {
          tableName: T('t'),
          rowKey: b('matched'),
          predicateFilter: has('lock'),
          trueMutations: [set('g', 'w', 'yes')],
          falseMutations: [set('g', 'w', 'no')],
        },
        {
          tableName: T('t'),
          rowKey: b('unmatched'),
          predicateFilter: has('lock'),
          trueMutations: [set('g', 'w', 'yes')],
          falseMutations: [set('g', 'w', 'no')],
        },
        { tableName: T('t'), rowKey: b('family'), trueMutations: [set('nope', 'w', 'x')], falseMutations: [set('nope', 'w', 'x')] },
        { tableName: T('missing'), rowKey: b('table'), falseMutations: [set('f', 'w', 'x')] },
        { tableName: T('t'), rowKey: b(''), falseMutations: [set('f', 'w', 'x')] },
      ],
    });
    expect(err).toBeNull();
    const entries = res.entries as {
      predicateMatched?: boolean;
      status?: { code: number; message: string; details: { type_url: string; value: Buffer }[] };
    }[];
    expect(entries.map((e) => e.status?.code ?? 0)).toEqual([
      0,
      0,
      grpc.status.NOT_FOUND,
      grpc.status.NOT_FOUND,
      grpc.status.INVALID_ARGUMENT,
    ]);
    expect(entries.map((e) => e.predicateMatched === true)).toEqual([true, false, false, false, false]);
    expect(entries.slice(2).map((e) => e.status?.details[0]?.value.toString())).toEqual([
      expect.stringContaining('FAMILY_NOT_FOUND'),
      expect.stringContaining('TABLE_NOT_FOUND'),
      expect.stringContaining('EMPTY_ROW_KEY'),
    ]);
    // What each entry wrote, and only that.
    expect((await inner.readRow('t', b('matched')))?.cells.map((c) => Buffer.from(c.value).toString())).toEqual(['x', 'yes']);
    expect(await cell('t', 'unmatched')).toBe('g:w=no');
    expect(await cell('t', 'family')).toBeNull();
  });

  it('refuses a request beyond its limits, or one it cannot decode, as a whole: nothing written', async () => {
    const entry = (i: number) => ({ tableName: T('t'), rowKey: b(`limit${i}`), falseMutations: [set('f', 'w', 'x')] });
    const many = await batch({ entries: Array.from({ length: MAX_BATCH_ENTRIES + 1 }, (_, i) => entry(i)) });
    expect(many.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(many.err?.details).toContain(`at most ${MAX_BATCH_ENTRIES}`);
    expect(await cell('t', 'limit0')).toBeNull();
    const garbage = await batch(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x01]));
    expect(garbage.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    const empty = await batch({ entries: [] });
    expect(empty.err).toBeNull();
    expect(empty.res.entries ?? []).toEqual([]);
  });
});

describe('BatchService.ReadRowsMany, seen raw', () => {
  it('answers each entry its rows as ReadRows would; an entry that is not point reads fails alone', async () => {
    for (const k of ['p1', 'p2'])
      await inner.mutateRow('t', b(k), [
        { setCell: { familyName: 'f', columnQualifier: b('a'), timestampMicros: 1000, value: b(`${k}-f`) } },
        { setCell: { familyName: 'g', columnQualifier: b('b'), timestampMicros: 2000, value: b(`${k}-g`) } },
      ]);
    const { err, res } = await batch(
      {
        entries: [
          { tableName: T('t'), rows: { rowKeys: [b('p2'), b('p1'), b('absent')] }, filter: { familyNameRegexFilter: 'f' } },
          { tableName: T('t'), rows: { rowKeys: [b('p1')] } },
          { tableName: T('t'), rows: { rowRanges: [{ startKeyClosed: b('p') }] } },
          { tableName: T('missing'), rows: { rowKeys: [b('p1')] } },
          { tableName: T('t') },
        ],
      },
      'ReadRowsMany',
    );
    expect(err).toBeNull();
    // biome-ignore lint/suspicious/noExplicitAny: decoded protobuf messages
    const show = (rows: any[] | undefined) =>
      (rows ?? []).map(
        (r) =>
          `${r.key.toString()}:${r.families
            // biome-ignore lint/suspicious/noExplicitAny: decoded protobuf messages
            .flatMap((f: any) =>
              f.columns.flatMap((c: any) =>
                c.cells.map((x: any) => `${f.name}/${c.qualifier.toString()}@${x.timestampMicros}=${x.value.toString()}`),
              ),
            )
            .join(',')}`,
      );
    const entries = res.entries;
    expect(show(entries[0].rows)).toEqual(['p1:f/a@1000=p1-f', 'p2:f/a@1000=p2-f']);
    expect(show(entries[1].rows)).toEqual(['p1:f/a@1000=p1-f,g/b@2000=p1-g']);
    // biome-ignore lint/suspicious/noExplicitAny: decoded protobuf messages
    expect(entries.map((e: any) => e.status?.code ?? 0)).toEqual([
      0,
      0,
      grpc.status.INVALID_ARGUMENT,
      grpc.status.NOT_FOUND,
      grpc.status.INVALID_ARGUMENT,
    ]);
    expect(entries[3].status.details[0].value.toString()).toContain('TABLE_NOT_FOUND');
    const many = await batch(
      { entries: [{ tableName: T('t'), rows: { rowKeys: Array.from({ length: MAX_BATCH_ENTRIES + 1 }, (_, i) => b(`k${i}`)) } }] },
      'ReadRowsMany',
    );
    expect(many.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  });
});

describe('bigtable:// against percolator serve', () => {
  let store: BigtableStore;
  beforeAll(async () => {
    store = (await openStore(`bigtable://127.0.0.1:${server.port}`)) as BigtableStore;
    await store.createTable('race', { families: { lock: {}, data: {} } });
  });
  afterAll(async () => {
    await store?.close();
  });

  it('sends concurrent conditional mutations in batched calls, and each still decides alone', async () => {
    const before = { ...store.conditionalWrites.stats };
    // Two contenders for each of 25 rows, as prewrites are: write the lock only where none is.
    const attempts = Array.from({ length: 50 }, (_, i) => ({ row: `r${i % 25}`, owner: `o${i}` }));
    const won = await Promise.all(
      attempts.map(
        async ({ row, owner }) =>
          !(await store.checkAndMutateRow('race', b(row), {
            predicateFilter: { familyNameRegexFilter: 'lock' },
            falseMutations: [{ setCell: { familyName: 'lock', columnQualifier: b('l'), timestampMicros: 1000, value: b(owner) } }],
          })),
      ),
    );
    const stats = store.conditionalWrites.stats;
    expect(stats.batchedEntries - before.batchedEntries).toBe(50);
    expect(stats.batches - before.batches).toBeLessThanOrEqual(2);
    expect(stats.singles - before.singles).toBe(0);
    // Exactly one winner a row, and the lock is the winner's.
    for (let r = 0; r < 25; r++) {
      const winners = attempts.filter((a, i) => a.row === `r${r}` && won[i]);
      expect(winners).toHaveLength(1);
      const row = await store.readRow('race', b(`r${r}`));
      expect(Buffer.from(row?.cells[0]?.value ?? []).toString()).toBe(winners[0]?.owner);
    }
  });

  it("fails an entry the server refuses with the store's error, as a call of its own would", async () => {
    await store.createTable('gone', { families: { f: {} } });
    await store.readRow('gone', b('x')); // the schema is cached: the writes go out unchecked
    await inner.deleteTable('gone');
    const batches = store.conditionalWrites.stats.batches;
    const outcomes = await Promise.allSettled(
      ['a', 'b'].map((row) =>
        store.checkAndMutateRow('gone', b(row), {
          falseMutations: [{ setCell: { familyName: 'f', columnQualifier: b('q'), timestampMicros: 1000, value: b('v') } }],
        }),
      ),
    );
    for (const o of outcomes) {
      expect(o.status).toBe('rejected');
      const e = (o as PromiseRejectedResult).reason;
      expect(isStoreError(e, 'TABLE_NOT_FOUND'), String(e)).toBe(true);
      expect(e.details).toMatchObject({ table: 'gone' });
    }
    expect(store.conditionalWrites.stats.batches).toBe(batches + 1);
    expect(store.conditionalWrites.batching).toBe(true);
  });

  it('sends MutateRow calls and MutateRows entries in the batched calls as unconditional entries, each applied as a MutateRow', async () => {
    await store.createTable('ride', { families: { f: {} } });
    await store.createTable('ride2', { families: { f: {} } });
    const put = (q: string, v: string) => ({ setCell: { familyName: 'f', columnQualifier: b(q), timestampMicros: 1000, value: b(v) } });
    await store.mutateRow('ride', b('had'), [put('old', 'x')]);
    await store.readRow('ride2', b('new')); // both schemas cached: the calls below go out in one turn
    const before = { ...store.conditionalWrites.stats };
    const [, , many] = await Promise.all([
      // A row with a cell and a row with none: the same writes either way.
      store.mutateRow('ride', b('had'), [put('q', 'a'), { deleteFromColumn: { familyName: 'f', columnQualifier: b('old') } }]),
      store.mutateRow('ride2', b('new'), [put('q', 'b')]),
      store.mutateRows('ride', [
        { key: b('m1'), mutations: [put('q', 'c')] },
        { key: b('m2'), mutations: [put('q', 'd')] },
      ]),
    ]);
    expect(many).toEqual([{ index: 0 }, { index: 1 }]);
    const stats = store.conditionalWrites.stats;
    expect(stats.batches - before.batches).toBe(1);
    expect(stats.batchedEntries - before.batchedEntries).toBe(4);
    expect(stats.singles).toBe(before.singles);
    const cells = async (t: string, k: string) =>
      ((await inner.readRow(t, b(k)))?.cells ?? []).map((c) => `${Buffer.from(c.qualifier).toString()}=${Buffer.from(c.value).toString()}`);
    expect(await cells('ride', 'had')).toEqual(['q=a']);
    expect(await cells('ride2', 'new')).toEqual(['q=b']);
    expect(await cells('ride', 'm1')).toEqual(['q=c']);
    expect(await cells('ride', 'm2')).toEqual(['q=d']);
  });

  it('sends a large MutateRow, and a lone one, as the MutateRow it is', async () => {
    const before = { ...store.conditionalWrites.stats };
    const big = Buffer.alloc(64 * 1024, 7);
    await Promise.all([
      store.mutateRow('ride', b('big'), [{ setCell: { familyName: 'f', columnQualifier: b('q'), timestampMicros: 1000, value: big } }]),
      store.mutateRow('ride', b('big2'), [{ setCell: { familyName: 'f', columnQualifier: b('q'), timestampMicros: 1000, value: big } }]),
    ]);
    expect(store.conditionalWrites.stats).toEqual(before);
    expect(Buffer.compare(Buffer.from((await inner.readRow('ride', b('big2')))?.cells[0]?.value ?? []), big)).toBe(0);
    await store.mutateRow('ride', b('lone'), [
      { setCell: { familyName: 'f', columnQualifier: b('q'), timestampMicros: 1000, value: b('v') } },
    ]);
    expect(store.conditionalWrites.stats.singles).toBe(before.singles + 1);
    expect(store.conditionalWrites.stats.batches).toBe(before.batches);
    const text = await (await fetch(`http://127.0.0.1:${server.httpPort}/metrics`)).text();
    expect(text).toMatch(/percolator_grpc_requests_total\{method="Bigtable.MutateRow",code="OK"\} [3-9]/);
  });

  it('ends a MutateRows whose table went away with TABLE_NOT_FOUND, as the streaming call did', async () => {
    await store.createTable('gone3', { families: { f: {} } });
    await store.readRow('gone3', b('x'));
    await inner.deleteTable('gone3');
    const put = { setCell: { familyName: 'f', columnQualifier: b('q'), timestampMicros: 1000, value: b('v') } };
    await expect(
      store.mutateRows('gone3', [
        { key: b('a'), mutations: [put] },
        { key: b('b'), mutations: [put] },
      ]),
    ).rejects.toMatchObject({ code: 'TABLE_NOT_FOUND' });
  });

  it('reads point reads of several tables and filters in one call, each row as readRow gives it', async () => {
    await store.createTable('multi', { families: { a: {}, b: {} } });
    await store.createTable('gone2', { families: { a: {} } });
    for (const k of ['m1', 'm2'])
      await store.mutateRow('multi', b(k), [
        { setCell: { familyName: 'a', columnQualifier: b('x'), timestampMicros: 1000, value: b(`${k}a`) } },
        { setCell: { familyName: 'b', columnQualifier: b('y'), timestampMicros: 1000, value: b(`${k}b`) } },
      ]);
    const reads: [string, string, RowFilter | undefined][] = [
      ['multi', 'm1', { familyNameRegexFilter: 'a' }],
      ['multi', 'm2', { familyNameRegexFilter: 'b' }],
      ['multi', 'm1', undefined],
      ['multi', 'none', undefined],
      ['race', 'r3', undefined],
    ];
    const alone = [];
    for (const [t, k, f] of reads) alone.push(await store.readRow(t, b(k), f));
    const before = store.pointReads.stats.groupedCalls;
    const together = await Promise.all(reads.map(([t, k, f]) => store.readRow(t, b(k), f)));
    expect(store.pointReads.stats.groupedCalls).toBe(before + 1);
    expect(together).toEqual(alone);
    expect(together.map((r) => r?.cells.length ?? 0)).toEqual([1, 1, 2, 0, 1]);
    // A group the server refuses fails alone: the table went away after its schema was cached.
    await store.readRow('gone2', b('x'));
    await inner.deleteTable('gone2');
    const out = await Promise.allSettled([store.readRow('multi', b('m1')), store.readRow('gone2', b('x'))]);
    expect(out[0].status).toBe('fulfilled');
    expect(isStoreError((out[1] as PromiseRejectedResult).reason, 'TABLE_NOT_FOUND')).toBe(true);
    expect(store.pointReads.stats.groupedCalls).toBe(before + 2);
  });

  it('counts the batched calls in /metrics, and logged no unexpected error', async () => {
    const text = await (await fetch(`http://127.0.0.1:${server.httpPort}/metrics`)).text();
    expect(text).toMatch(/percolator_grpc_requests_total\{method="BatchService.CheckAndMutateRows",code="OK"\} [1-9]/);
    expect(logs.filter((l) => /unexpected/.test(l))).toEqual([]);
  });
});
