/**
 * Fuzzing `percolator serve`: thousands of random, truncated, bit-flipped and oversized
 * protobuf messages, plus random-but-valid requests with hostile values, sent raw through a
 * grpc-js generic client with custom serializers to every implemented method (the Bigtable
 * services' and the lock service's). The server must answer each with a proper status (never
 * INTERNAL / UNKNOWN, nothing logged as unexpected), stay up, and serve a valid request afterwards.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_SERVICE, batchServiceDefinition } from '../src/server/batch-protocol.js';
import { LOCK_SERVICE, MAX_KEY_BYTES, MAX_OWNER_BYTES, MAX_TTL_MS, lockServiceDefinition } from '../src/server/lock-protocol.js';
import { bigtablePackage, DATA_SERVICE, INSTANCE_ADMIN_SERVICE, TABLE_ADMIN_SERVICE } from '../src/server/protos.js';
import { type PercolatorServer, startServer } from '../src/server/server.js';
import { openStore } from '../src/store/open-store.js';
import type { Store } from '../src/store/store.js';
import { mulberry32, seedFromEnv } from '../src/util/seeded-random.js';

const SEED = seedFromEnv('FUZZ_SEED', 20240601);
const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 3000);
const MAX_MESSAGE = 1024 * 1024;

const rnd = mulberry32(SEED);
const int = (n: number) => Math.floor(rnd() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
const chance = (p: number) => rnd() < p;
function bytes(max: number): Buffer {
  const b = Buffer.allocUnsafe(int(max + 1));
  for (let i = 0; i < b.length; i++) b[i] = int(256);
  return b;
}
const smallKey = () => (chance(0.7) ? Buffer.from(pick(['a', 'b', 'k1', 'k2', 'zz', '\u00ff'])) : bytes(chance(0.05) ? 5000 : 12));

const INT64S = [
  '0',
  '-1',
  '1000',
  '-5',
  '1',
  '9007199254740991',
  '9007199254740993',
  '9223372036854775807',
  '-9223372036854775808',
  '123456789000',
];
const int64 = () => (chance(0.7) ? pick(INT64S) : String(int(2 ** 31) * (chance(0.5) ? 1 : -1)));
const tableName = () =>
  pick([
    'projects/p/instances/i/tables/fz',
    'projects/p/instances/i/tables/fz',
    'projects/p/instances/i/tables/fz',
    'projects/p/instances/i/tables/missing',
    'projects/p/instances/i/tables/bad name',
    'fz',
    '',
    `projects/${bytes(4).toString('latin1')}/instances/i/tables/fz`,
  ]);
const family = () => pick(['f', 'g', 'f', 'nope', '', 'f:x', 'é']);
const regex = (): Buffer =>
  chance(0.6) ? Buffer.from(pick(['.*', 'a.*', '(', '[z-a]', '\\C+', '(?<=x)y', 'a{1000}{1000}', '\\', '\\xff', ''])) : bytes(8);

// biome-ignore lint/suspicious/noExplicitAny: random protobuf objects
function filter(depth: number): any {
  const leafs = [
    () => ({ sink: chance(0.8) }),
    () => ({ passAllFilter: chance(0.8) }),
    () => ({ blockAllFilter: chance(0.8) }),
    () => ({ rowKeyRegexFilter: regex() }),
    () => ({ rowSampleFilter: pick([0, 0.5, 1, -1, 2, Number.NaN, 1e-300]) }),
    () => ({ familyNameRegexFilter: regex().toString('latin1') }),
    () => ({ columnQualifierRegexFilter: regex() }),
    () => ({
      columnRangeFilter: {
        familyName: family(),
        startQualifierClosed: smallKey(),
        ...(chance(0.5) ? { endQualifierOpen: smallKey() } : {}),
      },
    }),
    () => ({ timestampRangeFilter: { startTimestampMicros: int64(), endTimestampMicros: int64() } }),
    () => ({ valueRegexFilter: regex() }),
    () => ({ valueRangeFilter: { startValueOpen: smallKey(), endValueClosed: smallKey() } }),
    () => ({ cellsPerRowOffsetFilter: pick([0, 1, -1, 2 ** 31 - 1, -(2 ** 31)]) }),
    () => ({ cellsPerRowLimitFilter: pick([0, 1, -1, 2 ** 31 - 1]) }),
    () => ({ cellsPerColumnLimitFilter: pick([0, 1, -3, 5]) }),
    () => ({ stripValueTransformer: chance(0.8) }),
    () => ({ applyLabelTransformer: pick(['l', 'bad label', '', 'x'.repeat(20), 'é']) }),
    () => ({}),
  ];
  if (depth > 0 && chance(0.4)) {
    const n = int(4);
    const subs = () => Array.from({ length: n }, () => filter(depth - 1));
    return pick([
      () => ({ chain: { filters: subs() } }),
      () => ({ interleave: { filters: subs() } }),
      () => ({
        condition: {
          ...(chance(0.9) ? { predicateFilter: filter(depth - 1) } : {}),
          trueFilter: filter(depth - 1),
          ...(chance(0.5) ? { falseFilter: filter(depth - 1) } : {}),
        },
      }),
    ])();
  }
  return pick(leafs)();
}
/** A protobuf length-delimited field: tag, length, payload. */
function field(id: number, payload: Buffer): Buffer {
  const varint = (n: number): number[] => {
    const out: number[] = [];
    for (; n > 127; n >>>= 7) out.push((n & 127) | 128);
    out.push(n);
    return out;
  };
  return Buffer.concat([Buffer.from(varint((id << 3) | 2)), Buffer.from(varint(payload.length)), payload]);
}

