/**
 * Prometheus metrics of `percolator serve`, in a registry of their own (never prom-client's
 * global one), so several servers in one process (tests) do not collide.
 *
 * Metric names (all prefixed `percolator_`):
 *   grpc_requests_total{method,code}         calls finished, by method and gRPC status name
 *   grpc_request_duration_seconds{method}    call latency histogram (until the status is sent)
 *   grpc_inflight_requests                   calls started and not yet finished
 *   rows_read_total / cells_read_total       rows and cells sent by ReadRows
 *   rows_written_total                       row mutations applied (MutateRow(s), CheckAndMutate, RMW)
 *   bytes_read_total                         ReadRows response bytes
 *   oracle_timestamps_total / oracle_requests_total / oracle_connections   from the oracle server
 *   lock_requests_total{op,result}           network lock service
 *   locks_held                               advisory locks currently held
 *   store_row_cache_bytes / _budget_bytes / _rows   the embedded store's decoded row tier
 *   store_row_lookups_total{answered}        row lookups, by what answered them: decoded, encoded,
 *                                            absent (key filter) or engine (a read of LevelDB)
 * plus prom-client's default process metrics (CPU, memory, event-loop lag), collected once per
 * process and shared by every server's registry: each `collectDefaultMetrics` call starts a GC
 * observer and an event-loop-delay monitor that nothing stops, so a process starting servers again
 * and again (the tests, a library user retrying a failed start) piled them up.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { LOOKUP_ANSWERS, type StoreCacheStats } from '../store/store.js';

export interface ServerMetricSources {
  oracle?: () => { timestamps: number; requests: number; connections: number } | null;
  locksHeld?: () => number;
  /** The embedded store's row caches; null (or absent) for a store without them. */
  storeCache?: () => StoreCacheStats | null;
}

let processMetrics: Registry | null = null;

/** The process's default metrics (see the header), made on first use. */
function processRegistry(): Registry {
  if (processMetrics === null) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics, prefix: 'percolator_' });
  }
  return processMetrics;
}

export class ServerMetrics {
  /** What `/metrics` shows: this server's metrics, and the process's unless turned off. */
  readonly registry: Registry;
  readonly requests: Counter<'method' | 'code'>;
  readonly duration: Histogram<'method'>;
  readonly inflight: Gauge;
  readonly rowsRead: Counter;
  readonly cellsRead: Counter;
  readonly bytesRead: Counter;
  readonly rowsWritten: Counter;
  readonly lockRequests: Counter<'op' | 'result'>;
  /** Plain totals mirrored for the status page (cheaper than reading the registry). */
  /** `errors`: calls that ended with any status but OK and CANCELLED (a client that stopped reading, e.g. a scan's limit, is not an error of the server's); `cancelled`: those. */
  readonly totals = { requests: 0, errors: 0, cancelled: 0, rowsRead: 0, rowsWritten: 0, inflight: 0 };

  constructor(sources: ServerMetricSources = {}, defaultMetrics = true) {
    const own = new Registry();
    const registers = [own];
    this.requests = new Counter({
      name: 'percolator_grpc_requests_total',
      help: 'gRPC calls finished, by method and status code',
      labelNames: ['method', 'code'],
      registers,
    });
    this.duration = new Histogram({
      name: 'percolator_grpc_request_duration_seconds',
      help: 'gRPC call latency (until the status is sent)',
      labelNames: ['method'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.inflight = new Gauge({ name: 'percolator_grpc_inflight_requests', help: 'gRPC calls in progress', registers });
    this.rowsRead = new Counter({ name: 'percolator_rows_read_total', help: 'rows sent by ReadRows', registers });
    this.cellsRead = new Counter({ name: 'percolator_cells_read_total', help: 'cells sent by ReadRows', registers });
    this.bytesRead = new Counter({ name: 'percolator_bytes_read_total', help: 'ReadRows response bytes', registers });
    this.rowsWritten = new Counter({ name: 'percolator_rows_written_total', help: 'row mutations applied', registers });
    this.lockRequests = new Counter({
      name: 'percolator_lock_requests_total',
      help: 'lock service requests by operation and result',
      labelNames: ['op', 'result'],
      registers,
    });
    const oracle = sources.oracle;
    new Counter({
      name: 'percolator_oracle_timestamps_total',
      help: 'timestamps handed out by the oracle server',
      registers,
      collect() {
        const s = oracle?.();
        if (s) {
          this.reset();
          this.inc(s.timestamps);
        }
      },
    });
    new Counter({
      name: 'percolator_oracle_requests_total',
      help: 'oracle server requests',
      registers,
      collect() {
        const s = oracle?.();
        if (s) {
          this.reset();
          this.inc(s.requests);
        }
      },
    });
    new Gauge({
      name: 'percolator_oracle_connections',
      help: 'open oracle client connections',
      registers,
      collect() {
        this.set(oracle?.()?.connections ?? 0);
      },
    });
    const locksHeld = sources.locksHeld;
    new Gauge({
      name: 'percolator_locks_held',
      help: 'advisory row locks currently held (expired ones not counted)',
      registers,
      collect() {
        this.set(locksHeld?.() ?? 0);
      },
    });
    const storeCache = sources.storeCache;
    if (storeCache?.() != null) storeCacheMetrics(storeCache as () => StoreCacheStats, registers);
    this.registry = defaultMetrics ? Registry.merge([own, processRegistry()]) : own;
  }

  callStarted(): void {
    this.inflight.inc();
    this.totals.inflight++;
  }

  callFinished(method: string, code: string, seconds: number): void {
    this.inflight.dec();
    this.totals.inflight--;
    this.requests.inc({ method, code });
    this.duration.observe({ method }, seconds);
    this.totals.requests++;
    if (code === 'CANCELLED') this.totals.cancelled++;
    else if (code !== 'OK') this.totals.errors++;
  }

  addRowsRead(rows: number, cells: number, bytes: number): void {
    if (rows > 0) this.rowsRead.inc(rows);
    if (cells > 0) this.cellsRead.inc(cells);
    if (bytes > 0) this.bytesRead.inc(bytes);
    this.totals.rowsRead += rows;
  }

  addRowsWritten(rows: number): void {
    if (rows > 0) this.rowsWritten.inc(rows);
    this.totals.rowsWritten += rows;
  }
}

/** The row-cache metrics (see the header), read from `stats` at each scrape. */
function storeCacheMetrics(stats: () => StoreCacheStats, registers: Registry[]): void {
  for (const [name, help, pick] of [
    ['percolator_store_row_cache_bytes', 'heap charged to the decoded row cache', (s: StoreCacheStats) => s.decoded.bytes],
    [
      'percolator_store_row_cache_budget_bytes',
      'budget of the decoded row cache (serve --row-cache-mib)',
      (s: StoreCacheStats) => s.decoded.budgetBytes,
    ],
    ['percolator_store_row_cache_rows', 'row groups held decoded', (s: StoreCacheStats) => s.decoded.rows],
  ] as const) {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(pick(stats()));
      },
    });
  }
  new Counter({
    name: 'percolator_store_row_lookups_total',
    help: 'row lookups by what answered them: decoded or encoded cache tier, absent (key filter), engine (a LevelDB read)',
    labelNames: ['answered'],
    registers,
    collect() {
      const l = stats().lookups;
      this.reset();
      for (const answered of LOOKUP_ANSWERS) this.inc({ answered }, l[answered]);
    },
  });
}
