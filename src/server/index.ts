/**
 * `percolator serve` as a library: the Bigtable v2 gRPC server (data API + admin subset) over any
 * Store, with the timestamp oracle, the network lock service and the HTTP status endpoints.
 * See docs/server.md.
 */

export { LOCALITY_GROUPS_METADATA } from './admin-service.js';
export { type HttpRoute, type HttpStatusOptions, type HttpStatusServer, startHttpStatus } from './http-status.js';
export {
  LockServiceError,
  type LockServiceErrorCode,
  NetworkLockService,
  type NetworkLockServiceOptions,
  type NetworkLockServiceStats,
} from './lock-client.js';
export { LOCK_SERVICE, MAX_KEY_BYTES, MAX_OWNER_BYTES, MAX_TTL_MS } from './lock-protocol.js';
export { ServerMetrics } from './metrics.js';
export {
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_GRACE_MS,
  type PercolatorServer,
  type ServerOptions,
  type ServerStatus,
  startServer,
} from './server.js';
export { ERROR_CODE_METADATA, ERROR_DOMAIN } from './status.js';