/**
 * A ReadRowsRequest whose filter is `depth` chains around a pass-all filter (two messages a
 * level), encoded by hand: protobufjs 7.6 refuses to encode a message nested deeper than 100.
 */
function deepReadRows(table: string, depth: number): Buffer {
  let f: Buffer = Buffer.from([0x88, 0x01, 0x01]); // RowFilter.pass_all_filter (17) = true
  for (let i = 0; i < depth; i++) f = field(1, field(1, f)); // RowFilter.chain (1) { filters (1) }
  return Buffer.concat([field(1, Buffer.from(table)), field(3, f)]);
}

function mutation(): object {
  return pick([
    () => ({
      setCell: {
        familyName: family(),
        columnQualifier: smallKey(),
        timestampMicros: int64(),
        value: chance(0.02) ? Buffer.alloc(300 * 1024) : bytes(16),
      },
    }),
    () => ({
      deleteFromColumn: {
        familyName: family(),
        columnQualifier: smallKey(),
        ...(chance(0.5) ? { timeRange: { startTimestampMicros: int64(), endTimestampMicros: int64() } } : {}),
      },
    }),
    () => ({ deleteFromFamily: { familyName: family() } }),
    () => ({ deleteFromRow: {} }),
    () => ({ addToCell: { familyName: family() } }),
    () => ({}),
  ])();
}
const mutations = () => Array.from({ length: int(5) }, mutation);

function gcRule(depth: number): object {
  if (depth > 0 && chance(0.3)) {
    const rules = Array.from({ length: int(3) }, () => gcRule(depth - 1));
    return chance(0.5) ? { union: { rules } } : { intersection: { rules } };
  }
  return pick([
    () => ({ maxNumVersions: pick([0, 1, 3, -1, 2 ** 31 - 1]) }),
    () => ({ maxAge: { seconds: int64(), nanos: pick([0, 1, 999_999_999, -5, 1_000_000_000]) } }),
    () => ({}),
  ])();
}
const families = () =>
  Object.fromEntries(Array.from({ length: int(3) }, () => [pick(['f', 'g', 'h', '', 'bad name', 'x'.repeat(70)]), { gcRule: gcRule(2) }]));
const instanceName = () => pick(['projects/p/instances/i', 'projects/p', '', 'projects/p/instances/i/tables/fz']);
const adminTable = () =>
  pick(['projects/p/instances/i/tables/fza', 'projects/p/instances/i/tables/fzb', 'projects/p/instances/i/tables/missing', 'x']);
const lockKey = () => pick(['k', 'row/1', '', '\u00e9\u{1f600}', 'x'.repeat(MAX_KEY_BYTES), 'x'.repeat(MAX_KEY_BYTES + 1), '\u0000']);
const lockOwner = () => pick(['w1', 'w2', '', 'o'.repeat(MAX_OWNER_BYTES + 1)]);
const view = () => pick([undefined, 'NAME_ONLY', 'SCHEMA_VIEW', 'FULL', 'REPLICATION_VIEW', 99]);

