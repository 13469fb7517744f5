/**
 * The public API of `percolator`. Only what users need is exported here; everything else is the
 * core and may change.
 */

// Transactions (Percolator §2.2)
export { Percolator, type PercolatorOptions, type TransactionOptions } from './txn/percolator.js';
export { Snapshot, Transaction, type RowKey, type ScanRange, type Value, type ProtocolPoint } from './txn/transaction.js';
export type { ScannedRow } from './txn/snapshot-read.js';
export { TxnError, isTxnError, type TxnErrorCode } from './txn/errors.js';

// Observers and the worker (Percolator §2.4)
export { Worker, type WorkerOptions, type WorkerMetrics, type StopOptions, type StopResult } from './notify/worker.js';
export type { ObserverFn, ObserverContext } from './notify/observer.js';
export { ObserverAbandoned, ObserverFailure } from './notify/run-observer.js';
export { InProcessLockService, type LockService } from './notify/lock-service.js';
export type { QuiescenceOptions, PendingEvidence } from './txn/percolator.js';
export type { GcResult } from './txn/gc.js';

// The Bigtable-model store
export { openStore, DEFAULT_STORE_URL, type OpenStoreOptions } from './store/open-store.js';
export type { LevelEngineOptions } from './store/embedded/level-engine.js';
export { type Store, type StoreOptions, type StoreLimits, DEFAULT_LIMITS, collectRows } from './store/store.js';
export { StoreError, isStoreError, type StoreErrorCode } from './store/errors.js';
export type * from './store/types.js';

// The timestamp oracle (Percolator §2.3)
export { Oracle, type OracleOptions } from './oracle/oracle.js';
export { OracleClient, type OracleClientOptions } from './oracle/client.js';
export { startOracleServer, type OracleServer, type OracleServerOptions } from './oracle/server.js';
export { FileMarkStore, StoreMarkStore, MemoryMarkStore, type MarkStore } from './oracle/mark-store.js';
export { OracleError, isOracleError, type OracleErrorCode } from './oracle/errors.js';
export type { TimestampSource, ActiveRegistration } from './oracle/types.js';
/** What `getTimestamps(n)` resolves to (named apart from the store's filter `TimestampRange`). */
export type { TimestampRange as OracleTimestampRange } from './oracle/types.js';
