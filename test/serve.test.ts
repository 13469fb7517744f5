/**
 * `percolator serve`, in-process (`startServer`): the official @google-cloud/bigtable client
 * end to end, the CellChunk protocol and error mapping seen raw, flow control on ReadRows, the
 * network lock service, the oracle port, HTTP status/metrics and bearer-token auth.
 * (Fuzzing: serve-fuzz.test.ts; cbt: serve-cbt.test.ts; kill -9 / SIGTERM: serve-process.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OracleClient } from '../src/oracle/client.js';
import { Percolator } from '../src/txn/percolator.js';
import { LockServiceError, NetworkLockService } from '../src/server/lock-client.js';
import { bigtablePackage, DATA_SERVICE, TABLE_ADMIN_SERVICE } from '../src/server/protos.js';
import { type PercolatorServer, type ServerStatus, startServer } from '../src/server/server.js';
import { EngineStore } from '../src/store/engine-store.js';
import { StoreError } from '../src/store/errors.js';
import type { KvOp } from '../src/store/kv-engine.js';
import { MemoryEngine } from '../src/store/memory/memory-engine.js';
import { openStore } from '../src/store/open-store.js';
import type { Store } from '../src/store/store.js';
import type { ReadRowsOptions, Row } from '../src/store/types.js';
import { rawServerStream } from './support/raw-grpc-stream.js';
import { type ResettingProxy, resettingProxy } from './support/resetting-proxy.js';

process.env.METADATA_SERVER_DETECTION = 'none';
const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: the official client is untyped JS here
const { Bigtable } = require('@google-cloud/bigtable') as { Bigtable: new (o: object) => any };

// ---------------------------------------------------------------------------------------------
// A raw gRPC client: any method, any request (object or raw bytes), with the statuses visible.

const pkg = bigtablePackage();
function methodDef(service: string, method: string): grpc.MethodDefinition<unknown, unknown> {
  const def = (pkg[service] as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>)[method];
  if (def === undefined) throw new Error(`no method ${service}/${method}`);
  return def;
}

interface RawResult {
  err: grpc.ServiceError | null;
  // biome-ignore lint/suspicious/noExplicitAny: decoded protobuf messages
  messages: any[];
}

class Raw {
  readonly client: grpc.Client;
  constructor(
    address: string,
    private readonly token?: string,
  ) {
    this.client = new grpc.Client(address, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
    });
  }
  private md(): grpc.Metadata {
    const md = new grpc.Metadata();
    if (this.token !== undefined) md.set('authorization', `Bearer ${this.token}`);
    return md;
  }
  call(service: string, method: string, req: object | Buffer, options: { pauseMs?: number } = {}): Promise<RawResult> {
    const def = methodDef(service, method);
    const serialize = (v: unknown): Buffer => (Buffer.isBuffer(v) ? v : def.requestSerialize(v));
    const path = `/${service}/${method}`;
    return new Promise((resolve) => {
      if (!def.responseStream) {
        this.client.makeUnaryRequest(
          path,
          serialize,
          def.responseDeserialize,
          req,
          this.md(),
          { deadline: Date.now() + 20_000 },
          (err, res) => resolve({ err: err ?? null, messages: res === undefined ? [] : [res] }),
        );
        return;
      }
      const messages: unknown[] = [];
      const stream = this.client.makeServerStreamRequest(path, serialize, def.responseDeserialize, req, this.md(), {
        deadline: Date.now() + 20_000,
      });
      let settled = false;
      const done = (err: grpc.ServiceError | null) => {
        if (!settled) {
          settled = true;
          resolve({ err, messages });
        }
      };
      stream.on('data', (m) => messages.push(m));
      stream.on('error', (e: grpc.ServiceError) => done(e));
      stream.on('end', () => done(null));
      if (options.pauseMs !== undefined) {
        stream.pause();
        setTimeout(() => stream.resume(), options.pauseMs);
      }
    });
  }
  close(): void {
    this.client.close();
  }
}

const T = (table: string) => `projects/p/instances/i/tables/${table}`;

/** Reassembles ReadRowsResponse chunks into rows, checking the CellChunk protocol strictly. */
function assembleChunks(
  // biome-ignore lint/suspicious/noExplicitAny: decoded protobuf messages
  messages: any[],
): { key: Buffer; cells: { family: string; qualifier: Buffer; ts: number; value: Buffer; labels: string[] }[] }[] {
  const rows: ReturnType<typeof assembleChunks> = [];
  let cur: (typeof rows)[number] | null = null;
  let family: string | null = null;
  let qualifier: Buffer | null = null;
  let pending: { family: string; qualifier: Buffer; ts: number; labels: string[]; parts: Buffer[]; size: number } | null = null;
  for (const m of messages) {
    for (const c of m.chunks ?? []) {
      if (cur === null) {
        expect(c.rowKey?.length ?? 0).toBeGreaterThan(0);
        expect(c.familyName).toBeDefined();
        expect(c.qualifier).toBeDefined();
        cur = { key: c.rowKey, cells: [] };
      } else if (pending === null) {
        expect(c.rowKey?.length ?? 0).toBe(0);
      }
      if (pending === null) {
        if (c.familyName !== undefined) {
          family = c.familyName.value ?? '';
          expect(c.qualifier).toBeDefined(); // a new family always comes with its qualifier
        }
        if (c.qualifier !== undefined) qualifier = c.qualifier.value ?? Buffer.alloc(0);
        pending = {
          family: family as string,
          qualifier: qualifier as Buffer,
          ts: Number(c.timestampMicros ?? 0),
          labels: c.labels ?? [],
          parts: [],
          size: c.valueSize ?? 0,
        };
      } else {
        // continuation of a split value: only the value (and value_size / commit_row)
        expect(c.familyName).toBeUndefined();
        expect(c.qualifier).toBeUndefined();
        expect(c.timestampMicros ?? '0').toBe('0');
        expect(c.labels ?? []).toEqual([]);
      }
      pending.parts.push(c.value ?? Buffer.alloc(0));
      if ((c.valueSize ?? 0) > 0) {
        expect(c.commitRow ?? false).toBe(false);
        expect(c.valueSize).toBe(pending.size);
        continue;
      }
      const value = Buffer.concat(pending.parts);
      if (pending.size > 0) expect(value.length).toBe(pending.size);
      cur.cells.push({ family: pending.family, qualifier: pending.qualifier, ts: pending.ts, value, labels: pending.labels });
      pending = null;
      if (c.commitRow) {
        rows.push(cur);
        cur = null;
        family = null;
        qualifier = null;
      }
    }
  }
  expect(cur).toBeNull();
  return rows;
}

// ---------------------------------------------------------------------------------------------

