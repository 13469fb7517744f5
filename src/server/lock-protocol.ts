/**
 * The network advisory lock service (Percolator §2.4), served by `percolator serve` on its gRPC
 * port next to the Bigtable API, with the same bearer token. Schema (proto3):
 *
 *   package percolator.lock.v1;
 *   service LockService {
 *     rpc TryLock(TryLockRequest) returns (TryLockResponse);
 *     rpc Unlock(UnlockRequest) returns (UnlockResponse);
 *     rpc Batch(LockBatchRequest) returns (LockBatchResponse);   // since 2026-11-30
 *   }
 *   message TryLockRequest  { string key = 1; string owner = 2; uint32 ttl_ms = 3; }
 *   message TryLockResponse { bool acquired = 1; }
 *   message UnlockRequest   { string key = 1; string owner = 2; }
 *   message UnlockResponse  {}
 *   message LockOp          { string key = 1; string owner = 2; uint32 ttl_ms = 3; bool unlock = 4; }
 *   message LockBatchRequest  { repeated LockOp ops = 1; }
 *   message LockOpResult    { bool acquired = 1; uint32 code = 2; string message = 3; }
 *   message LockBatchResponse { repeated LockOpResult results = 1; }
 *
 * Semantics are `LockService`'s (src/notify/lock-service.ts): TryLock takes `key` for `owner`
 * for `ttl_ms` unless anyone (the owner included) holds it unexpired; Unlock releases it if
 * `owner` holds it. The server keeps no durable state: a restart frees every lock, which is
 * harmless because the locks are advisory (correctness comes from the ack column).
 *
 * Batch carries many of those calls (a worker's runners take and release rows together): each
 * op is a TryLock, or an Unlock when `unlock` is set, applied in the order given, each with its
 * own result — `acquired` for a TryLock, and a gRPC status `code` (0: OK) with its `message` for
 * an op that failed alone (INVALID_ARGUMENT) while the others went through.
 *
 * Limits (INVALID_ARGUMENT beyond them): key 1..MAX_KEY_BYTES UTF-8 bytes, owner
 * 1..MAX_OWNER_BYTES, ttl_ms 1..MAX_TTL_MS; a Batch holds at most MAX_BATCH_OPS ops (beyond it
 * the whole call fails).
 */