/** Each method's request generator: a message object, or bytes encoded by hand. */
const checkAndMutateRow = () => ({
  tableName: tableName(),
  rowKey: smallKey(),
  ...(chance(0.7) ? { predicateFilter: filter(3) } : {}),
  trueMutations: mutations(),
  falseMutations: mutations(),
});

const generators: Record<string, [string, () => object | Buffer]> = {
  ReadRows: [
    DATA_SERVICE,
    () =>
      chance(0.02)
        ? deepReadRows(tableName(), pick([25, 70, 500]))
        : {
            tableName: tableName(),
            ...(chance(0.6)
              ? {
                  rows: {
                    rowKeys: Array.from({ length: int(3) }, smallKey),
                    rowRanges: Array.from({ length: int(3) }, () => ({
                      startKeyClosed: smallKey(),
                      ...(chance(0.5) ? { endKeyOpen: smallKey() } : { endKeyClosed: smallKey() }),
                    })),
                  },
                }
              : {}),
            ...(chance(0.6) ? { filter: filter(3) } : {}),
            rowsLimit: chance(0.7) ? String(int(5)) : int64(),
            reversed: chance(0.3),
          },
  ],
  SampleRowKeys: [DATA_SERVICE, () => ({ tableName: tableName() })],
  MutateRow: [DATA_SERVICE, () => ({ tableName: tableName(), rowKey: smallKey(), mutations: mutations() })],
  MutateRows: [
    DATA_SERVICE,
    () => ({ tableName: tableName(), entries: Array.from({ length: int(6) }, () => ({ rowKey: smallKey(), mutations: mutations() })) }),
  ],
  CheckAndMutateRow: [DATA_SERVICE, checkAndMutateRow],
  CheckAndMutateRows: [BATCH_SERVICE, () => ({ entries: Array.from({ length: int(6) }, checkAndMutateRow) })],
  ReadRowsMany: [
    BATCH_SERVICE,
    () => ({
      entries: Array.from({ length: int(6) }, () => ({
        tableName: tableName(),
        ...(chance(0.8) ? { rows: { rowKeys: Array.from({ length: int(4) }, smallKey) } } : {}),
        ...(chance(0.6) ? { filter: filter(3) } : {}),
        ...(chance(0.2) ? { rowsLimit: String(int(3)) } : {}),
      })),
    }),
  ],
  ReadModifyWriteRow: [
    DATA_SERVICE,
    () => ({
      tableName: tableName(),
      rowKey: smallKey(),
      rules: Array.from({ length: int(4) }, () =>
        pick([
          () => ({ familyName: family(), columnQualifier: smallKey(), appendValue: bytes(8) }),
          () => ({ familyName: family(), columnQualifier: smallKey(), incrementAmount: int64() }),
          () => ({ familyName: family(), columnQualifier: smallKey() }),
        ])(),
      ),
    }),
  ],
  PingAndWarm: [DATA_SERVICE, () => ({ name: instanceName() })],
  CreateTable: [
    TABLE_ADMIN_SERVICE,
    () => ({
      parent: instanceName(),
      tableId: pick(['fza', 'fzb', '', 'bad id', 'x'.repeat(60)]),
      table: { columnFamilies: families(), granularity: pick([0, 1, 7]) },
    }),
  ],
  DeleteTable: [TABLE_ADMIN_SERVICE, () => ({ name: adminTable() })],
  ListTables: [
    TABLE_ADMIN_SERVICE,
    () => ({ parent: instanceName(), view: view(), pageSize: pick([0, 1, 2, -1]), pageToken: pick(['', 'Zno', '!!!']) }),
  ],
  GetTable: [TABLE_ADMIN_SERVICE, () => ({ name: pick([adminTable(), 'projects/p/instances/i/tables/fz']), view: view() })],
  ModifyColumnFamilies: [
    TABLE_ADMIN_SERVICE,
    () => ({
      name: pick([adminTable(), 'projects/p/instances/i/tables/fz']),
      modifications: Array.from({ length: int(4) }, () =>
        pick([
          () => ({ id: pick(['h', 'f', 'g', '', 'bad id']), create: { gcRule: gcRule(2) } }),
          () => ({ id: pick(['h', 'f', 'nope']), update: { gcRule: gcRule(2) } }),
          () => ({ id: pick(['h', 'nope']), drop: chance(0.8) }),
          () => ({ id: 'h' }),
        ])(),
      ),
    }),
  ],
  DropRowRange: [
    TABLE_ADMIN_SERVICE,
    () => ({
      name: pick([adminTable(), 'projects/p/instances/i/tables/fz']),
      ...pick([{ rowKeyPrefix: smallKey() }, { deleteAllDataFromTable: chance(0.5) }, {}]),
    }),
  ],
  CheckConsistency: [TABLE_ADMIN_SERVICE, () => ({ name: adminTable(), consistencyToken: pick(['', 't']) })],
  GetInstance: [INSTANCE_ADMIN_SERVICE, () => ({ name: instanceName() })],
  ListClusters: [INSTANCE_ADMIN_SERVICE, () => ({ parent: instanceName() })],
  TryLock: [LOCK_SERVICE, () => ({ key: lockKey(), owner: lockOwner(), ttlMs: pick([0, 1, 500, MAX_TTL_MS, MAX_TTL_MS + 1, 0xffffffff]) })],
  Unlock: [LOCK_SERVICE, () => ({ key: lockKey(), owner: lockOwner() })],
  Batch: [
    LOCK_SERVICE,
    () => ({
      ops: Array.from({ length: int(6) }, () => ({
        key: lockKey(),
        owner: lockOwner(),
        ...(chance(0.7) ? { ttlMs: pick([0, 1, 500, MAX_TTL_MS, MAX_TTL_MS + 1]) } : {}),
        ...(chance(0.4) ? { unlock: true } : {}),
      })),
    }),
  ],
};

