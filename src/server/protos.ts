/**
 * The Cloud Bigtable v2 protos as grpc-js service definitions, built once with protobufjs from
 * `@google-cloud/bigtable/build/protos/protos.json` (the compiled, self-contained descriptor set
 * shipped with the official client: data API, table admin, instance admin and their google.*
 * dependencies; its field names are camelCase already).
 *
 * Why not @grpc/proto-loader (used until 2026-12-02): its package definition also describes
 * every message and enum of the set for gRPC reflection (a DescriptorProto per type, the whole
 * set encoded as FileDescriptorProtos), ~0.2 s of every `percolator serve` start and of every
 * bigtable:// client that asks for the BatchService, where the server and the clients use
 * only the methods. The method definitions here are what proto-loader's are to grpc-js (path,
 * streaming flags, `originalName`, and its serializers: `encode(fromObject(x))`, refusing an
 * array; `toObject(decode(buf), options)`); test/protos-equivalence.test.ts holds them to it.
 *
 * Conversion options (every handler relies on them):
 * - int64 fields as decimal strings (`longs: String`); `convert.ts` parses them and rejects
 *   anything outside the safe-integer range with INVALID_ARGUMENT;
 * - enums as their names (`enums: String`), bytes as Buffers;
 * - `defaults: false`: fields absent on the wire are absent (undefined) in the object, so
 *   presence is observable; handlers apply the proto3 defaults themselves;
 * - `arrays: true`: repeated fields are always arrays; `oneofs: true`: each oneof also gets a
 *   virtual property naming the member that is set (e.g. `filter: 'chain'`).
 *
 * Requests are decoded by a wrapped deserializer that never throws: a message protobufjs cannot
 * decode becomes a `MalformedRequest` marker, which the handler answers with INVALID_ARGUMENT
 * (grpc-js would otherwise answer INTERNAL). Decoding happens on the event loop before the
 * handler runs; the size cap (`grpc.max_receive_message_length`) is enforced before decoding.
 */
import { createRequire } from 'node:module';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);

export const LOADER_OPTIONS: protobuf.IConversionOptions = {
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: false,
  arrays: true,
  objects: false,
  oneofs: true,
};

let cachedRoot: protobuf.Root | null = null;

/**
 * Every message and service of the client's descriptor set, resolved, shared by whoever serves or
 * calls them (BatchService adds its package to it: its messages embed Bigtable's).
 */
export function bigtableRoot(): protobuf.Root {
  if (cachedRoot === null) {
    const json = require('@google-cloud/bigtable/build/protos/protos.json') as protobuf.INamespace;
    // Resolved here, as proto-loader did: a reference the set cannot satisfy fails now, not at a call.
    cachedRoot = protobuf.Root.fromJSON(json).resolveAll() as protobuf.Root;
  }
  return cachedRoot;
}

export const DATA_SERVICE = 'google.bigtable.v2.Bigtable';
export const TABLE_ADMIN_SERVICE = 'google.bigtable.admin.v2.BigtableTableAdmin';
export const INSTANCE_ADMIN_SERVICE = 'google.bigtable.admin.v2.BigtableInstanceAdmin';

let cachedPackage: Record<string, ServiceDefinition> | null = null;

/** The three Bigtable services the server answers, by full name (wrapped as `serviceDefinition` wraps them). */
export function bigtablePackage(): Readonly<Record<string, ServiceDefinition>> {
  cachedPackage ??= Object.fromEntries(
    [DATA_SERVICE, TABLE_ADMIN_SERVICE, INSTANCE_ADMIN_SERVICE].map((name) => [name, serviceDefinition(bigtableRoot(), name)]),
  );
  return cachedPackage;
}

/** Marks a request the server could not decode; handlers answer INVALID_ARGUMENT. */
export class MalformedRequest {
  constructor(readonly reason: string) {}
}

/**
 * The grpc-js definition of service `name` (full name) in `root`: request deserializers never
 * throw, and response serializers pass pre-encoded Buffers through unchanged (the ReadRows
 * encoder builds its own bytes).
 */
