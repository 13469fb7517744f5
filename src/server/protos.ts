/**
 * The Cloud Bigtable v2 protos as grpc-js service definitions, loaded once with
 * @grpc/proto-loader from `@google-cloud/bigtable/build/protos/protos.json` (the compiled,
 * self-contained descriptor set shipped with the official client: data API, table admin,
 * instance admin and their google.* dependencies).
 *
 * Loader options (every handler relies on them):
 * - camelCase field names (`keepCase: false`), so messages line up with `src/store/types.ts`;
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
import * as protoLoader from '@grpc/proto-loader';

const require = createRequire(import.meta.url);

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: false,
  arrays: true,
  objects: false,
  oneofs: true,
};

let cached: protoLoader.PackageDefinition | null = null;

/** The package definition of every message and service in the client's descriptor set. */
export function bigtablePackage(): protoLoader.PackageDefinition {
  if (cached === null) {
    const json = require('@google-cloud/bigtable/build/protos/protos.json') as Parameters<typeof protoLoader.fromJSON>[0];
    cached = protoLoader.fromJSON(json, LOADER_OPTIONS);
  }
  return cached;
}

export const DATA_SERVICE = 'google.bigtable.v2.Bigtable';
export const TABLE_ADMIN_SERVICE = 'google.bigtable.admin.v2.BigtableTableAdmin';
export const INSTANCE_ADMIN_SERVICE = 'google.bigtable.admin.v2.BigtableInstanceAdmin';

/** Marks a request the server could not decode; handlers answer INVALID_ARGUMENT. */
export class MalformedRequest {
  constructor(readonly reason: string) {}
}

/**
 * A service definition whose request deserializers never throw, and whose response serializers
 * pass pre-encoded Buffers through unchanged (the ReadRows encoder builds its own bytes).
 */
export function serviceDefinition(packageDefinition: protoLoader.PackageDefinition, name: string): ServiceDefinition {
  const raw = packageDefinition[name];
  // Services are plain records of method definitions; message types carry a `format` field.
  if (raw === undefined || 'format' in raw) throw new Error(`service ${name} not found in the descriptor set`);
  const out: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [method, def] of Object.entries(raw as unknown as Record<string, MethodDefinition<unknown, unknown>>)) {
    out[method] = wrapMethod(def);
  }
  return out as ServiceDefinition;
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