const pkg = bigtablePackage();
function def(service: string, method: string): grpc.MethodDefinition<unknown, unknown> {
  const defs = service === LOCK_SERVICE ? lockServiceDefinition() : service === BATCH_SERVICE ? batchServiceDefinition() : pkg[service];
  return (defs as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>)[method] as grpc.MethodDefinition<unknown, unknown>;
}

function send(client: grpc.Client, service: string, method: string, body: Buffer): Promise<grpc.status> {
  const d = def(service, method);
  const path = `/${service}/${method}`;
  const identity = (b: Buffer) => b;
  const options = { deadline: Date.now() + 15_000 };
  return new Promise((resolve) => {
    if (!d.responseStream) {
      client.makeUnaryRequest(path, identity, identity, body, new grpc.Metadata(), options, (err) =>
        resolve(err ? err.code : grpc.status.OK),
      );
      return;
    }
    const s = client.makeServerStreamRequest(path, identity, identity, body, new grpc.Metadata(), options);
    s.on('data', () => undefined);
    s.on('error', (e: grpc.ServiceError) => resolve(e.code));
    s.on('end', () => resolve(grpc.status.OK));
  });
}

let server: PercolatorServer;
let store: Store;
const logs: string[] = [];

beforeAll(async () => {
  store = await openStore('memory:');
  await store.createTable('fz', { families: { f: {}, g: { gcRule: { maxNumVersions: 2 } } } });
  server = await startServer({ store, port: 0, httpPort: null, oraclePort: null, maxMessageBytes: MAX_MESSAGE, log: (l) => logs.push(l) });
});
afterAll(async () => {
  await server?.close();
  await store?.close();
});

