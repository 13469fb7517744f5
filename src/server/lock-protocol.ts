/**
 * The network advisory lock service (Percolator §2.4), served by `percolator serve` on its gRPC
 * port next to the Bigtable API, with the same bearer token. Schema (proto3):
 *
 *   package percolator.lock.v1;
 *   service LockService {
 *     rpc TryLock(TryLockRequest) returns (TryLockResponse);
 *     rpc Unlock(UnlockRequest) returns (UnlockResponse);
 *   }
 *   message TryLockRequest  { string key = 1; string owner = 2; uint32 ttl_ms = 3; }
 *   message TryLockResponse { bool acquired = 1; }
 *   message UnlockRequest   { string key = 1; string owner = 2; }
 *   message UnlockResponse  {}
 *
 * Semantics are `LockService`'s (src/notify/lock-service.ts): TryLock takes `key` for `owner`
 * for `ttl_ms` unless anyone (the owner included) holds it unexpired; Unlock releases it if
 * `owner` holds it. The server keeps no durable state: a restart frees every lock, which is
 * harmless because the locks are advisory (correctness comes from the ack column).
 *
 * Limits (INVALID_ARGUMENT beyond them): key 1..MAX_KEY_BYTES UTF-8 bytes, owner
 * 1..MAX_OWNER_BYTES, ttl_ms 1..MAX_TTL_MS.
 */
import type { ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { InProcessLockService } from '../notify/lock-service.js';
import { type HandlerContext, unary } from './handlers.js';
import type { ServerMetrics } from './metrics.js';
import { LOADER_OPTIONS, serviceDefinition } from './protos.js';
import { invalidArgument } from './status.js';

export const LOCK_SERVICE = 'percolator.lock.v1.LockService';
export const MAX_KEY_BYTES = 64 * 1024;
export const MAX_OWNER_BYTES = 1024;
export const MAX_TTL_MS = 3_600_000;

const LOCK_PROTO_JSON = {
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
                LockService: {
                  methods: {
                    TryLock: { requestType: 'TryLockRequest', responseType: 'TryLockResponse' },
                    Unlock: { requestType: 'UnlockRequest', responseType: 'UnlockResponse' },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
};

let cached: ServiceDefinition | null = null;

/** The LockService definition (wrapped deserializers, as for the Bigtable services). */
export function lockServiceDefinition(): ServiceDefinition {
  if (cached === null)
    cached = serviceDefinition(
      protoLoader.fromJSON(LOCK_PROTO_JSON as unknown as Parameters<typeof protoLoader.fromJSON>[0], LOADER_OPTIONS),
      LOCK_SERVICE,
    );
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

function checkKeyOwner(key: string | undefined, owner: string | undefined): { key: string; owner: string } {
  if (!key || Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) throw invalidArgument(`key must be 1..${MAX_KEY_BYTES} bytes`);
  if (!owner || Buffer.byteLength(owner, 'utf8') > MAX_OWNER_BYTES) throw invalidArgument(`owner must be 1..${MAX_OWNER_BYTES} bytes`);
  return { key, owner };
}

export function lockServiceImplementation(
  ctx: HandlerContext & { locks: InProcessLockService; metrics: ServerMetrics },
): UntypedServiceImplementation {
  const { locks, metrics } = ctx;
  return {
    TryLock: unary(ctx, 'TryLock', async (req: TryLockRequest) => {
      const { key, owner } = checkKeyOwner(req.key, req.owner);
      const ttl = req.ttlMs ?? 0;
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL_MS) throw invalidArgument(`ttl_ms must be 1..${MAX_TTL_MS}`);
      const acquired = await locks.tryLockOrReclaim(key, owner, ttl);
      metrics.lockRequests.inc({ op: 'tryLock', result: acquired ? 'acquired' : 'held' });
      return { acquired };
    }),
    Unlock: unary(ctx, 'Unlock', async (req: UnlockRequest) => {
      const { key, owner } = checkKeyOwner(req.key, req.owner);
      await locks.unlock(key, owner);
      metrics.lockRequests.inc({ op: 'unlock', result: 'ok' });
      return {};
    }),
  };
}
