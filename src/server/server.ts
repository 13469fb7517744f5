/**
 * `startServer(options)`: everything `percolator serve` runs, in one process:
 * - gRPC (one port): `google.bigtable.v2.Bigtable`, the admin subset
 *   (`BigtableTableAdmin`, `BigtableInstanceAdmin`), `percolator.lock.v1.LockService` and
 *   `percolator.batch.v1.BatchService` (many CheckAndMutateRow in one call), all over one `Store`;
 * - the timestamp oracle (`startOracleServer`, framed TCP, its own port), its durable mark
 *   kept in the served store (`StoreMarkStore`, table `_percolator_oracle`); the store's one
 *   in-process oracle (txn/shared-oracle.ts), which a Percolator this process opens over the same
 *   store object shares;
 * - HTTP (own port): /healthz, /metrics, /status.json, the status page, and extra routes.
 *
 * Invariants:
 * - Binds 127.0.0.1 unless told otherwise; with `authToken`, every gRPC call (checked on the
 *   metadata, before its message is read) and every HTTP request except /healthz must carry
 *   the bearer token; the oracle port has no token (keep it on loopback or a private network).
 * - Messages above `maxMessageBytes` are refused with RESOURCE_EXHAUSTED; undecodable ones
 *   with INVALID_ARGUMENT; unexpected errors become INTERNAL and are logged. Nothing a client
 *   sends can crash the process.
 * - A start that fails (a port that cannot be bound: LISTEN_FAILED) closes what it opened — the
 *   gRPC server, the oracle server and the store's shared oracle, the HTTP server and its dashboard
 *   sampling, the rate timer, the lock service and the store it created — so the same call can be
 *   made again in this process; and a `file:` store it created in a missing or empty directory is
 *   removed again, with the directories it made (store/embedded/new-store-dir.ts); a store that was
 *   there is left as it was.
 * - An embedded store is marked shared (`AtomicRowsStore.markShared`: every Percolator of this
 *   process commits in two phases, since clients cannot see its in-memory commit locks) from
 *   before the gRPC port is bound until the gRPC server has stopped. The mark is synchronous and
 *   a commit chooses its protocol and takes its in-memory locks in one step, so the one-phase
 *   commits in flight at the mark are exactly those holding such locks: the port is bound only
 *   once they have ended (`MemLocks.settled`), so no client reads beside one. The gRPC server has
 *   stopped after tryShutdown's callback (no listener, every session closed) or forceShutdown
 *   (both at once: `close()` past its grace, a failed start's cleanup); then this server's share
 *   is released, and the store is unshared unless another holder (a second server, the checkers'
 *   IPC channel) still has one. Releasing then is safe: no read can reach a client any more (a
 *   cancelled call's handler may still finish a store call, but its answer goes nowhere), and
 *   what clients wrote — locks of commits they never finished included — is in the store as
 *   ordinary cells, which this process's readers see and resolve, and which veto a one-phase
 *   commit as they veto a prewrite.
 * - `close()` is graceful and idempotent: /healthz turns 503; new gRPC calls get UNAVAILABLE
 *   while in-flight calls run to their status (a ReadRows held back by a slow reader included);
 *   then GOAWAY and stop listening (all of it within `shutdownGraceMs`, after which the rest is
 *   cancelled); then the oracle and HTTP servers close, and finally the store is closed (flushed
 *   and synced) if the server opened it. An acknowledged write is durable before its OK is sent
 *   (Store contract), so even kill -9 loses no acknowledged write.
 *
 * Concurrency contract: single JS thread; calls are handled concurrently and their atomicity
 * is the store's. Ports: gRPC `port` (default 8086), HTTP `httpPort` (default port + 1),
 * oracle `oraclePort` (default port + 2); with port 0 the others default to 0 (ephemeral).
 */