export function serviceDefinition(root: protobuf.Root, name: string): ServiceDefinition {
  const service = root.lookup(name);
  if (!(service instanceof protobuf.Service)) throw new Error(`service ${name} not found in the descriptor set`);
  const out: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methodsArray) {
    method.resolve();
    const request = method.resolvedRequestType as protobuf.Type;
    const response = method.resolvedResponseType as protobuf.Type;
    out[method.name] = wrapMethod({
      path: `/${name}/${method.name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: serializer(request),
      requestDeserialize: deserializer(request),
      responseSerialize: serializer(response),
      responseDeserialize: deserializer(response),
      // grpc-js finds an implementation (and a generic client names its method) by this too.
      originalName: method.name.charAt(0).toLowerCase() + method.name.slice(1),
    });
  }
  return out as ServiceDefinition;
}

function serializer(type: protobuf.Type): (value: unknown) => Buffer {
  return (value) => {
    if (Array.isArray(value))
      throw new Error(`Failed to serialize message: expected object with ${type.name} structure, got array instead`);
    return type.encode(type.fromObject(value as Record<string, unknown>)).finish() as Buffer;
  };
}

function deserializer(type: protobuf.Type): (buf: Buffer) => unknown {
  return (buf) => type.toObject(type.decode(buf), LOADER_OPTIONS);
}

export function wrapMethod(def: MethodDefinition<unknown, unknown>): MethodDefinition<unknown, unknown> {
  const deserialize = def.requestDeserialize;
  const serialize = def.responseSerialize;
  return {
    ...def,
    requestDeserialize: (buf: Buffer): unknown => {
      try {
        return deserialize(buf);
      } catch (e) {
        return new MalformedRequest(e instanceof Error ? e.message : String(e));
      }
    },
    responseSerialize: (value: unknown): Buffer => (Buffer.isBuffer(value) ? value : serialize(value)),
  };
}

// ---------------------------------------------------------------------------------------------
// Decoded message shapes (only the fields the server reads). Everything is optional because of
// `defaults: false`; bytes are Buffers, int64 are decimal strings.

export interface WireRowRange {
  startKeyClosed?: Buffer;
  startKeyOpen?: Buffer;
  endKeyOpen?: Buffer;
  endKeyClosed?: Buffer;
}
export interface WireRowSet {
  rowKeys?: Buffer[];
  rowRanges?: WireRowRange[];
}
export interface WireTimestampRange {
  startTimestampMicros?: string;
  endTimestampMicros?: string;
}
export interface WireColumnRange {
  familyName?: string;
  startQualifierClosed?: Buffer;
  startQualifierOpen?: Buffer;
  endQualifierClosed?: Buffer;
  endQualifierOpen?: Buffer;
}
export interface WireValueRange {
  startValueClosed?: Buffer;
  startValueOpen?: Buffer;
  endValueClosed?: Buffer;
  endValueOpen?: Buffer;
}
export interface WireRowFilter {
  filter?: string;
  chain?: { filters?: WireRowFilter[] };
  interleave?: { filters?: WireRowFilter[] };
  condition?: { predicateFilter?: WireRowFilter; trueFilter?: WireRowFilter; falseFilter?: WireRowFilter };
  sink?: boolean;
  passAllFilter?: boolean;
  blockAllFilter?: boolean;
  rowKeyRegexFilter?: Buffer;
  rowSampleFilter?: number;
  familyNameRegexFilter?: string;
  columnQualifierRegexFilter?: Buffer;
  columnRangeFilter?: WireColumnRange;
  timestampRangeFilter?: WireTimestampRange;
  valueRegexFilter?: Buffer;
  valueRangeFilter?: WireValueRange;
  cellsPerRowOffsetFilter?: number;
  cellsPerRowLimitFilter?: number;
  cellsPerColumnLimitFilter?: number;
  stripValueTransformer?: boolean;
  applyLabelTransformer?: string;
}
export interface WireMutation {
  mutation?: string;
  setCell?: { familyName?: string; columnQualifier?: Buffer; timestampMicros?: string; value?: Buffer };
  addToCell?: unknown;
  mergeToCell?: unknown;
  deleteFromColumn?: { familyName?: string; columnQualifier?: Buffer; timeRange?: WireTimestampRange };
  deleteFromFamily?: { familyName?: string };
  deleteFromRow?: Record<string, never>;
}
export interface WireReadModifyWriteRule {
  familyName?: string;
  columnQualifier?: Buffer;
  rule?: string;
  appendValue?: Buffer;
  incrementAmount?: string;
}
export interface WireDuration {
  seconds?: string;
  nanos?: number;
}
export interface WireGcRule {
  rule?: string;
  maxNumVersions?: number;
  maxAge?: WireDuration;
  intersection?: { rules?: WireGcRule[] };
  union?: { rules?: WireGcRule[] };
}
export interface WireColumnFamily {
  gcRule?: WireGcRule;
  valueType?: unknown;
}
export interface WireTable {
  name?: string;
  columnFamilies?: Record<string, WireColumnFamily>;
  granularity?: string;
}

/** Fields every data-API request may carry to name its target. */
export interface WireTargeted {
  tableName?: string;
  authorizedViewName?: string;
  materializedViewName?: string;
  appProfileId?: string;
}
export interface ReadRowsRequest extends WireTargeted {
  rows?: WireRowSet;
  filter?: WireRowFilter;
  rowsLimit?: string;
  reversed?: boolean;
}
export interface MutateRowRequest extends WireTargeted {
  rowKey?: Buffer;
  mutations?: WireMutation[];
}
export interface MutateRowsRequest extends WireTargeted {
  entries?: { rowKey?: Buffer; mutations?: WireMutation[] }[];
}
export interface CheckAndMutateRowRequest extends WireTargeted {
  rowKey?: Buffer;
  predicateFilter?: WireRowFilter;
  trueMutations?: WireMutation[];
  falseMutations?: WireMutation[];
}
export interface ReadModifyWriteRowRequest extends WireTargeted {
  rowKey?: Buffer;
  rules?: WireReadModifyWriteRule[];
}
export type SampleRowKeysRequest = WireTargeted;
export interface PingAndWarmRequest {
  name?: string;
  appProfileId?: string;
}