import type { ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import type { InProcessLockService } from '../notify/lock-service.js';
import { type HandlerContext, unary } from './handlers.js';
import type { ServerMetrics } from './metrics.js';
import { serviceDefinition } from './protos.js';
import { invalidArgument, translateError } from './status.js';

export const LOCK_SERVICE = 'percolator.lock.v1.LockService';
export const MAX_KEY_BYTES = 64 * 1024;
export const MAX_OWNER_BYTES = 1024;
export const MAX_TTL_MS = 3_600_000;
export const MAX_BATCH_OPS = 10_000;

/** The schema above as protobufjs JSON (field names camelCase, as the decoded objects have them). */
export const LOCK_PROTO_JSON = {
  nested: {
    percolator: {
      nested: {
        lock: {
          nested: {
            v1: {
              nested: {
                TryLockRequest: {
                  fields: { key: { type: 'string', id: 1 }, owner: { type: 'string', id: 2 }, ttlMs: { type: 'uint32', id: 3 } },
                },
                TryLockResponse: { fields: { acquired: { type: 'bool', id: 1 } } },
                UnlockRequest: { fields: { key: { type: 'string', id: 1 }, owner: { type: 'string', id: 2 } } },
                UnlockResponse: { fields: {} },
                LockOp: {
                  fields: {
                    key: { type: 'string', id: 1 },
                    owner: { type: 'string', id: 2 },
                    ttlMs: { type: 'uint32', id: 3 },
                    unlock: { type: 'bool', id: 4 },
                  },
                },
                LockBatchRequest: { fields: { ops: { rule: 'repeated', type: 'LockOp', id: 1 } } },
                LockOpResult: {
                  fields: { acquired: { type: 'bool', id: 1 }, code: { type: 'uint32', id: 2 }, message: { type: 'string', id: 3 } },
                },
                LockBatchResponse: { fields: { results: { rule: 'repeated', type: 'LockOpResult', id: 1 } } },
                LockService: {
                  methods: {
                    TryLock: { requestType: 'TryLockRequest', responseType: 'TryLockResponse' },
                    Unlock: { requestType: 'UnlockRequest', responseType: 'UnlockResponse' },
                    Batch: { requestType: 'LockBatchRequest', responseType: 'LockBatchResponse' },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
} as unknown as protobuf.INamespace;

let cached: ServiceDefinition | null = null;

/** The LockService definition (wrapped deserializers, as for the Bigtable services). */
export function lockServiceDefinition(): ServiceDefinition {
  // Its own root: a lock client (a worker) needs none of Bigtable's messages.
  cached ??= serviceDefinition(protobuf.Root.fromJSON(LOCK_PROTO_JSON), LOCK_SERVICE);
  return cached;
}

export interface TryLockRequest {
  key?: string;
  owner?: string;
  ttlMs?: number;
}
export interface UnlockRequest {
  key?: string;
  owner?: string;
}
export interface LockOp {
  key?: string;
  owner?: string;
  ttlMs?: number;
  unlock?: boolean;
}
export interface LockOpResult {
  acquired?: boolean;
  /** gRPC status code of an op that failed (absent or 0: OK). */
  code?: number;
  message?: string;
}

function checkKeyOwner(key: string | undefined, owner: string | undefined): { key: string; owner: string } {
  if (!key || Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) throw invalidArgument(`key must be 1..${MAX_KEY_BYTES} bytes`);
  if (!owner || Buffer.byteLength(owner, 'utf8') > MAX_OWNER_BYTES) throw invalidArgument(`owner must be 1..${MAX_OWNER_BYTES} bytes`);
  return { key, owner };
}

export function lockServiceImplementation(
  ctx: HandlerContext & { locks: InProcessLockService; metrics: ServerMetrics },
): UntypedServiceImplementation {
  const { locks, metrics } = ctx;
  const tryLock = async (req: TryLockRequest): Promise<boolean> => {
    const { key, owner } = checkKeyOwner(req.key, req.owner);
    const ttl = req.ttlMs ?? 0;
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL_MS) throw invalidArgument(`ttl_ms must be 1..${MAX_TTL_MS}`);
    const acquired = await locks.tryLockOrReclaim(key, owner, ttl);
    metrics.lockRequests.inc({ op: 'tryLock', result: acquired ? 'acquired' : 'held' });
    return acquired;
  };
  const unlock = async (req: UnlockRequest): Promise<void> => {
    const { key, owner } = checkKeyOwner(req.key, req.owner);
    await locks.unlock(key, owner);
    metrics.lockRequests.inc({ op: 'unlock', result: 'ok' });
  };
  return {
    TryLock: unary(ctx, 'TryLock', async (req: TryLockRequest) => ({ acquired: await tryLock(req) })),
    Unlock: unary(ctx, 'Unlock', async (req: UnlockRequest) => {
      await unlock(req);
      return {};
    }),
    Batch: unary(ctx, 'Batch', async (req: { ops?: LockOp[] }) => {
      const ops = req.ops ?? [];
      if (ops.length > MAX_BATCH_OPS) throw invalidArgument(`a Batch holds at most ${MAX_BATCH_OPS} ops, got ${ops.length}`);
      const results: LockOpResult[] = [];
      // In order: an unlock and a later tryLock of the same key meet as they were sent.
      for (const op of ops) {
        try {
          if (op.unlock === true) {
            await unlock(op);
            results.push({});
          } else results.push({ acquired: await tryLock(op) });
        } catch (e) {
          const t = translateError(e);
          if (t.unexpected)
            ctx.log(
              `Batch: unexpected error in a lock op (answered ${t.code}): ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
            );
          results.push({ code: t.code, message: t.details });
        }
      }
      return { results };
    }),
  };
}
