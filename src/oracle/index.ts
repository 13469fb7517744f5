/**
 * The timestamp oracle (Percolator §2.3): the in-process `Oracle`, the network server
 * (`startOracleServer`, hosted by `percolator serve` and `percolator oracle`), the batching
 * `OracleClient`, the durable mark stores, and the `TimestampSource` interface the transaction
 * layer takes (both `Oracle` and `OracleClient` implement it). See docs/oracle.md.
 */
export { OracleClient, type OracleClientOptions, type OracleClientStats } from './client.js';
export { isOracleError, OracleError, type OracleErrorCode } from './errors.js';
export {
  decodeMark,
  encodeMark,
  FileMarkStore,
  type FileMarkStoreOptions,
  type MarkStore,
  MemoryMarkStore,
  StoreMarkStore,
  type StoreMarkStoreOptions,
} from './mark-store.js';
export {
  DEFAULT_HOLDBACK_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_BATCH,
  DEFAULT_RESERVE_MICROS,
  Oracle,
  type OracleOptions,
  type OracleStats,
} from './oracle.js';
export { MAX_FRAME_BODY, PROTOCOL_VERSION } from './protocol.js';
export { type OracleServer, type OracleServerOptions, type OracleServerStats, startOracleServer } from './server.js';
export {
  type ActiveRegistration,
  type MicrosClock,
  type MillisClock,
  type TimestampRange,
  type TimestampSource,
  wallClockMicros,
} from './types.js';