describe('fuzzing the gRPC server', () => {
  it(`answers ${ITERATIONS} random / truncated / corrupted / hostile messages properly and stays up (seed ${SEED})`, async () => {
    const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure(), { 'grpc.max_send_message_length': -1 });
    const methods = Object.keys(generators);
    const codes = new Map<string, number>();
    const bad: string[] = [];
    const CONCURRENCY = 64;
    let i = 0;
    const worker = async () => {
      while (i < ITERATIONS) {
        const n = i++;
        const method = pick(methods);
        const [service, gen] = generators[method] as [string, () => object | Buffer];
        let body: Buffer;
        let kind: string;
        const r = rnd();
        if (r < 0.2) {
          kind = 'random';
          body = bytes(pick([0, 1, 8, 64, 600]));
        } else {
          const message = gen();
          const valid = Buffer.isBuffer(message) ? message : def(service, method).requestSerialize(message);
          if (r < 0.35) {
            kind = 'truncated';
            body = valid.subarray(0, int(valid.length + 1));
          } else if (r < 0.5) {
            kind = 'flipped';
            body = Buffer.from(valid);
            for (let k = 0; k < 1 + int(4) && body.length > 0; k++) {
              const at = int(body.length);
              body[at] = (body[at] as number) ^ (1 << int(8));
            }
          } else {
            kind = 'valid';
            body = valid;
          }
        }
        const code = await send(client, service, method, body);
        const key = `${grpc.status[code]}`;
        codes.set(key, (codes.get(key) ?? 0) + 1);
        if (code === grpc.status.INTERNAL || code === grpc.status.UNKNOWN || code === grpc.status.UNAVAILABLE) {
          if (bad.length < 10) bad.push(`#${n} ${method} ${kind} → ${key}: ${body.subarray(0, 80).toString('hex')}`);
        }
      }
    };
    // grpc-js formats a stack trace for every failed call, which under vitest's source-mapped
    // stack traces costs more than the call itself; none is looked at here.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }

    // oversized messages: refused with RESOURCE_EXHAUSTED before they are decoded
    const huge = Buffer.alloc(MAX_MESSAGE + 1024, 0x0a);
    expect(await send(client, DATA_SERVICE, 'MutateRow', huge)).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(await send(client, DATA_SERVICE, 'ReadRows', huge)).toBe(grpc.status.RESOURCE_EXHAUSTED);

    // A bit flip in a DeleteTable's name length can shorten `…/tables/fza` to `…/tables/fz`: the
    // fuzz may have deleted the table the checks below use, or (a valid ModifyColumnFamilies) given
    // its family a max-age rule under which the check's cell from 1970 is gone at once (seed 55).
    // The checks start from the table as created.
    if ((await store.listTables()).includes('fz')) await store.deleteTable('fz');
    await store.createTable('fz', { families: { f: {} } });

    // filters nested too deep: refused as invalid, by the filter compiler (more than 20 levels) or
    // by the decoder (protobufjs: more than 100 messages)
    for (const depth of [25, 70, 500]) {
      expect(await send(client, DATA_SERVICE, 'ReadRows', deepReadRows('projects/p/instances/i/tables/fz', depth))).toBe(
        grpc.status.INVALID_ARGUMENT,
      );
    }

    // the lock service's limits, and still granting a valid lock
    const tryLock = (m: object) => send(client, LOCK_SERVICE, 'TryLock', def(LOCK_SERVICE, 'TryLock').requestSerialize(m));
    expect(await tryLock({ key: 'x'.repeat(MAX_KEY_BYTES + 1), owner: 'w', ttlMs: 1000 })).toBe(grpc.status.INVALID_ARGUMENT);
    expect(await tryLock({ key: 'after-fuzz', owner: 'w', ttlMs: 0 })).toBe(grpc.status.INVALID_ARGUMENT);
    expect(await tryLock({ key: 'after-fuzz', owner: '', ttlMs: 1000 })).toBe(grpc.status.INVALID_ARGUMENT);
    expect(await tryLock({ key: 'after-fuzz', owner: 'w', ttlMs: 1000 })).toBe(grpc.status.OK);

    // still serving a valid request
    const valid = def(DATA_SERVICE, 'MutateRow').requestSerialize({
      tableName: 'projects/p/instances/i/tables/fz',
      rowKey: Buffer.from('after-fuzz'),
      mutations: [{ setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: '1000', value: Buffer.from('ok') } }],
    });
    expect(await send(client, DATA_SERVICE, 'MutateRow', valid)).toBe(grpc.status.OK);
    const row = await store.readRow('fz', Buffer.from('after-fuzz'));
    expect(Buffer.from(row?.cells[0]?.value ?? []).toString()).toBe('ok');
    client.close();

    expect(bad).toEqual([]);
    expect(logs.filter((l) => l.includes('unexpected'))).toEqual([]);
    expect((codes.get('OK') ?? 0) + (codes.get('INVALID_ARGUMENT') ?? 0)).toBeGreaterThan(ITERATIONS / 3);
    expect(codes.get('OK') ?? 0).toBeGreaterThan(50);
  });
});