/** Counts rows the server pulls from the store's readRows iterators (flow-control evidence). */
function countingStore(inner: Store): { store: Store; pulled: () => number } {
  let pulled = 0;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'readRows') {
        return (table: string, options?: ReadRowsOptions): AsyncIterable<Row> => {
          const it = target.readRows(table, options);
          return {
            async *[Symbol.asyncIterator]() {
              for await (const r of it) {
                pulled++;
                yield r;
              }
            },
          };
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { store, pulled: () => pulled };
}

let server: PercolatorServer;
let inner: Store;
let pulled: () => number;
let raw: Raw;
const logs: string[] = [];

beforeAll(async () => {
  inner = await openStore('memory:');
  const counting = countingStore(inner);
  pulled = counting.pulled;
  server = await startServer({ store: counting.store, port: 0, maxMessageBytes: 16 * 1024 * 1024, log: (l) => logs.push(l) });
  raw = new Raw(`127.0.0.1:${server.port}`);
});

afterAll(async () => {
  raw?.close();
  await server?.close();
  await inner?.close();
});

describe('official @google-cloud/bigtable client (6.5.x)', () => {
  // biome-ignore lint/suspicious/noExplicitAny: untyped client
  let bt: any;
  // biome-ignore lint/suspicious/noExplicitAny: untyped client
  let table: any;

  beforeAll(async () => {
    bt = new Bigtable({ projectId: 'p', apiEndpoint: `127.0.0.1:${server.port}`, metricsEnabled: false });
    [table] = await bt.instance('i').createTable('official', { families: ['f'] });
    await table.createFamily('g', { rule: { versions: 2 } });
  });
  afterAll(async () => {
    await bt?.close();
  });

  it('creates tables and families, and reports them', async () => {
    expect((await table.exists())[0]).toBe(true);
    const [families] = await table.getFamilies();
    expect(families.map((f: { id: string }) => f.id).sort()).toEqual(['f', 'g']);
    const g = families.find((f: { id: string }) => f.id === 'g');
    expect(g.metadata.gcRule.maxNumVersions).toBe(2);
    const [tables] = await bt.instance('i').getTables();
    expect(tables.map((t: { id: string }) => t.id)).toContain('official');
    // any project / instance maps to the same store tables
    const other = new Bigtable({ projectId: 'other', apiEndpoint: `127.0.0.1:${server.port}`, metricsEnabled: false });
    expect((await other.instance('x').table('official').exists())[0]).toBe(true);
    await other.close();
  });

  it('writes and reads many rows, binary keys and a value above 1 MiB (split into chunks)', async () => {
    const entries = [];
    for (let i = 0; i < 1000; i++) entries.push({ key: `row-${String(i).padStart(5, '0')}`, data: { f: { c: `v${i}` } } });
    await table.insert(entries);
    const binKey = Buffer.from([0x00, 0xff, 0x80, 0x0a, 0x00]);
    const big = Buffer.alloc(3 * 1024 * 1024 + 123);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7919) & 0xff;
    await table.insert([
      { key: binKey, data: { f: { [Buffer.from([0xfe, 0x01]).toString('latin1')]: Buffer.from([1, 2, 3]) } } },
      { key: 'big', data: { f: { big } } },
    ]);
    const [rows] = await table.getRows({ decode: false });
    expect(rows.length).toBe(1002);
    const keys = rows.map((r: { id: Buffer }) => Buffer.from(r.id));
    const sorted = [...keys].sort(Buffer.compare);
    expect(keys).toEqual(sorted);
    expect(keys[0]).toEqual(binKey);
    const [bigRow] = await table.row('big').get({ decode: false });
    expect(Buffer.compare(bigRow.data.f.big[0].value, big)).toBe(0);
    const [some] = await table.getRows({ start: 'row-00100', end: 'row-00109', limit: 5 });
    expect(some.map((r: { id: string }) => r.id)).toEqual(['row-00100', 'row-00101', 'row-00102', 'row-00103', 'row-00104']);
    const [picked] = await table.getRows({ keys: ['row-00007', 'row-00934', 'nope'] });
    expect(picked.map((r: { id: string }) => r.id)).toEqual(['row-00007', 'row-00934']);
  });

  it('applies filters, GC rules and versions', async () => {
    const row = table.row('versions');
    for (let v = 1; v <= 4; v++) await row.save({ g: { q: { value: `v${v}`, timestamp: v * 1000 } } });
    const [r] = await row.get();
    expect(r.data.g.q.map((c: { value: string }) => c.value)).toEqual(['v4', 'v3']); // maxNumVersions 2
    const [limited] = await table.getRows({ keys: ['versions'], filter: [{ column: { cellLimit: 1 } }] });
    expect(limited[0].data.g.q.map((c: { value: string }) => c.value)).toEqual(['v4']);
    const [byValue] = await table.getRows({ start: 'row-00000', end: 'row-00050', filter: [{ value: /v1.*/ }] });
    expect(byValue.map((x: { id: string }) => x.id)).toEqual(['row-00001', ...Array.from({ length: 10 }, (_, i) => `row-000${10 + i}`)]);
    const [stripped] = await table.getRows({ keys: ['row-00001'], filter: [{ value: { strip: true } }] });
    expect(stripped[0].data.f.c[0].value).toBe('');
    const [labelled] = await table.getRows({ keys: ['row-00001'], filter: [{ label: 'seen' }] });
    expect(labelled[0].data.f.c[0].labels).toEqual(['seen']);
  });

  it('checkAndMutate, readModifyWrite (increment, append), sampleRowKeys', async () => {
    const [matched] = await table.row('row-00002').filter([{ column: 'c' }, { value: 'v2' }], {
      onMatch: [{ method: 'insert', data: { f: { m: 'yes' } } }],
      onNoMatch: [{ method: 'insert', data: { f: { m: 'no' } } }],
    });
    expect(matched).toBe(true);
    const [notMatched] = await table.row('row-00003').filter([{ value: 'zzz' }], {
      onMatch: [{ method: 'insert', data: { f: { m: 'yes' } } }],
      onNoMatch: [{ method: 'insert', data: { f: { m: 'no' } } }],
    });
    expect(notMatched).toBe(false);
    expect((await table.row('row-00002').get(['f:m']))[0].f.m[0].value).toBe('yes');
    expect((await table.row('row-00003').get(['f:m']))[0].f.m[0].value).toBe('no');

    await table.row('counter').increment('f:n', 5);
    const [n] = await table.row('counter').increment('f:n', -2);
    expect(n).toBe(3);
    await table.row('counter').createRules([{ column: 'f:s', append: 'ab' }]);
    const [apiResponse] = await table.row('counter').createRules([{ column: 'f:s', append: 'cd' }]);
    const cell = apiResponse.row.families[0].columns[0].cells[0];
    expect(Buffer.from(cell.value).toString()).toBe('abcd');

    const [samples] = await table.sampleRowKeys();
    expect(samples.length).toBeGreaterThanOrEqual(1);
    expect(samples[samples.length - 1].key.length).toBe(0);
  });

  it('deletes rows, cells and row ranges, truncates and deletes the table', async () => {
    await table.row('row-00004').delete();
    await table.row('row-00005').deleteCells(['f:c']);
    expect((await table.row('row-00004').exists())[0]).toBe(false);
    expect((await table.row('row-00005').exists())[0]).toBe(false);
    await table.deleteRows('row-001');
    const [rows] = await table.getRows({ start: 'row-00090', end: 'row-00210' });
    expect(rows.some((r: { id: string }) => r.id.startsWith('row-001'))).toBe(false);
    expect(rows.length).toBe(121 - 100);
    await table.truncate();
    expect((await table.getRows())[0].length).toBe(0);
    await table.delete();
    expect((await table.exists())[0]).toBe(false);
  });
});