import { Server, ServerCredentials, type ServiceDefinition, status, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { InProcessLockService } from '../notify/lock-service.js';
import { Liveness } from '../txn/liveness.js';
import { acquireOracle, releaseOracle } from '../txn/shared-oracle.js';
import { memLocksOf } from '../txn/mem-locks.js';
import { type OracleServer, startOracleServer } from '../oracle/server.js';
import { DEFAULT_STORE_URL, type OpenStoreOptions, fileStoreDir, openStore } from '../store/open-store.js';
import { type Store, type StoreCacheStats, atomicRowsOf } from '../store/store.js';
import type { StoreError } from '../store/errors.js';
import { instanceAdminService, tableAdminService } from './admin-service.js';
import { checkAndMutateRowHandler, dataService, pointReadsHandler } from './data-service.js';
import { checkServerOptions } from './server-options.js';
import { CallTracker, type Logger, serverInterceptor, shortMethodName } from './handlers.js';
import { type HttpRoute, type HttpStatusServer, startHttpStatus } from './http-status.js';
import { BATCH_SERVICE, batchServiceDefinition, batchServiceImplementation } from './batch-protocol.js';
import { LOCK_SERVICE, lockServiceDefinition, lockServiceImplementation } from './lock-protocol.js';
import { ServerMetrics } from './metrics.js';
import { bigtablePackage, DATA_SERVICE, INSTANCE_ADMIN_SERVICE, TABLE_ADMIN_SERVICE } from './protos.js';
import { DEFAULT_FLUSH_BYTES, DEFAULT_MAX_CHUNK_VALUE_BYTES } from './read-rows-encoder.js';
import { dashboardRoute } from './dashboard.js';

export const DEFAULT_PORT = 8086;
export const DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024;
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

export interface ServerOptions {
  /** Serve this open store (not closed by `close()`). */
  readonly store?: Store;
  /** Or open this URL (default `file:./percolator-data`); closed by `close()`. */
  readonly storeUrl?: string;
  readonly storeOptions?: OpenStoreOptions;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** gRPC port. Default 8086; 0 = ephemeral. */
  readonly port?: number;
  /** HTTP port; null = no HTTP server. Default port + 1 (0 when port is 0). */
  readonly httpPort?: number | null;
  /** Oracle port; null = no oracle. Default port + 2 (0 when port is 0). */
  readonly oraclePort?: number | null;
  /** Bearer token required on gRPC calls and HTTP requests (except /healthz). */
  readonly authToken?: string;
  /** Largest gRPC message received or sent. Default 256 MiB. */
  readonly maxMessageBytes?: number;
  /** Cell values above this are split into several ReadRows chunks. Default 1 MiB. */
  readonly maxChunkValueBytes?: number;
  /** How long `close()` lets in-flight calls finish before cancelling them. Default 10 s. */
  readonly shutdownGraceMs?: number;
  /** Extra HTTP routes (e.g. the web-index live page). */
  readonly httpExtraRoutes?: readonly HttpRoute[];
  /** One line per event (default: stderr with an ISO timestamp). */
  readonly log?: Logger;
  /** Serve this lock table (default: a fresh in-process one). */
  readonly lockService?: InProcessLockService;
}

export interface ServerStatus {
  readonly server: {
    readonly uptimeSeconds: number;
    readonly store: string;
    readonly grpc: string;
    readonly oracle: string | null;
    readonly shuttingDown: boolean;
    /** Why the store refuses writes (a failed write to a `file:` store: reopen it), or null. */
    readonly storeWriteFailure: string | null;
  };
  readonly grpc: {
    readonly requests: number;
    readonly errors: number;
    readonly cancelled: number;
    readonly inflight: number;
    readonly requestsPerSecond: number;
  };
  readonly rows: { readonly read: number; readonly written: number; readonly readPerSecond: number; readonly writtenPerSecond: number };
  readonly oracle: { readonly timestamps: number; readonly timestampsPerSecond: number; readonly connections: number } | null;
  readonly locks: { readonly held: number };
  /** The embedded store's row caches (StoreCacheStats); null for a store without them. */
  readonly storeCache: StoreCacheStats | null;
}

export interface PercolatorServer {
  readonly host: string;
  readonly port: number;
  readonly httpPort: number | null;
  readonly oraclePort: number | null;
  readonly store: Store;
  readonly metrics: ServerMetrics;
  readonly oracle: OracleServer | null;
  readonly http: HttpStatusServer | null;
  status(): ServerStatus;
  /** Graceful shutdown (see header). Idempotent. */
  close(): Promise<void>;
}

function defaultLog(line: string): void {
  process.stderr.write(`${new Date().toISOString()} percolator serve: ${line}\n`);
}

function grpcAddress(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * A port that cannot be bound (in use, not ours to take, no such address), whichever of the three:
 * LISTEN_FAILED naming the address, the port's role and the system's reason (the first cause in
 * the chain: the oracle server's own LISTEN_FAILED wraps it, HTTP gives it bare).
 */
function listenFailed(role: 'gRPC' | 'oracle' | 'HTTP', host: string, port: number, e: unknown): Error {
  const reason = e instanceof Error && e.cause instanceof Error ? e.cause : e;
  const message = reason instanceof Error ? reason.message : String(reason);
  return Object.assign(new Error(`cannot listen on ${grpcAddress(host, port)} (${role}): ${message}`), {
    code: 'LISTEN_FAILED',
    host,
    port,
    role,
    cause: e,
  });
}

/** Per-second rates from counters sampled once a second. */
class Rates {
  private last = new Map<string, { value: number; at: number }>();
  private rates = new Map<string, number>();
  sample(values: Record<string, number>): void {
    const now = performance.now();
    for (const [k, v] of Object.entries(values)) {
      const prev = this.last.get(k);
      if (prev !== undefined && now > prev.at) this.rates.set(k, ((v - prev.value) * 1000) / (now - prev.at));
      this.last.set(k, { value: v, at: now });
    }
  }
  get(k: string): number {
    return this.rates.get(k) ?? 0;
  }
}

export async function startServer(options: ServerOptions = {}): Promise<PercolatorServer> {
  checkServerOptions(options);
  const log = options.log ?? defaultLog;
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? DEFAULT_PORT;
  const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const started = performance.now();
  const ownsStore = options.store === undefined;
  const storeUrl = options.storeUrl ?? DEFAULT_STORE_URL;
  // A start that fails (a port in use) takes back a store it created: `serve --data NEWDIR` with its
  // port taken leaves no directory behind. Loaded on demand, as open-store.ts loads LevelDB.
  const storeDir = ownsStore ? fileStoreDir(storeUrl) : null;
  const fresh = storeDir === null ? null : await (await import('../store/embedded/new-store-dir.js')).noteNewStoreDir(storeDir);
  const store = options.store ?? (await openStore(storeUrl, options.storeOptions));
  const ownsLocks = options.lockService === undefined;
  const locks = options.lockService ?? new InProcessLockService(undefined, ownerGoneIn(store));

  let oracle: OracleServer | null = null;
  /** This server holds the store's in-process oracle (acquireOracle), to release after its oracle server closes. */
  let oracleHeld = false;
  let http: HttpStatusServer | null = null;
  let dashboard: ReturnType<typeof dashboardRoute> | null = null;
  let grpcServer: Server | null = null;
  let shuttingDown = false;
  let rateTimer: NodeJS.Timeout | null = null;

  const oracleStats = () => {
    if (oracle === null) return null;
    const s = oracle.stats();
    return { timestamps: s.timestamps, requests: s.requests, connections: s.connections };
  };
  const storeCache = (): StoreCacheStats | null => atomicRowsOf(store)?.cacheStats() ?? null;
  const metrics = new ServerMetrics({ oracle: oracleStats, locksHeld: () => locks.size, storeCache });
  const tracker = new CallTracker();
  const rates = new Rates();

  /**
   * A failed start closes everything it opened, as `close()` would, so a caller that catches the
   * error and starts again in this process finds the store free (its lock released) and nothing
   * left running. Each step on its own: one that fails must not keep the rest open, and the
   * start's own error is the one reported.
   */
  const cleanup = async (): Promise<void> => {
    const step = async (close: () => unknown): Promise<boolean> => {
      try {
        await close();
        return true;
      } catch {
        return false; // reported: the start's error
      }
    };
    if (rateTimer !== null) clearInterval(rateTimer);
    // forceShutdown stops listening and destroys every session at once: from then on nothing the
    // store holds reaches another process through this server, and the share can go (header).
    if (await step(() => grpcServer?.forceShutdown())) unshare?.();
    await step(() => oracle?.close());
    if (oracleHeld) await step(() => releaseOracle(store));
    await step(() => http?.close());
    await step(() => dashboard?.close());
    // The lock service this start created (2026-12-02: it was left open; `close()` closed it).
    if (ownsLocks) await step(() => locks.close());
    if (ownsStore) await step(() => store.close());
    await fresh?.undo();
  };

  // Clients in other processes cannot see this process's in-memory commit locks: from now on every
  // Percolator in this process commits in two phases on this store, until the gRPC server has
  // stopped (close(), or a failed start's cleanup) and this share is released (header).
  const unshare = atomicRowsOf(store)?.markShared() ?? null;
  try {
    // A one-phase commit that chose its protocol before the mark may still be in flight, its locks
    // in memory only: the port is bound once it has ended, so no client can read beside it.
    if (unshare !== null) await memLocksOf(store).settled();

    // --- gRPC -------------------------------------------------------------------------------
    grpcServer = new Server({
      'grpc.max_receive_message_length': maxMessageBytes,
      'grpc.max_send_message_length': maxMessageBytes,
      'grpc.keepalive_permit_without_calls': 1,
      interceptors: [serverInterceptor({ metrics, tracker, ...(options.authToken === undefined ? {} : { authToken: options.authToken }) })],
    });
    const ctx = {
      log,
      store,
      metrics,
      maxChunkValueBytes: options.maxChunkValueBytes ?? DEFAULT_MAX_CHUNK_VALUE_BYTES,
      flushBytes: DEFAULT_FLUSH_BYTES,
    };
    const pkg = bigtablePackage();
    const services: [string, ServiceDefinition, UntypedServiceImplementation][] = [
      [DATA_SERVICE, pkg[DATA_SERVICE] as ServiceDefinition, dataService(ctx)],
      [TABLE_ADMIN_SERVICE, pkg[TABLE_ADMIN_SERVICE] as ServiceDefinition, tableAdminService(ctx)],
      [INSTANCE_ADMIN_SERVICE, pkg[INSTANCE_ADMIN_SERVICE] as ServiceDefinition, instanceAdminService(ctx)],
      [LOCK_SERVICE, lockServiceDefinition(), lockServiceImplementation({ log, locks, metrics })],
      [
        BATCH_SERVICE,
        batchServiceDefinition(),
        batchServiceImplementation({ log, checkAndMutateRow: checkAndMutateRowHandler(ctx), pointReads: pointReadsHandler(ctx) }),
      ],
    ];
    const reported = new Set<string>();
    for (const [name, definition, impl] of services) {
      // Methods we do not implement answer UNIMPLEMENTED; each is logged once, so a client
      // that needs one is easy to spot.
      const full: UntypedServiceImplementation = {};
      for (const method of Object.keys(definition)) {
        full[method] =
          impl[method] ??
          ((call: { request?: unknown }, callback?: (err: unknown, res?: unknown) => void) => {
            const path = `${name}/${method}`;
            if (!reported.has(path)) {
              reported.add(path);
              log(`unimplemented method called: ${shortMethodName(`/${path}`)}`);
            }
            const err = { code: status.UNIMPLEMENTED, details: `${path} is not implemented by percolator serve` };
            if (typeof callback === 'function') callback(err, null);
            else (call as unknown as NodeJS.EventEmitter).emit('error', err);
          });
      }
      grpcServer.addService(definition, full);
    }
    const boundPort = await new Promise<number>((resolve, reject) => {
      (grpcServer as Server).bindAsync(grpcAddress(host, port), ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      );
    }).catch((e: unknown) => {
      throw listenFailed('gRPC', host, port, e);
    });

    // --- oracle -----------------------------------------------------------------------------
    const oraclePort = options.oraclePort === undefined ? (port === 0 ? 0 : port + 2) : options.oraclePort;
    if (oraclePort !== null) {
      // The store's one oracle in this process (shared-oracle.ts): a Percolator opened here over the
      // same store object (a library user's, beside the server) must draw from the oracle the server
      // serves — two oracles over one mark would hand out interleaved timestamps.
      const shared = await acquireOracle(store);
      oracleHeld = true;
      oracle = await startOracleServer({ host, port: oraclePort, oracle: shared }).catch((e: unknown) => {
        throw listenFailed('oracle', host, oraclePort, e);
      });
    }

    const writeFailure = (): StoreError | null => atomicRowsOf(store)?.writeFailure() ?? null;
    const status_ = (): ServerStatus => {
      const o = oracleStats();
      return {
        server: {
          uptimeSeconds: Math.round((performance.now() - started) / 1000),
          store: store.url,
          grpc: grpcAddress(host, boundPort),
          oracle: oracle === null ? null : grpcAddress(host, oracle.port),
          shuttingDown,
          storeWriteFailure: writeFailure()?.message ?? null,
        },
        grpc: {
          requests: metrics.totals.requests,
          errors: metrics.totals.errors,
          cancelled: metrics.totals.cancelled,
          inflight: metrics.totals.inflight,
          requestsPerSecond: rates.get('requests'),
        },
        rows: {
          read: metrics.totals.rowsRead,
          written: metrics.totals.rowsWritten,
          readPerSecond: rates.get('rowsRead'),
          writtenPerSecond: rates.get('rowsWritten'),
        },
        oracle: o === null ? null : { timestamps: o.timestamps, timestampsPerSecond: rates.get('timestamps'), connections: o.connections },
        locks: { held: locks.size },
        storeCache: storeCache(),
      };
    };
    // The operator hears of a refusal once, when it starts and when it ends: the calls it refuses
    // are answered with it, not logged one by one (handlers.ts logs only what is unexpected).
    let refusalLogged: string | null = null;
    const everySecond = () => {
      rates.sample({
        requests: metrics.totals.requests,
        rowsRead: metrics.totals.rowsRead,
        rowsWritten: metrics.totals.rowsWritten,
        timestamps: oracleStats()?.timestamps ?? 0,
      });
      const refusal = writeFailure()?.message ?? null;
      if (refusal !== refusalLogged) log(refusal === null ? 'the store takes writes again' : `the store refuses writes: ${refusal}`);
      refusalLogged = refusal;
    };
    everySecond();
    rateTimer = setInterval(everySecond, 1000);
    rateTimer.unref();

    // --- HTTP -------------------------------------------------------------------------------
    const httpPort = options.httpPort === undefined ? (port === 0 ? 0 : port + 1) : options.httpPort;
    if (httpPort !== null) {
      dashboard = dashboardRoute(status_);
      http = await startHttpStatus({
        host,
        port: httpPort,
        registry: metrics.registry,
        status: status_,
        unhealthy: () => {
          if (shuttingDown) return 'shutting down';
          const e = writeFailure();
          return e === null ? null : `the store refuses writes: ${e.message}`;
        },
        log,
        ...(options.authToken === undefined ? {} : { authToken: options.authToken }),
        extraRoutes: [dashboard.route, ...(options.httpExtraRoutes ?? [])],
      }).catch((e: unknown) => {
        throw listenFailed('HTTP', host, httpPort, e);
      });
    }

    const loopback = host === '127.0.0.1' || host === '::1' || host === 'localhost';
    if (!loopback && options.authToken === undefined) {
      log(`warning: listening on ${host} without --auth-token: anyone who can reach it can read and write every table`);
    }
    if (!loopback && oracle !== null) {
      log(`warning: the oracle port ${grpcAddress(host, oracle.port)} has no authentication; keep it on a private network`);
    }

    let closing: Promise<void> | null = null;
    const grace = options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
    const theGrpc = grpcServer;
    return {
      host,
      port: boundPort,
      httpPort: http?.port ?? null,
      oraclePort: oracle?.port ?? null,
      store,
      metrics,
      oracle,
      http,
      status: status_,
      close(): Promise<void> {
        closing ??= (async () => {
          shuttingDown = true;
          // 1. Drain: new calls get UNAVAILABLE while in-flight calls run to their status.
          //    (Closing the HTTP/2 sessions first would drop responses a slow reader has not
          //    consumed yet, so sessions are closed only once the calls are done.)
          // 2. tryShutdown: GOAWAY, wait for the streams to close, stop listening.
          // Both within `grace`; then whatever is left is cancelled.
          const deadline = performance.now() + grace;
          const timeLeft = () => Math.max(0, deadline - performance.now());
          let timer: NodeJS.Timeout | undefined;
          const expired = new Promise<'expired'>((resolve) => {
            timer = setTimeout(() => resolve('expired'), grace);
          });
          let outcome = await Promise.race([tracker.drain().then(() => 'drained' as const), expired]);
          if (outcome === 'drained') {
            // Let clients read the trailers of calls that just finished.
            await new Promise((r) => setTimeout(r, Math.min(100, timeLeft())));
            outcome = await Promise.race([new Promise<'drained'>((resolve) => theGrpc.tryShutdown(() => resolve('drained'))), expired]);
          }
          clearTimeout(timer);
          if (outcome === 'expired') {
            log(`shutdown: ${tracker.inflight} in-flight call(s) did not finish within ${grace} ms; cancelling them`);
            theGrpc.forceShutdown();
          }
          // The gRPC server has stopped (tryShutdown's callback: no listener, every session closed;
          // or forceShutdown: both at once): the store is this process's alone again (header).
          unshare?.();
          if (rateTimer !== null) clearInterval(rateTimer);
          await oracle?.close().catch((e: unknown) => log(`shutdown: oracle: ${(e as Error).message}`));
          if (oracleHeld) await releaseOracle(store).catch((e: unknown) => log(`shutdown: oracle: ${(e as Error).message}`));
          await http?.close().catch((e: unknown) => log(`shutdown: http: ${(e as Error).message}`));
          await dashboard?.close();
          if (ownsLocks) await locks.close();
          if (ownsStore) await store.close();
        })();
        return closing;
      },
    };
  } catch (e) {
    await cleanup();
    throw e;
  }
}

/**
 * Whether a lock owner is gone for good, for the lock service's takeovers: workers name their
 * locks after their process's liveness id (`<id>/<n>/<scanner or hint>`), and a process whose
 * lease lapsed, or that gave it up, is gone. Owners named otherwise are never taken for gone.
 */
function ownerGoneIn(store: Store): (owner: string) => Promise<boolean> {
  const liveness = new Liveness(store);
  return async (owner) => {
    const m = /^([0-9a-f]{24})\//.exec(owner);
    return m !== null && !(await liveness.isAlive(m[1] as string));
  };
}
