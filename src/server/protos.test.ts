/**
 * The service definitions protos.ts builds with protobufjs are, to grpc-js and on the wire, what
 * @grpc/proto-loader's package definitions of the same descriptor JSON were (the server used those
 * until 2026-12-02): the same methods with the same paths, streaming flags and `originalName`, and
 * serializers that write the same bytes and read them back into the same objects — for every
 * request and response message of every method served (the three Bigtable services, BatchService,
 * LockService), each filled in by reflection so that every field kind and a member of every oneof
 * is on the wire.
 */
import type { MethodDefinition } from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { BATCH_SERVICE, batchServiceDefinition } from './batch-protocol.js';
import { LOCK_PROTO_JSON, LOCK_SERVICE, lockServiceDefinition } from './lock-protocol.js';
import { bigtablePackage, bigtableRoot, DATA_SERVICE, INSTANCE_ADMIN_SERVICE, TABLE_ADMIN_SERVICE } from './protos.js';

type Def = MethodDefinition<unknown, unknown>;

/** proto-loader's definition of `service`, from the JSON of the root that defines it, with the options the server used. */
function protoLoaderService(root: protobuf.Root, service: string): Record<string, Def> {
  const options = {
    keepCase: false,
    longs: String,
    enums: String,
    bytes: Buffer,
    defaults: false,
    arrays: true,
    objects: false,
    oneofs: true,
  };
  const json = root.toJSON() as Parameters<typeof protoLoader.fromJSON>[0];
  return protoLoader.fromJSON(json, options)[service] as unknown as Record<string, Def>;
}

/** A value for every field (a oneof: the member `seed` picks), nested messages to `depth`. */
function sample(type: protobuf.Type, seed: number, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const chosen = new Set(type.oneofsArray.map((o) => o.fieldsArray[seed % o.fieldsArray.length]?.name));
  for (const field of type.fieldsArray) {
    if (field.partOf !== null && !chosen.has(field.name)) continue;
    field.resolve();
    const one = (): unknown => {
      if (field.resolvedType instanceof protobuf.Type) return depth < 3 ? sample(field.resolvedType, seed + 1, depth + 1) : {};
      if (field.resolvedType instanceof protobuf.Enum) {
        const names = Object.keys(field.resolvedType.values);
        return names[names.length - 1];
      }
      switch (field.type) {
        case 'string':
          return `s-${field.name}`;
        case 'bytes':
          return Buffer.from([0, 1, 255, seed & 255]);
        case 'bool':
          return true;
        case 'double':
        case 'float':
          return 1.5;
        case 'int64':
        case 'uint64':
        case 'sint64':
        case 'fixed64':
        case 'sfixed64':
          return '9007199254740993'; // beyond 2^53: a long must not pass through a double
        default:
          return 7;
      }
    };
    if (field instanceof protobuf.MapField) out[field.name] = { k1: one(), k2: one() };
    else out[field.name] = field.repeated ? [one(), one()] : one();
  }
  return out;
}

const services: [string, () => Record<string, Def>, () => protobuf.Root][] = [
  [DATA_SERVICE, () => bigtablePackage()[DATA_SERVICE] as unknown as Record<string, Def>, bigtableRoot],
  [TABLE_ADMIN_SERVICE, () => bigtablePackage()[TABLE_ADMIN_SERVICE] as unknown as Record<string, Def>, bigtableRoot],
  [INSTANCE_ADMIN_SERVICE, () => bigtablePackage()[INSTANCE_ADMIN_SERVICE] as unknown as Record<string, Def>, bigtableRoot],
  [BATCH_SERVICE, () => batchServiceDefinition() as unknown as Record<string, Def>, bigtableRoot],
  // The lock service's root is its own, from the JSON lock-protocol.ts declares.
  [LOCK_SERVICE, () => lockServiceDefinition() as unknown as Record<string, Def>, () => protobuf.Root.fromJSON(LOCK_PROTO_JSON)],
];

describe.each(services)('%s', (service, ours, rootOf) => {
  it('has proto-loader’s methods, paths, streaming flags and original names', () => {
    // Before ours: BatchService's package joins the shared root when its definition is first built.
    const mine = ours();
    const theirs = protoLoaderService(rootOf(), service);
    expect(Object.keys(mine).sort()).toEqual(Object.keys(theirs).sort());
    expect(Object.keys(mine).length).toBeGreaterThan(0);
    for (const [name, def] of Object.entries(theirs)) {
      const m = mine[name] as Def;
      expect({ path: m.path, req: m.requestStream, res: m.responseStream, orig: m.originalName }, name).toEqual({
        path: def.path,
        req: def.requestStream,
        res: def.responseStream,
        orig: def.originalName,
      });
    }
  });

  it('writes and reads every request and response as proto-loader does', () => {
    const mine = ours();
    const theirs = protoLoaderService(rootOf(), service);
    const root = rootOf();
    const service_ = root.lookupService(service);
    for (const method of service_.methodsArray) {
      method.resolve();
      const m = mine[method.name] as Def;
      const t = theirs[method.name] as Def;
      for (const seed of [0, 1, 2, 3]) {
        const req = sample(method.resolvedRequestType as protobuf.Type, seed);
        const reqBytes = (t.requestSerialize as (v: unknown) => Buffer)(req);
        expect(Buffer.from((m.requestSerialize as (v: unknown) => Buffer)(req)), method.name).toEqual(Buffer.from(reqBytes));
        expect(m.requestDeserialize(reqBytes), method.name).toEqual(t.requestDeserialize(reqBytes));
        const res = sample(method.resolvedResponseType as protobuf.Type, seed);
        const resBytes = (t.responseSerialize as (v: unknown) => Buffer)(res);
        expect(Buffer.from(m.responseSerialize(res)), method.name).toEqual(Buffer.from(resBytes));
        expect((m.responseDeserialize as (b: Buffer) => unknown)(resBytes), method.name).toEqual(
          (t.responseDeserialize as (b: Buffer) => unknown)(resBytes),
        );
      }
      // An array is refused by both, with the same message.
      expect(() => (m.requestSerialize as (v: unknown) => Buffer)([])).toThrow(
        (() => {
          try {
            (t.requestSerialize as (v: unknown) => Buffer)([]);
          } catch (e) {
            return (e as Error).message;
          }
          return 'no error';
        })(),
      );
    }
  });
});