describe('the wire protocol, seen raw', () => {
  beforeAll(async () => {
    await inner.createTable('rawt', { families: { a: {}, b: { gcRule: { maxNumVersions: 5 } } } });
    const big = Buffer.alloc(2 * 1024 * 1024 + 5, 0x61);
    const mutations = [
      { setCell: { familyName: 'a', columnQualifier: Buffer.from('x'), timestampMicros: '3000', value: Buffer.from('x3') } },
      { setCell: { familyName: 'a', columnQualifier: Buffer.from('x'), timestampMicros: '1000', value: Buffer.from('x1') } },
      { setCell: { familyName: 'a', columnQualifier: Buffer.from(''), timestampMicros: '0', value: Buffer.from('empty-qualifier') } },
      { setCell: { familyName: 'b', columnQualifier: Buffer.from('big'), timestampMicros: '2000', value: big } },
      { setCell: { familyName: 'b', columnQualifier: Buffer.from('z'), timestampMicros: '2000', value: Buffer.alloc(0) } },
    ];
    const r = await raw.call(DATA_SERVICE, 'MutateRow', { tableName: T('rawt'), rowKey: Buffer.from('r1'), mutations });
    expect(r.err).toBeNull();
    for (const k of ['r0', 'r2', 'r3']) {
      const w = await raw.call(DATA_SERVICE, 'MutateRow', {
        tableName: T('rawt'),
        rowKey: Buffer.from(k),
        mutations: [{ setCell: { familyName: 'a', columnQualifier: Buffer.from('x'), timestampMicros: '1000', value: Buffer.from(k) } }],
      });
      expect(w.err).toBeNull();
    }
  });

  it('follows the CellChunk protocol: presence rules, split values with value_size, labels, commit_row', async () => {
    const r = await raw.call(DATA_SERVICE, 'ReadRows', { tableName: T('rawt'), rows: { rowKeys: [Buffer.from('r1')] } });
    expect(r.err).toBeNull();
    const rows = assembleChunks(r.messages);
    expect(rows.length).toBe(1);
    const cells = rows[0]!.cells;
    expect(cells.map((c) => `${c.family}:${c.qualifier.toString()}@${c.ts}`)).toEqual([
      'a:@0',
      'a:x@3000',
      'a:x@1000',
      'b:big@2000',
      'b:z@2000',
    ]);
    expect(cells[3]!.value.length).toBe(2 * 1024 * 1024 + 5);
    expect(cells[3]!.value.every((b) => b === 0x61)).toBe(true);
    // the 2 MiB value is split: 3 chunks, the first two with value_size
    const chunks = r.messages.flatMap((m) => m.chunks);
    expect(chunks.filter((c) => (c.valueSize ?? 0) > 0).length).toBe(2);
    // the second version of a:x carries neither family nor qualifier
    expect(chunks[2].familyName).toBeUndefined();
    expect(chunks[2].qualifier).toBeUndefined();

    const labelled = await raw.call(DATA_SERVICE, 'ReadRows', {
      tableName: T('rawt'),
      rows: { rowKeys: [Buffer.from('r1')] },
      filter: { chain: { filters: [{ familyNameRegexFilter: 'a' }, { applyLabelTransformer: 'lbl' }] } },
    });
    expect(assembleChunks(labelled.messages)[0]!.cells.map((c) => c.labels)).toEqual([['lbl'], ['lbl'], ['lbl']]);
  });

  it('reads reversed, honours rows_limit and row ranges', async () => {
    const rev = await raw.call(DATA_SERVICE, 'ReadRows', { tableName: T('rawt'), reversed: true, filter: { familyNameRegexFilter: 'a' } });
    expect(rev.err).toBeNull();
    expect(assembleChunks(rev.messages).map((x) => x.key.toString())).toEqual(['r3', 'r2', 'r1', 'r0']);
    const lim = await raw.call(DATA_SERVICE, 'ReadRows', {
      tableName: T('rawt'),
      rowsLimit: '2',
      rows: { rowRanges: [{ startKeyOpen: Buffer.from('r0') }] },
    });
    expect(assembleChunks(lim.messages).map((x) => x.key.toString())).toEqual(['r1', 'r2']);
  });

  it('maps errors to gRPC statuses with the stable code in the trailer', async () => {
    const missing = await raw.call(DATA_SERVICE, 'ReadRows', { tableName: T('nope') });
    expect(missing.err?.code).toBe(grpc.status.NOT_FOUND);
    expect(missing.err?.metadata.get('percolator-error-code')).toEqual(['TABLE_NOT_FOUND']);
    const badName = await raw.call(DATA_SERVICE, 'MutateRow', { tableName: 'rawt', rowKey: Buffer.from('k') });
    expect(badName.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    const tooBigTs = await raw.call(DATA_SERVICE, 'MutateRow', {
      tableName: T('rawt'),
      rowKey: Buffer.from('k'),
      mutations: [
        { setCell: { familyName: 'a', columnQualifier: Buffer.from('q'), timestampMicros: '9007199254740993', value: Buffer.from('v') } },
      ],
    });
    expect(tooBigTs.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(tooBigTs.err?.details).toMatch(/2\^53/);
    const noFamily = await raw.call(DATA_SERVICE, 'MutateRow', {
      tableName: T('rawt'),
      rowKey: Buffer.from('k'),
      mutations: [{ setCell: { familyName: 'zz', columnQualifier: Buffer.from('q'), value: Buffer.from('v') } }],
    });
    expect(noFamily.err?.code).toBe(grpc.status.NOT_FOUND);
    expect(noFamily.err?.metadata.get('percolator-error-code')).toEqual(['FAMILY_NOT_FOUND']);
    const badFilter = await raw.call(DATA_SERVICE, 'ReadRows', { tableName: T('rawt'), filter: { valueRegexFilter: Buffer.from('(') } });
    expect(badFilter.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    const aggregate = await raw.call(DATA_SERVICE, 'MutateRow', {
      tableName: T('rawt'),
      rowKey: Buffer.from('k'),
      mutations: [{ addToCell: { familyName: 'a' } }],
    });
    expect(aggregate.err?.code).toBe(grpc.status.UNIMPLEMENTED);
    const unimplemented = await raw.call(DATA_SERVICE, 'ExecuteQuery', { instanceName: 'projects/p/instances/i', query: 'SELECT 1' });
    expect(unimplemented.err?.code).toBe(grpc.status.UNIMPLEMENTED);
    const malformed = await raw.call(DATA_SERVICE, 'MutateRow', Buffer.from([0x0a, 0xff, 0xff, 0xff]));
    expect(malformed.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    const ping = await raw.call(DATA_SERVICE, 'PingAndWarm', { name: 'projects/p/instances/i' });
    expect(ping.err).toBeNull();
  });

  it('answers as Cloud Bigtable where clients send int64 bounds past 2^53, odd increments, empty families and no-op drops', async () => {
    await inner.createTable('wide', { families: { f: {} } });
    const put = (ts: number, v: string) => ({
      setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: String(ts), value: Buffer.from(v) },
    });
    expect(
      (
        await raw.call(DATA_SERVICE, 'MutateRow', {
          tableName: T('wide'),
          rowKey: Buffer.from('r'),
          mutations: [put(1000, 'v1'), put(2000, 'v2'), put(3000, 'v3')],
        })
      ).err,
    ).toBeNull();
    const read = async (filter?: object, rowsLimit = '0') => {
      const r = await raw.call(DATA_SERVICE, 'ReadRows', { tableName: T('wide'), ...(filter === undefined ? {} : { filter }), rowsLimit });
      expect(r.err).toBeNull();
      return assembleChunks(r.messages).flatMap((row) => row.cells.map((c) => c.value.toString()));
    };
    // HBase's "latest timestamp" (the Java adapter sends it as is) is past every stored timestamp.
    const LATEST = '9223372036854775000';
    expect(await read({ timestampRangeFilter: { startTimestampMicros: '2000', endTimestampMicros: LATEST } })).toEqual(['v3', 'v2']);
    expect(await read({ timestampRangeFilter: { startTimestampMicros: LATEST } })).toEqual([]);
    expect(await read({ timestampRangeFilter: { startTimestampMicros: LATEST, endTimestampMicros: '9223372036854775807' } })).toEqual([]);
    expect(await read(undefined, '9223372036854775807')).toEqual(['v3', 'v2', 'v1']);
    const inverted = await raw.call(DATA_SERVICE, 'ReadRows', {
      tableName: T('wide'),
      filter: { timestampRangeFilter: { startTimestampMicros: LATEST, endTimestampMicros: '5000' } },
    });
    expect(inverted.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    const del = await raw.call(DATA_SERVICE, 'MutateRow', {
      tableName: T('wide'),
      rowKey: Buffer.from('r'),
      mutations: [
        {
          deleteFromColumn: {
            familyName: 'f',
            columnQualifier: Buffer.from('q'),
            timeRange: { startTimestampMicros: '2000', endTimestampMicros: LATEST },
          },
        },
      ],
    });
    expect(del.err).toBeNull();
    expect(await read()).toEqual(['v1']);
    // A timestamp the store cannot hold is still refused where it would be stored.
    const tooBigTs = await raw.call(DATA_SERVICE, 'MutateRow', {
      tableName: T('wide'),
      rowKey: Buffer.from('r'),
      mutations: [put(2 ** 53 + 2, 'x')],
    });
    expect(tooBigTs.err?.code).toBe(grpc.status.INVALID_ARGUMENT);

    const inc = await raw.call(DATA_SERVICE, 'ReadModifyWriteRow', {
      tableName: T('wide'),
      rowKey: Buffer.from('r'),
      rules: [{ familyName: 'f', columnQualifier: Buffer.from('q'), incrementAmount: '1' }],
    });
    expect(inc.err?.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(inc.err?.metadata.get('percolator-error-code')).toEqual(['NOT_AN_INT64']);
    expect(inc.err?.details).toMatch(/^NOT_AN_INT64: cannot increment a value of 2 bytes/);

    const emptyFamily = await raw.call(DATA_SERVICE, 'MutateRow', {
      tableName: T('wide'),
      rowKey: Buffer.from('r'),
      mutations: [{ setCell: { familyName: '', columnQualifier: Buffer.from('q'), value: Buffer.from('v') } }],
    });
    expect(emptyFamily.err?.code).toBe(grpc.status.INVALID_ARGUMENT);

    const noop = await raw.call(TABLE_ADMIN_SERVICE, 'DropRowRange', { name: T('wide'), deleteAllDataFromTable: false });
    expect(noop.err).toBeNull();
    expect(await read()).toEqual(['v1']);
    const missing = await raw.call(TABLE_ADMIN_SERVICE, 'DropRowRange', { name: T('nope'), deleteAllDataFromTable: false });
    expect(missing.err?.code).toBe(grpc.status.NOT_FOUND);
  });

  it("refuses a qualifier over 16 KiB and a row key over 4 KiB (Cloud Bigtable's limits) with INVALID_ARGUMENT", async () => {
    const set = (q: Buffer) => ({ setCell: { familyName: 'a', columnQualifier: q, timestampMicros: '1000', value: Buffer.from('v') } });
    const q16k = Buffer.alloc(16 * 1024, 0x71);
    const over = Buffer.alloc(16 * 1024 + 1, 0x71);
    const ok = await raw.call(DATA_SERVICE, 'MutateRow', { tableName: T('rawt'), rowKey: Buffer.from('lq'), mutations: [set(q16k)] });
    expect(ok.err).toBeNull();
    for (const [method, request] of [
      ['MutateRow', { rowKey: Buffer.from('lq'), mutations: [{ deleteFromRow: {} }, set(over)] }],
      ['MutateRow', { rowKey: Buffer.from('lq'), mutations: [{ deleteFromColumn: { familyName: 'a', columnQualifier: over } }] }],
      ['CheckAndMutateRow', { rowKey: Buffer.from('lq'), trueMutations: [{ deleteFromRow: {} }, set(over)] }],
      [
        'ReadModifyWriteRow',
        { rowKey: Buffer.from('lq'), rules: [{ familyName: 'a', columnQualifier: over, appendValue: Buffer.from('x') }] },
      ],
    ] as const) {
      const r = await raw.call(DATA_SERVICE, method, { tableName: T('rawt'), ...request });
      expect(r.err?.code, method).toBe(grpc.status.INVALID_ARGUMENT);
      expect(r.err?.metadata.get('percolator-error-code')).toEqual(['INVALID_MUTATION']);
      expect(r.err?.details).toMatch(/16385 bytes exceeds the limit of 16384/);
    }
    const longKey = Buffer.alloc(4097, 0x6b);
    for (const [method, request] of [
      ['MutateRow', { mutations: [set(Buffer.from('q'))] }],
      ['CheckAndMutateRow', { falseMutations: [set(Buffer.from('q'))] }],
      ['ReadModifyWriteRow', { rules: [{ familyName: 'a', columnQualifier: Buffer.from('q'), appendValue: Buffer.from('x') }] }],
    ] as const) {
      const r = await raw.call(DATA_SERVICE, method, { tableName: T('rawt'), rowKey: longKey, ...request });
      expect(r.err?.code, method).toBe(grpc.status.INVALID_ARGUMENT);
      expect(r.err?.metadata.get('percolator-error-code')).toEqual(['ROW_KEY_TOO_LARGE']);
    }
    const rows = await raw.call(DATA_SERVICE, 'MutateRows', {
      tableName: T('rawt'),
      entries: [
        { rowKey: Buffer.from('lq'), mutations: [set(over)] },
        { rowKey: longKey, mutations: [set(Buffer.from('q'))] },
      ],
    });
    expect(rows.err).toBeNull();
    expect(rows.messages.flatMap((m) => m.entries).map((e) => e.status?.code ?? 0)).toEqual([
      grpc.status.INVALID_ARGUMENT,
      grpc.status.INVALID_ARGUMENT,
    ]);
    const row = await inner.readRow('rawt', Buffer.from('lq'));
    expect(row?.cells.map((c) => c.qualifier.length)).toEqual([16 * 1024]);
  });

  it('answers MutateRows with one status per entry, in order, with ErrorInfo details', async () => {
    const r = await raw.call(DATA_SERVICE, 'MutateRows', {
      tableName: T('rawt'),
      entries: [
        {
          rowKey: Buffer.from('m1'),
          mutations: [{ setCell: { familyName: 'a', columnQualifier: Buffer.from('q'), value: Buffer.from('1') } }],
        },
        {
          rowKey: Buffer.from('m2'),
          mutations: [{ setCell: { familyName: 'nope', columnQualifier: Buffer.from('q'), value: Buffer.from('2') } }],
        },
        { rowKey: Buffer.from(''), mutations: [{ deleteFromRow: {} }] },
        {
          rowKey: Buffer.from('m4'),
          mutations: [{ setCell: { familyName: 'a', columnQualifier: Buffer.from('q'), timestampMicros: '-7', value: Buffer.from('4') } }],
        },
        { rowKey: Buffer.from('m5'), mutations: [{ deleteFromRow: {} }] },
      ],
    });
    expect(r.err).toBeNull();
    const entries = r.messages.flatMap((m) => m.entries);
    expect(entries.map((e) => Number(e.index))).toEqual([0, 1, 2, 3, 4]);
    expect(entries.map((e) => e.status?.code ?? 0)).toEqual([
      0,
      grpc.status.NOT_FOUND,
      grpc.status.INVALID_ARGUMENT,
      grpc.status.INVALID_ARGUMENT,
      0,
    ]);
    expect(entries[1].status.details[0].type_url).toBe('type.googleapis.com/google.rpc.ErrorInfo');
    expect(entries[1].status.details[0].value.toString()).toContain('FAMILY_NOT_FOUND');
  });

  it('keeps locality groups through the percolator-locality-groups header', async () => {
    const md = new grpc.Metadata();
    md.set('percolator-locality-groups', JSON.stringify({ n: 'notify' }));
    const def = methodDef(TABLE_ADMIN_SERVICE, 'CreateTable');
    const headers = await new Promise<grpc.Metadata>((resolve, reject) => {
      const call = raw.client.makeUnaryRequest(
        `/${TABLE_ADMIN_SERVICE}/CreateTable`,
        def.requestSerialize,
        def.responseDeserialize,
        {
          parent: 'projects/p/instances/i',
          tableId: 'grouped',
          table: { columnFamilies: { n: {}, d: { gcRule: { maxAge: { seconds: '2', nanos: 500_000_000 } } } } },
        },
        md,
        (err) => (err ? reject(err) : undefined),
      );
      call.on('metadata', resolve);
    });
    expect(JSON.parse(String(headers.get('percolator-locality-groups')[0]))).toEqual({ n: 'notify' });
    const spec = await inner.getTable('grouped');
    expect(spec.families.n?.localityGroup).toBe('notify');
    expect(spec.families.d?.gcRule).toEqual({ maxAgeMicros: 2_500_000 });
  });

  it('respects flow control: a paused reader stops the scan, which then completes', async () => {
    await inner.createTable('flow', { families: { f: {} } });
    const value = Buffer.alloc(100 * 1024, 1);
    for (let i = 0; i < 300; i++) {
      await inner.mutateRow('flow', Buffer.from(`k${String(i).padStart(4, '0')}`), [
        { setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value } },
      ]);
    }
    const before = pulled();
    const request = methodDef(DATA_SERVICE, 'ReadRows').requestSerialize({ tableName: T('flow') });
    const call = rawServerStream(server.port, `/${DATA_SERVICE}/ReadRows`, request);
    call.pause();
    await new Promise((r) => setTimeout(r, 500));
    const whilePaused = pulled() - before;
    expect(whilePaused).toBeLessThan(100); // 30 MB table; a few MB of buffers at most
    await new Promise((r) => setTimeout(r, 300));
    expect(pulled() - before).toBe(whilePaused); // and it stays there
    call.resume();
    const result = await call.done;
    expect(result.status).toBe(0);
    const decode = methodDef(DATA_SERVICE, 'ReadRows').responseDeserialize;
    const rows = assembleChunks(result.messages.map((m) => decode(m)));
    expect(rows.length).toBe(300);
    expect(pulled() - before).toBe(300);
  });
});

describe('lock service, oracle and HTTP', () => {
  it('serves the advisory lock service over gRPC (NetworkLockService)', async () => {
    const a = new NetworkLockService({ address: `127.0.0.1:${server.port}` });
    const b = new NetworkLockService({ address: `127.0.0.1:${server.port}` });
    expect(await a.tryLock('t\u0000row', 'A', 10_000)).toBe(true);
    expect(await b.tryLock('t\u0000row', 'B', 10_000)).toBe(false);
    expect(await a.tryLock('t\u0000row', 'A', 10_000)).toBe(false); // held, by anyone
    await b.unlock('t\u0000row', 'B'); // not the owner: no effect
    expect(await b.tryLock('t\u0000row', 'B', 10_000)).toBe(false);
    await a.unlock('t\u0000row', 'A');
    expect(await b.tryLock('t\u0000row', 'B', 50)).toBe(true);
    await new Promise((r) => setTimeout(r, 80));
    expect(await a.tryLock('t\u0000row', 'A', 10_000)).toBe(true); // B's lock expired
    await expect(a.tryLock('', 'A', 1000)).rejects.toMatchObject({ code: 'LOCK_SERVICE_REJECTED' });
    await a.close();
    await b.close();
  });

  it('sends the lock ops of one turn in one Batch call, applied in the order made, each with its own answer', async () => {
    const locks = new NetworkLockService({ address: `127.0.0.1:${server.port}` });
    try {
      const taken = await Promise.all([
        locks.tryLock('batch\u0000a', 'A', 30_000),
        locks.tryLock('batch\u0000a', 'B', 30_000), // after A's, in the same call: held
        locks.tryLock('batch\u0000b', 'B', 30_000),
      ]);
      expect(taken).toEqual([true, false, true]);
      expect(locks.stats).toMatchObject({ batches: 1, batchedOps: 3, tryLocks: 3, acquired: 2 });
      // An unlock and a tryLock of the same row in one turn meet in that order.
      const [, again] = await Promise.all([locks.unlock('batch\u0000a', 'A'), locks.tryLock('batch\u0000a', 'B', 30_000)]);
      expect(again).toBe(true);
      // An op the server refuses fails alone; the others of its call go through.
      const out = await Promise.allSettled([
        locks.tryLock('', 'A', 1000),
        locks.tryLock('batch\u0000c', 'A', 30_000),
        locks.unlock('batch\u0000b', 'B'),
      ]);
      expect(out[0]).toMatchObject({ status: 'rejected', reason: { code: 'LOCK_SERVICE_REJECTED' } });
      expect(out.slice(1).map((o) => o.status)).toEqual(['fulfilled', 'fulfilled']);
      expect((out[1] as PromiseFulfilledResult<boolean>).value).toBe(true);
      expect(locks.stats.batches).toBe(3);
      expect(await locks.tryLock('batch\u0000b', 'C', 30_000)).toBe(true); // B's unlock went through
    } finally {
      await locks.close();
    }
  });

  it('sends every lock op alone to a server without Batch (UNIMPLEMENTED), with the same answers', async () => {
    // A lock service as servers before Batch had it: TryLock and Unlock only.
    const old = new grpc.Server();
    const { lockServiceDefinition } = await import('../src/server/lock-protocol.js');
    const { InProcessLockService } = await import('../src/notify/lock-service.js');
    const held = new InProcessLockService();
    const def = lockServiceDefinition();
    old.addService({ TryLock: def.TryLock, Unlock: def.Unlock } as grpc.ServiceDefinition, {
      TryLock: (call: grpc.ServerUnaryCall<{ key: string; owner: string; ttlMs: number }, unknown>, cb: grpc.sendUnaryData<unknown>) =>
        cb(null, { acquired: held.tryLockSync(call.request.key, call.request.owner, call.request.ttlMs) }),
      Unlock: (call: grpc.ServerUnaryCall<{ key: string; owner: string }, unknown>, cb: grpc.sendUnaryData<unknown>) =>
        void held.unlock(call.request.key, call.request.owner).then(() => cb(null, {})),
    });
    const port = await new Promise<number>((res, rej) =>
      old.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
    );
    const locks = new NetworkLockService({ address: `127.0.0.1:${port}` });
    try {
      expect(await Promise.all([locks.tryLock('k', 'A', 30_000), locks.tryLock('k', 'B', 30_000)])).toEqual([true, false]);
      await Promise.all([locks.unlock('k', 'A'), locks.unlock('k', 'B')]);
      expect(await Promise.all([locks.tryLock('k', 'B', 30_000), locks.tryLock('j', 'B', 30_000)])).toEqual([true, true]);
      expect(locks.stats).toMatchObject({ batches: 1, unlockFailures: 0, unavailable: 0 });
      expect(held.size).toBe(2);
    } finally {
      await locks.close();
      old.forceShutdown();
    }
  });

  it('takes a lock over from a worker whose process gave up its liveness lease, not from a live one', async () => {
    const store = `bigtable://127.0.0.1:${server.port}`;
    const oracles = [0, 1].map(() => new OracleClient({ host: '127.0.0.1', port: server.oraclePort as number }));
    const gone = await Percolator.open({ store, oracle: oracles[0], leaseMs: 2_000 });
    const alive = await Percolator.open({ store, oracle: oracles[1], leaseMs: 2_000 });
    const locks = new NetworkLockService({ address: `127.0.0.1:${server.port}` });
    try {
      // Named as a worker names its locks: the process's liveness id first.
      expect(await locks.tryLock('t\u0000gone', `${gone.owner}/0/hint`, 30_000)).toBe(true);
      expect(await locks.tryLock('t\u0000alive', `${alive.owner}/0/hint`, 30_000)).toBe(true);
      await gone.close(); // its lease is given up
      // Taken over once the lock is RECLAIM_AFTER_MS old (bounded), not after its 30 s TTL.
      const deadline = Date.now() + 10_000;
      let taken = false;
      while (!taken && Date.now() < deadline) {
        taken = await locks.tryLock('t\u0000gone', 'someone/0/hint', 30_000);
        if (!taken) await new Promise((r) => setTimeout(r, 50));
      }
      expect(taken).toBe(true);
      expect(await locks.tryLock('t\u0000alive', 'someone/0/hint', 30_000)).toBe(false);
    } finally {
      await locks.close();
      await alive.close();
      for (const o of oracles) await o.close();
    }
  });

  it('applies the unavailable policy when the lock service cannot be reached', async () => {
    const dead = '127.0.0.1:1';
    const grant = new NetworkLockService({ address: dead, timeoutMs: 500 });
    const deny = new NetworkLockService({ address: dead, timeoutMs: 500, onUnavailable: 'deny' });
    const fail = new NetworkLockService({ address: dead, timeoutMs: 500, onUnavailable: 'throw' });
    expect(await grant.tryLock('k', 'o', 1000)).toBe(true);
    expect(await deny.tryLock('k', 'o', 1000)).toBe(false);
    await expect(fail.tryLock('k', 'o', 1000)).rejects.toBeInstanceOf(LockServiceError);
    await grant.unlock('k', 'o'); // never throws for transport failures
    expect(grant.stats.unlockFailures).toBe(1);
    await Promise.all([grant.close(), deny.close(), fail.close()]);
  });

  it('sends an unlock that failed in transport again, so the row is free long before its TTL', async () => {
    const holder = new NetworkLockService({ address: `127.0.0.1:${server.port}` });
    const other = new NetworkLockService({ address: `127.0.0.1:${server.port}` });
    // A port nothing listens on, until a proxy to the server opens there: the network comes back.
    const probe = await resettingProxy(0, server.port);
    const port = probe.port;
    await probe.close();
    const flaky = new NetworkLockService({ address: `127.0.0.1:${port}`, timeoutMs: 500 });
    let proxy: ResettingProxy | null = null;
    try {
      expect(await holder.tryLock('retried', 'o', 30_000)).toBe(true);
      await flaky.unlock('retried', 'o'); // fails in transport, does not throw
      expect(flaky.stats.unlockFailures).toBe(1);
      expect(await other.tryLock('retried', 'p', 30_000)).toBe(false);
      proxy = await resettingProxy(port, server.port);
      let taken = false;
      for (const deadline = Date.now() + 10_000; !taken && Date.now() < deadline;) {
        taken = await other.tryLock('retried', 'p', 30_000);
        if (!taken) await new Promise((r) => setTimeout(r, 50));
      }
      expect(taken).toBe(true);
      // (Its reply may come in after the other client's lock.)
      await expect.poll(() => flaky.stats.unlocksRetried).toBe(1);
    } finally {
      await proxy?.close();
      await Promise.all([holder.close(), other.close(), flaky.close()]);
    }
  });

  it('hosts the timestamp oracle on its own port', async () => {
    expect(server.oraclePort).not.toBeNull();
    const client = new OracleClient({ host: '127.0.0.1', port: server.oraclePort as number });
    const a = await client.getTimestamp();
    const b = await client.getTimestamp();
    expect(b).toBeGreaterThan(a);
    await client.close();
    expect(await inner.listTables()).toContain('_percolator_oracle');
  });

  it('serves /healthz, /metrics, /status.json and the status page', async () => {
    const base = `http://127.0.0.1:${server.httpPort}`;
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/percolator_grpc_requests_total\{method="Bigtable.ReadRows",code="OK"\} \d+/);
    expect(metrics).toMatch(/percolator_grpc_requests_total\{method="Bigtable.ReadRows",code="NOT_FOUND"\} \d+/);
    expect(metrics).toMatch(/percolator_rows_written_total \d+/);
    expect(metrics).toMatch(/percolator_oracle_timestamps_total [1-9]\d*/);
    expect(metrics).toMatch(/percolator_grpc_request_duration_seconds_bucket/);
    const status = (await (await fetch(`${base}/status.json`)).json()) as ServerStatus;
    expect(status.rows.written).toBeGreaterThan(1000);
    expect(status.grpc.requests).toBeGreaterThan(10);
    // The embedded store's row caches: every lookup answered by exactly one of four.
    const cache = status.storeCache;
    expect(cache?.decoded.budgetBytes).toBeGreaterThan(0);
    const l = cache?.lookups ?? { total: 0, decoded: 0, encoded: 0, absent: 0, engine: 0 };
    expect(l.total).toBeGreaterThan(1000);
    expect(l.decoded + l.encoded + l.absent + l.engine).toBe(l.total);
    expect(metrics).toMatch(/percolator_store_row_lookups_total\{answered="decoded"\} [1-9]\d*/);
    expect(metrics).toMatch(/percolator_store_row_cache_budget_bytes [1-9]\d*/);
    const page = await (await fetch(`${base}/`)).text();
    expect(page).toContain('<table');
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });

  it('logged no unexpected errors', () => {
    expect(logs.filter((l) => l.includes('unexpected'))).toEqual([]);
  });
});

describe('bearer token', () => {
  it('rejects gRPC calls without or with a wrong token (UNAUTHENTICATED) and HTTP likewise, except /healthz', async () => {
    const store = await openStore('memory:');
    const extra = { path: '/extra/*', title: 'Extra', handler: (_req: unknown, res: { end(s: string): void }) => res.end('extra page') };
    const s = await startServer({
      store,
      port: 0,
      authToken: 's3cret',
      oraclePort: null,
      log: () => undefined,
      httpExtraRoutes: [extra as never],
    });
    try {
      await store.createTable('t', { families: { f: {} } });
      const addr = `127.0.0.1:${s.port}`;
      for (const client of [new Raw(addr), new Raw(addr, 'wrong')]) {
        const r = await client.call(DATA_SERVICE, 'ReadRows', { tableName: T('t') });
        expect(r.err?.code).toBe(grpc.status.UNAUTHENTICATED);
        const a = await client.call(TABLE_ADMIN_SERVICE, 'ListTables', { parent: 'projects/p/instances/i' });
        expect(a.err?.code).toBe(grpc.status.UNAUTHENTICATED);
        client.close();
      }
      const good = new Raw(addr, 's3cret');
      expect((await good.call(DATA_SERVICE, 'ReadRows', { tableName: T('t') })).err).toBeNull();
      good.close();
      const wrongLocks = new NetworkLockService({ address: addr, authToken: 'nope' });
      await expect(wrongLocks.tryLock('k', 'o', 1000)).rejects.toMatchObject({ code: 'LOCK_SERVICE_REJECTED' });
      await wrongLocks.close();
      const locks = new NetworkLockService({ address: addr, authToken: 's3cret' });
      expect(await locks.tryLock('k', 'o', 1000)).toBe(true);
      await locks.close();

      const base = `http://127.0.0.1:${s.httpPort}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/metrics`)).status).toBe(401);
      expect((await fetch(`${base}/`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      expect((await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer s3cret' } })).status).toBe(200);
      expect((await fetch(`${base}/status.json?token=s3cret`)).status).toBe(200);
      expect((await fetch(`${base}/extra/page`)).status).toBe(401);
      const extraPage = await fetch(`${base}/extra/page?token=s3cret`);
      expect(await extraPage.text()).toBe('extra page');
      expect(await (await fetch(`${base}/?token=s3cret`)).text()).toContain('Extra');
    } finally {
      await s.close();
      await store.close();
    }
  });
});

describe("one oracle in the server's process", () => {
  it("a Percolator opened beside the server over its store draws from the oracle the server serves, and outlives the server's close", async () => {
    const store = await openStore('memory:');
    const s = await startServer({ store, port: 0, httpPort: null, log: () => undefined });
    const remote = new OracleClient({ host: '127.0.0.1', port: s.oraclePort as number });
    const db = await Percolator.open({ store });
    try {
      // One sequence, whichever side asks: a second oracle over the same mark would start above the
      // server's reservation, so the server's next timestamp would come out below the local one.
      for (let i = 0; i < 3; i++) {
        const a = await remote.getTimestamp();
        const b = await db.oracle.getTimestamp();
        const c = await remote.getTimestamp();
        expect(a).toBeLessThan(b);
        expect(b).toBeLessThan(c);
      }
      await s.close();
      await db.createTable('t');
      await db.transaction(async (tx) => tx.set('t', 'r', 'c:x', 'v'));
      expect(await db.getString('t', 'r', 'c:x')).toBe('v');
    } finally {
      await remote.close();
      await db.close();
      await s.close();
      await store.close();
    }
  });
});

describe('bearer token, for our own clients', () => {
  it('lets a bigtable:// store, transactions and the lock service in with PERCOLATOR_AUTH_TOKEN, and fails without it at once (UNAUTHENTICATED)', async () => {
    const backing = await openStore('memory:');
    const s = await startServer({ store: backing, port: 0, httpPort: null, authToken: 'tok', log: () => undefined });
    const before = process.env.PERCOLATOR_AUTH_TOKEN;
    const url = `bigtable://127.0.0.1:${s.port}`;
    try {
      delete process.env.PERCOLATOR_AUTH_TOKEN;
      const anon = await openStore(url);
      const started = Date.now();
      await expect(anon.listTables()).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
      expect(Date.now() - started).toBeLessThan(5_000); // not retried as a server out of reach
      await anon.close();

      process.env.PERCOLATOR_AUTH_TOKEN = 'tok';
      const db = await Percolator.open({ store: url, oracle: new OracleClient({ host: '127.0.0.1', port: s.oraclePort as number }) });
      try {
        await db.createTable('docs');
        const worker = db.worker({ threads: 2 });
        worker.observe('raw:x', 'copy', async (tx, row) => {
          tx.set('docs', row, 'out:y', (await tx.getString('docs', row, 'raw:x')) ?? '');
        });
        await worker.start();
        await db.transaction(async (tx) => tx.set('docs', 'r', 'raw:x', 'v'));
        await db.waitForQuiescence({ timeoutMs: 20_000 });
        expect(await db.getString('docs', 'r', 'out:y')).toBe('v');
        expect(worker.metrics.commits).toBeGreaterThan(0);
        await worker.stop();
      } finally {
        await db.close();
      }
    } finally {
      if (before === undefined) delete process.env.PERCOLATOR_AUTH_TOKEN;
      else process.env.PERCOLATOR_AUTH_TOKEN = before;
      await s.close();
      await backing.close();
    }
  });
});

/** A server (no oracle) on `store`, whose table `t` has family `f`; `write(row)` sets `f:q` in it. */
async function serveTableT(store: Store, log: (line: string) => void) {
  const s = await startServer({ store, port: 0, oraclePort: null, log });
  const client = new Raw(`127.0.0.1:${s.port}`);
  const write = (row: string) =>
    client.call(DATA_SERVICE, 'MutateRow', {
      tableName: T('t'),
      rowKey: Buffer.from(row),
      mutations: [{ setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.from('v') } }],
    });
  return { s, base: `http://127.0.0.1:${s.httpPort}`, client, write };
}

describe('a store that refuses writes', () => {
  it('turns /healthz to 503 with the reason and names it in /status.json, while reads go on', async () => {
    // The engine of a file: store after a write failed (a full disk): refuses writes until reopened.
    class FailingEngine extends MemoryEngine {
      failure: StoreError | null = null;
      override write(ops: readonly KvOp[]): Promise<void> {
        return this.failure === null ? super.write(ops) : Promise.reject(this.failure);
      }
      writeFailure(): StoreError | null {
        return this.failure;
      }
    }
    const engine = new FailingEngine();
    const store = await EngineStore.open(engine, 'memory:');
    await store.createTable('t', { families: { f: {} } });
    const { s, base, client, write } = await serveTableT(store, () => undefined);
    try {
      expect((await write('a')).err).toBeNull();
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect(((await (await fetch(`${base}/status.json`)).json()) as ServerStatus).server.storeWriteFailure).toBeNull();

      engine.failure = new StoreError('IO_ERROR', 'LevelDB write failed in /data: IO error: 000003.log: No space left on device', {});
      expect((await write('b')).err).not.toBeNull();
      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(503);
      expect(await health.text()).toMatch(/^the store refuses writes: .*No space left on device/);
      const status = (await (await fetch(`${base}/status.json`)).json()) as ServerStatus;
      expect(status.server.storeWriteFailure).toMatch(/No space left on device/);
      const read = await client.call(DATA_SERVICE, 'ReadRows', { tableName: T('t') });
      expect(read.err).toBeNull();
      expect(assembleChunks(read.messages).map((r) => r.key.toString())).toEqual(['a']);
    } finally {
      client.close();
      await s.close();
      engine.failure = null; // closing saves the catalog
      await store.close();
    }
  });

  it('a file: store whose directory is removed under the server: the next write fails, /healthz says 503, nothing more is acknowledged', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'serve-removed-'));
    const dir = join(parent, 'data');
    const store = await openStore(`file:${dir}`);
    await store.createTable('t', { families: { f: {} } });
    const logged: string[] = [];
    const { s, base, client, write } = await serveTableT(store, (line) => logged.push(line));
    try {
      expect((await write('a')).err).toBeNull();
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      rmSync(dir, { recursive: true, force: true });
      // Checked by the health probe itself, before any write…
      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(503);
      expect(await health.text()).toMatch(/^the store refuses writes: .*the directory was removed or moved/);
      // …and by every write: none is acknowledged.
      for (const row of ['b', 'c']) expect((await write(row)).err).not.toBeNull();
      // The operator hears of it once (the server's once-a-second look), not once per refused call.
      const deadline = Date.now() + 10_000;
      while (!logged.some((l) => l.startsWith('the store refuses writes: ')) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect(logged.filter((l) => /refuses writes|unexpected error/.test(l))).toEqual([
        expect.stringMatching(/^the store refuses writes: .*the directory was removed or moved/),
      ]);
    } finally {
      client.close();
      await s.close();
      await store.close().catch(() => undefined);
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe('graceful close (in-process)', () => {
  it('lets in-flight calls finish, refuses new ones with UNAVAILABLE, then closes the store it opened', async () => {
    const base = await openStore('memory:');
    await base.createTable('t', { families: { f: {} } });
    await base.mutateRow('t', Buffer.from('r'), [
      { setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.from('v') } },
    ]);
    // readRows that holds its first row until the test lets it go
    let entered = (): void => undefined;
    const reached = new Promise<void>((r) => (entered = r));
    let release = (): void => undefined;
    const released = new Promise<void>((r) => (release = r));
    const slow = new Proxy(base, {
      get(target, prop) {
        if (prop === 'readRows') {
          return (table: string, options?: ReadRowsOptions): AsyncIterable<Row> => {
            const it = target.readRows(table, options);
            return {
              async *[Symbol.asyncIterator]() {
                entered();
                await released;
                yield* it;
              },
            };
          };
        }
        const v = Reflect.get(target, prop);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const s = await startServer({ store: slow, port: 0, oraclePort: null, log: () => undefined });
    const client = new Raw(`127.0.0.1:${s.port}`);
    const inflight = client.call(DATA_SERVICE, 'ReadRows', { tableName: T('t') });
    await reached; // the call is in flight on the server
    const closed = s.close();
    expect((await fetch(`http://127.0.0.1:${s.httpPort}/healthz`)).status).toBe(503);
    const refused = await client.call(DATA_SERVICE, 'MutateRow', {
      tableName: T('t'),
      rowKey: Buffer.from('x'),
      mutations: [{ deleteFromRow: {} }],
    });
    expect(refused.err?.code).toBe(grpc.status.UNAVAILABLE);
    release();
    const done = await inflight;
    expect(done.err).toBeNull();
    expect(assembleChunks(done.messages).map((r) => r.key.toString())).toEqual(['r']);
    await closed;
    client.close();
    // the server did not own this store: still open
    expect(await base.listTables()).toEqual(['t']);
    await base.close();

    const owned = await startServer({ storeUrl: 'memory:', port: 0, httpPort: null, oraclePort: null, log: () => undefined });
    await owned.close();
    await expect(owned.store.listTables()).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    await owned.close(); // idempotent
  });
});
