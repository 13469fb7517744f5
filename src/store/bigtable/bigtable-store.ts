/**
 * `bigtable://…`: the Store contract over the Cloud Bigtable v2 API, through the official
 * client's gapic layer. Works against `percolator serve`, Google's emulator and Cloud Bigtable
 * (docs/bigtable-backend.md).
 *
 * What this class adds on top of plain RPCs, so every backend behaves alike:
 * - Validation before anything is sent (table/family names, row key, value and mutation-count
 *   limits, families against the table's schema, filters, ranges), with the embedded store's
 *   error codes: bad input never leaves a partial write, whatever the server would do.
 * - Canonical cell order (servers may send families in any order).
 * - GC on read: the table's GC rules (cached from GetTable) become a server-side filter in front
 *   of every read filter and checkAndMutate predicate (gc-filter.ts), so collected cells are
 *   never visible even when the server collects lazily.
 * - Timestamp mapping (timestamps.ts) and client-side "server time" where required.
 * - Per-entry mutateRows results; batches of at most 100 000 mutations per request.
 * - sampleRowKeys ending with an empty-key sample.
 * - With `?emulator=1`, filters the emulator evaluates differently from the documentation are
 *   evaluated here instead (filter-translate.ts `emulatorUnsafe`).
 */
import { validateStoreOptions } from '../store-options.js';
import type { protos } from '@google-cloud/bigtable';
import { type Client, credentials, Metadata, makeGenericClientConstructor } from '@grpc/grpc-js';
import { batchServiceDefinition } from '../../server/batch-protocol.js';
import { asBuffer, bytesKey } from '../bytes.js';
import { CellRecord } from '../cells.js';
import { isStoreError, keyHex, StoreError } from '../errors.js';
import { type CompiledFilter, compileFilter } from '../filter/row-filter.js';
import { validateFilter } from '../filter/validate-filter.js';
import { DEFAULT_LIMITS, type Store, type StoreLimits, type StoreOptions } from '../store.js';
import type {
  Bytes,
  Cell,
  CheckAndMutateRequest,
  DropRowRangeRequest,
  FamilyModification,
  FamilySpec,
  MutateRowsEntry,
  MutateRowsResult,
  Mutation,
  ReadModifyWriteRule,
  ReadRowsOptions,
  Row,
  RowFilter,
  RowKeySample,
  RowSet,
  TableSpec,
  WriteOptions,
} from '../types.js';
import {
  validateCheckAndMutateRequest,
  validateDropRowRange,
  validateMutations,
  validateModifications,
  validateReadRowsOptions,
  validateRowKey,
  validateRules,
  isDeferredWrite,
  tableTypeError,
  validateTableName,
} from '../validate.js';
import { checkModifications, tableSpecFromProto, tableSpecToProto, validateTableSpec } from './admin-convert.js';
import { type BigtableClients, createClients, LOCAL_CHANNEL_OPTIONS } from './clients.js';
import { emulatorUnsafe, type ProtoRowFilter, toProtoFilter } from './filter-translate.js';
import { gcKeepFilter } from './gc-filter.js';
import { type BatchEntry, CheckAndMutateBatcher } from './check-and-mutate-batcher.js';
import { codeFromStatusDetails, isConnectionFailure, isRetryable, Status, statusToStoreError, toStoreError } from './grpc-errors.js';
import { KeyedMutex } from './keyed-mutex.js';
import { mutationBytes, type ProtoMutation, toProtoMutations, toProtoRules } from './mutations.js';
import { type ReadGroup, ReadRowBatcher } from './read-row-batcher.js';
import { ChunkMerger, remainingRowSet, rowSetToProto, sortCells } from './read-rows.js';
import { applyRules, columnKey, newestVersionsFilter, ruleColumns, setCellsOf, unchangedCondition } from './rmw-cas.js';
import { TimestampMapping, truncateToMillis } from './timestamps.js';
import { type BigtableUrl, localAuthToken, parseBigtableUrl } from './url.js';

/** Cloud Bigtable's cap on mutations in one MutateRows request (all entries together). */
export const MAX_MUTATIONS_PER_REQUEST = 100_000;
/** Our cap on the encoded size of one MutateRows request. */
export const MAX_REQUEST_BYTES = 64 * 1024 * 1024;
const READ_RETRIES = 5;
const MUTATE_RETRIES = 3;
/**
 * How often a request that may run twice is sent again after its connection failed (`resending`):
 * 20, 40, … 320 ms apart, ~0.6 s in all. A reset fails only the calls in flight and the next one
 * connects again, so one more send nearly always does; a server that is down still fails fast.
 */
const CONNECTION_RETRIES = 5;
const CAS_ATTEMPTS = 100;
/**
 * Call options for server-streaming calls, built fresh each time (gax adds routing headers to the
 * object it is given). Streams are never retried by gax: a retried ReadRows would restart from
 * its first row; we resume ourselves (`stream`). `reverseScans` sends the feature flag servers
 * demand before they serve reversed reads (google.bigtable.v2.FeatureFlags{reverse_scans: true}).
 */
function streamOptions(reverseScans: boolean, headers: Readonly<Record<string, string>>): Record<string, unknown> {
  const all = reverseScans ? { ...headers, 'bigtable-features': 'CAE=' } : headers;
  return {
    retryRequestOptions: { retries: 0, noResponseRetries: 0 },
    ...(Object.keys(all).length > 0 ? { otherArgs: { headers: { ...all } } } : {}),
  };
}

export interface BigtableStoreOptions extends StoreOptions {
  /** Request batching caps (tests lower them to exercise batching). */
  readonly maxMutationsPerRequest?: number;
  readonly maxRequestBytes?: number;
}

interface SchemaEntry {
  spec?: TableSpec;
  at: number;
  pending?: Promise<TableSpec>;
}

interface EntryStatus {
  readonly code: number;
  readonly message: string;
  readonly details: unknown;
}

interface PreparedEntry {
  readonly index: number;
  readonly key: Bytes;
  readonly mutations: ProtoMutation[];
  readonly count: number;
  readonly bytes: number;
  readonly idempotent: boolean;
}

const EMPTY_BYTES = new Uint8Array(0);

const mutationsBytes = (mutations: readonly Mutation[]): number => mutations.reduce((n, m) => n + mutationBytes(m), 0);

/**
 * A MutateRow to a local server rides in a CheckAndMutateRows batch (`mutateRow`) only up to this
 * many bytes of mutations: it carries them twice (both branches), which costs nothing for the
 * small writes that are most calls (notification clears, version GC) and would for bulk loads.
 * Writes with server-assigned timestamps go alone too: a MutateRow's own rules apply to them.
 */
const MAX_RIDING_MUTATION_BYTES = 16 * 1024;

/** A `google.bigtable.v2.Row` as the batch client decodes it. */
interface WireRow {
  readonly key?: Uint8Array | null;
  readonly families?:
    | readonly {
        readonly name?: string | null;
        readonly columns?:
          | readonly {
              readonly qualifier?: Uint8Array | null;
              readonly cells?:
                readonly { timestampMicros?: string | number | null; value?: Uint8Array | null; labels?: string[] | null }[] | null;
            }[]
          | null;
      }[]
    | null;
}
/** A ReadRowsMany entry's outcome. */
interface WireRowsEntry {
  readonly rows?: readonly WireRow[] | null;
  readonly status?: BatchEntry['status'];
}

type RawStream = (request: unknown, metadata: Metadata, options: Record<string, unknown>) => AsyncIterable<unknown> & { cancel(): void };

/** `percolator serve`'s extension: a family → locality group JSON map in request / response metadata. */
export const LOCALITY_GROUPS_METADATA = 'percolator-locality-groups';

type RawUnary = (
  request: unknown,
  metadata: Metadata,
  options: Record<string, unknown>,
  callback: (err: unknown, res: unknown) => void,
) => { on?: (event: 'metadata', fn: (md: Metadata) => void) => void } | undefined;

function withLocalityGroups(spec: TableSpec, json: string | undefined): TableSpec {
  if (json === undefined) return spec;
  let groups: unknown;
  try {
    groups = JSON.parse(json);
  } catch {
    return spec;
  }
  if (groups === null || typeof groups !== 'object') return spec;
  const families: Record<string, FamilySpec> = {};
  for (const [id, f] of Object.entries(spec.families)) {
    const g = (groups as Record<string, unknown>)[id];
    families[id] = typeof g === 'string' ? { ...f, localityGroup: g } : f;
  }
  return { families };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const TABLE_ID = /^[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,49}$/;

function combine(a: RowFilter | null | undefined, b: RowFilter | null | undefined): RowFilter | undefined {
  if (a && b) return { chain: [a, b] };
  return a ?? b ?? undefined;
}

/**
 * grpc-js's account of a connection it could not make (nothing listening, a name that does not
 * resolve, a port that does not speak HTTP/2): UNAVAILABLE, "No connection established. Last
 * error: …" (or gax's DEADLINE_EXCEEDED after its retries, readableMessage in grpc-errors.ts). It
 * names neither the store nor what to do, and the address only sometimes.
 */
const NO_CONNECTION = /No connection established|Failed to connect|ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH/;

function isUnreachable(err: StoreError): boolean {
  // details.url: said so already (an error that passes through `fail` twice).
  return err.code === 'IO_ERROR' && err.details.url === undefined && NO_CONNECTION.test(err.message);
}

/** The same error, saying which server was out of reach and what usually runs there. */
function unreachable(url: string, err: StoreError): StoreError {
  return new StoreError(
    'IO_ERROR',
    `cannot reach ${url}: ${err.message} (is a \`percolator serve\` listening there? give its gRPC port, the clientUrl of its listening line)`,
    { ...err.details, url },
    { cause: err },
  );
}

export class BigtableStore implements Store {
  readonly url: string;
  readonly config: BigtableUrl;
  private readonly clients: BigtableClients;
  readonly limits: StoreLimits;
  private readonly now: () => number;
  /** Stamps "server time" on our side (null: send -1 and let the server do it). */
  private readonly clientTime: (() => number) | null;
  private readonly ts: TimestampMapping;
  private readonly maxMutationsPerRequest: number;
  private readonly maxRequestBytes: number;
  private readonly schemas = new Map<string, SchemaEntry>();
  private dataStub: Promise<Record<string, RawUnary>> | null = null;
  private readonly rowLocks = new KeyedMutex();
  readonly pointReads: ReadRowBatcher;
  /** Conditional mutations to a local server, coalesced into its BatchService's calls. */
  readonly conditionalWrites = new CheckAndMutateBatcher(
    (requests, deferred) => this.batchCall<BatchEntry>('CheckAndMutateRows', requests, deferred),
    (request) => this.rawData('checkAndMutateRow', request) as Promise<{ predicateMatched?: boolean | null }>,
  );
  private batchClient: (Client & Record<string, RawUnary>) | null = null;
  private closed = false;
  /** `authorization` for a local server with a token (localAuthToken), else nothing. */
  private readonly authHeaders: Readonly<Record<string, string>>;

  private constructor(config: BigtableUrl, options: BigtableStoreOptions) {
    this.url = config.url;
    this.config = config;
    this.limits = Object.freeze({ ...DEFAULT_LIMITS, ...options.limits });
    this.now = options.nowMicros ?? (() => Date.now() * 1000);
    this.ts = new TimestampMapping(config.timestampScale, config.emulator || config.host === undefined);
    this.clientTime = options.nowMicros !== undefined || config.timestampScale !== 1 ? () => truncateToMillis(this.now()) : null;
    this.maxMutationsPerRequest = Math.min(options.maxMutationsPerRequest ?? MAX_MUTATIONS_PER_REQUEST, MAX_MUTATIONS_PER_REQUEST);
    this.maxRequestBytes = options.maxRequestBytes ?? MAX_REQUEST_BYTES;
    this.clients = createClients(config);
    const token = config.host !== undefined ? localAuthToken() : undefined;
    this.authHeaders = token === undefined ? {} : { authorization: `Bearer ${token}` };
    // Groups of reads in one call need a server with ReadRowsMany; the emulator's reads may be
    // filtered on this side (emulatorUnsafe), which only the per-group path does.
    this.pointReads = new ReadRowBatcher(
      (table, filter, keys) => this.multiGet(table, filter, keys),
      config.host !== undefined && !config.emulator ? (groups) => this.readGroups(groups) : undefined,
    );
  }

  /** Opens a store for a `bigtable://` URL (no request is made until the first operation). */
  static async open(url: string, options: BigtableStoreOptions = {}): Promise<BigtableStore> {
    const parsed = parseBigtableUrl(url);
    validateStoreOptions(options, url);
    return new BigtableStore(parsed, options);
  }

  // ------------------------------------------------------------------------------------------
  // Plumbing

  private checkOpen(): void {
    if (this.closed) throw new StoreError('STORE_CLOSED', `the store ${this.url} is closed`, { url: this.url });
  }

  private tableName(table: string): string {
    return `${this.clients.instanceName}/tables/${table}`;
  }

  /** A table name that cannot exist is simply not found (as in the embedded store); one that is not a string is INVALID_ARGUMENT. */
  private checkTableRef(table: string): void {
    if (typeof table !== 'string') throw tableTypeError(table);
    if (!TABLE_ID.test(table)) {
      throw new StoreError('TABLE_NOT_FOUND', `table ${JSON.stringify(table)} does not exist`, { table });
    }
  }

  private fail(e: unknown, context: Record<string, unknown>): StoreError {
    if (this.closed && !isStoreError(e))
      return new StoreError('STORE_CLOSED', `the store ${this.url} is closed`, { url: this.url }, { cause: e });
    const err = toStoreError(e, context);
    if (err.code === 'TABLE_NOT_FOUND' && typeof context.table === 'string') this.schemas.delete(context.table);
    return this.config.host !== undefined && isUnreachable(err) ? unreachable(this.url, err) : err;
  }

  private async call<T>(context: Record<string, unknown>, fn: () => Promise<T>): Promise<T> {
    this.checkOpen();
    try {
      return await fn();
    } catch (e) {
      throw this.fail(e, context);
    }
  }

  /**
   * `send` again after a connection failure (UNAVAILABLE: a reset, a dropped connection), up to
   * CONNECTION_RETRIES times; any other error, or the last failure, is thrown. Only for requests
   * that may run twice: reads, writes with explicit timestamps, conditional mutations whose caller
   * says so (`resendable`). Without it a reset failed every call it caught in flight, and a
   * transaction that spans resets — each of its calls short enough to fit between two — failed
   * whole whenever one of its calls was in flight at one (test/txn-resets.test.ts).
   */
  private async resending<T>(send: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await send();
      } catch (e) {
        if (this.closed || attempt > CONNECTION_RETRIES || !isConnectionFailure(e)) throw e;
      }
      await sleep(10 * 2 ** attempt);
    }
  }

  /** The table's schema, cached for `schemaCacheMs` (fresh = always ask the server). */
  private async schema(table: string, fresh = false): Promise<TableSpec> {
    this.checkTableRef(table);
    const e = this.schemas.get(table);
    if (!fresh && e?.spec !== undefined && Date.now() - e.at <= this.config.schemaCacheMs) return e.spec;
    if (!fresh && e?.pending !== undefined) return e.pending;
    const pending = this.call({ table }, () => this.resending(() => this.fetchSpec(table)));
    const entry: SchemaEntry = { ...(e?.spec !== undefined ? { spec: e.spec } : {}), at: e?.at ?? 0, pending };
    this.schemas.set(table, entry);
    try {
      const spec = await pending;
      if (this.schemas.get(table) === entry) this.schemas.set(table, { spec, at: Date.now() });
      return spec;
    } catch (err) {
      if (this.schemas.get(table) === entry) this.schemas.delete(table);
      throw err;
    }
  }

  /**
   * GetTable. On a local server the call also reads `percolator-locality-groups` from the
   * response metadata (`percolator serve` sends the families' locality groups there; Cloud
   * Bigtable has none), which needs the raw gRPC call: gax does not expose response metadata.
   */
  private async fetchSpec(table: string): Promise<TableSpec> {
    const request = { name: this.tableName(table), view: 'SCHEMA_VIEW' as const };
    if (this.config.host === undefined) {
      const [t] = await this.clients.admin.getTable(request);
      return tableSpecFromProto(t);
    }
    const stub = (await this.clients.admin.initialize()) as unknown as Record<string, RawUnary>;
    const getTable = stub.getTable;
    if (typeof getTable !== 'function') {
      const [t] = await this.clients.admin.getTable(request, this.unary());
      return tableSpecFromProto(t);
    }
    let groups: string | undefined;
    const t = await new Promise<protos.google.bigtable.admin.v2.ITable>((resolve, reject) => {
      const call = getTable.call(stub, request, this.callMetadata(), { deadline: Date.now() + 60_000 }, (err: unknown, res: unknown) =>
        err ? reject(err) : resolve(res as protos.google.bigtable.admin.v2.ITable),
      );
      call?.on?.('metadata', (md: Metadata) => {
        const v = md.get(LOCALITY_GROUPS_METADATA)[0];
        if (v !== undefined) groups = String(v);
      });
    });
    return withLocalityGroups(tableSpecFromProto(t), groups);
  }

  /** Call options carrying the families' locality groups to a local server (ignored elsewhere). */
  private localityOptions(families: Readonly<Record<string, FamilySpec>>): Record<string, unknown> | undefined {
    if (this.config.host === undefined) return undefined;
    const groups: Record<string, string> = {};
    for (const [id, f] of Object.entries(families)) {
      if (f?.localityGroup !== undefined && f.localityGroup !== 'default') groups[id] = f.localityGroup;
    }
    if (Object.keys(groups).length === 0) return this.unary();
    return this.unary({ otherArgs: { headers: { [LOCALITY_GROUPS_METADATA]: JSON.stringify(groups) } } });
  }

  /**
   * A unary data call straight on the gRPC stub, for a local server (`percolator serve` or the
   * emulator): the hot calls of the transaction protocol (MutateRow, CheckAndMutateRow) spend
   * about a third of their client CPU in gax's wrappers (retry, promise and option plumbing),
   * measured at ~6 800 vs ~10 500 MutateRow/s with 32 callers. No retries: a local server that
   * is down fails the call at once (IO_ERROR), as the gax path capped at two retries nearly does.
   */
  private async rawData(method: 'mutateRow' | 'checkAndMutateRow', request: object): Promise<unknown> {
    this.dataStub ??= this.clients.data.initialize() as unknown as Promise<Record<string, RawUnary>>;
    const stub = await this.dataStub;
    const fn = stub[method];
    if (typeof fn !== 'function') throw new StoreError('IO_ERROR', `the Bigtable client has no ${method} stub`, {});
    return new Promise((resolve, reject) => {
      fn.call(stub, request, this.callMetadata(), { deadline: Date.now() + 60_000 }, (err: unknown, res: unknown) =>
        err ? reject(err) : resolve(res),
      );
    });
  }

  /** One ReadRows call: its stream of responses. */
  private async readRowsCall(request: protos.google.bigtable.v2.IReadRowsRequest, reversed: boolean): Promise<AsyncIterable<unknown>> {
    return this.config.host !== undefined
      ? this.rawReadRows(request, reversed)
      : this.clients.data.readRows(request, streamOptions(reversed, this.authHeaders));
  }

  /**
   * ReadRows on the raw gRPC stub, for a local server: gax's streaming wrapper (retry-request, its
   * stream plumbing) cost a point read over loopback as much CPU as the call itself, and `stream`
   * does its own retrying. The reverse-scan feature flag goes as gax sends it.
   */
  private async rawReadRows(request: object, reversed: boolean): Promise<AsyncIterable<unknown> & { cancel(): void }> {
    this.dataStub ??= this.clients.data.initialize() as unknown as Promise<Record<string, RawUnary>>;
    const stub = (await this.dataStub) as unknown as Record<string, RawStream>;
    const fn = stub.readRows;
    if (typeof fn !== 'function') throw new StoreError('IO_ERROR', 'the Bigtable client has no readRows stub', {});
    const md = this.callMetadata();
    if (reversed) md.set('bigtable-features', 'CAE=');
    return fn.call(stub, request, md, {});
  }

  /** One call of `percolator serve`'s BatchService (src/server/batch-protocol.ts): its entries' outcomes. */
  private batchCall<E>(
    method: 'CheckAndMutateRows' | 'ReadRowsMany',
    requests: readonly object[],
    deferred = false,
  ): Promise<readonly E[]> {
    if (this.batchClient === null) {
      const BatchClient = makeGenericClientConstructor(batchServiceDefinition(), 'BatchService');
      this.batchClient = new BatchClient(this.config.host as string, credentials.createInsecure(), {
        ...LOCAL_CHANNEL_OPTIONS,
      }) as unknown as Client & Record<string, RawUnary>;
    }
    const client = this.batchClient;
    return new Promise((resolve, reject) => {
      const request = deferred ? { entries: requests, deferred } : { entries: requests };
      (client[method] as RawUnary).call(client, request, this.callMetadata(), { deadline: Date.now() + 60_000 }, (err, res) =>
        err ? reject(err) : resolve((res as { entries?: E[] } | null)?.entries ?? []),
      );
    });
  }

  /** Point reads of several tables and filters in one ReadRowsMany call (ReadRowBatcher). */
  private async readGroups(groups: readonly ReadGroup[]): Promise<({ rows: Map<string, Row> } | { error: unknown })[]> {
    this.checkOpen();
    const entries: object[] = [];
    for (const g of groups) {
      const gc = gcKeepFilter(await this.schema(g.table), this.now());
      const filter = combine(gc, g.filter);
      entries.push({
        tableName: this.tableName(g.table),
        ...(this.config.appProfileId !== undefined ? { appProfileId: this.config.appProfileId } : {}),
        ...(filter !== undefined ? { filter: this.protoFilter(filter) } : {}),
        rows: rowSetToProto({ rowKeys: g.keys }),
      });
    }
    const results = await this.batchCall<WireRowsEntry>('ReadRowsMany', entries);
    return results.map((r, i) => {
      const table = (groups[i] as ReadGroup).table;
      const st = r.status;
      if (st !== undefined && st !== null && (st.code ?? 0) !== 0) {
        const error = statusToStoreError(st.code as number, st.message ?? '', { table }, codeFromStatusDetails(st.details));
        return { error: this.fail(error, { table }) }; // fail: a table gone leaves the schema cache
      }
      const rows = new Map<string, Row>();
      for (const w of r.rows ?? []) {
        const row = this.rowFromWire(w);
        rows.set(bytesKey(row.key), row);
      }
      return { rows };
    });
  }

  /** A `google.bigtable.v2.Row` as decoded by the batch client (int64 as strings), in our terms. */
  private rowFromWire(w: WireRow): Row {
    const cells: Cell[] = [];
    for (const fam of w.families ?? []) {
      for (const col of fam.columns ?? []) {
        for (const c of col.cells ?? []) {
          cells.push(
            new CellRecord(
              fam.name ?? '',
              Buffer.from(col.qualifier ?? EMPTY_BYTES),
              this.ts.fromWire(String(c.timestampMicros ?? '0')),
              Buffer.from(c.value ?? EMPTY_BYTES),
              c.labels ?? [],
            ),
          );
        }
      }
    }
    return { key: Buffer.from(w.key ?? EMPTY_BYTES), cells: sortCells(cells) };
  }

  /**
   * Options for unary calls. Against a local server, gax's retries of UNAVAILABLE are capped so a
   * server that is down fails the call within about two seconds instead of after gax's 60–600 s
   * budgets meant for Cloud Bigtable.
   */
  private unary(extra?: { otherArgs?: { headers?: Record<string, string> } }): Record<string, unknown> | undefined {
    if (this.config.host === undefined) return extra;
    if (this.authHeaders.authorization === undefined) return { maxRetries: 2, ...extra };
    return { maxRetries: 2, ...extra, otherArgs: { ...extra?.otherArgs, headers: { ...extra?.otherArgs?.headers, ...this.authHeaders } } };
  }

  /** Metadata for a raw gRPC call: the token, if any. */
  private callMetadata(): Metadata {
    const md = new Metadata();
    for (const [k, v] of Object.entries(this.authHeaders)) md.set(k, v);
    return md;
  }

  private remember(table: string, spec: TableSpec): void {
    this.schemas.set(table, { spec, at: Date.now() });
  }

  /**
   * Runs `check` against the cached schema; on FAMILY_NOT_FOUND re-reads the schema once (another
   * client may have added the family) and checks again.
   */
  private async withSchema<T>(table: string, check: (spec: TableSpec) => T): Promise<{ spec: TableSpec; value: T }> {
    const spec = await this.schema(table);
    try {
      return { spec, value: check(spec) };
    } catch (e) {
      if (!isStoreError(e, 'FAMILY_NOT_FOUND')) throw e;
      const fresh = await this.schema(table, true);
      return { spec: fresh, value: check(fresh) };
    }
  }

  /** Extra rule for millisecond servers reached with timestampScale 1. */
  private checkMillis(mutations: readonly Mutation[], table: string, key: Bytes): void {
    if (!this.ts.requiresMillis) return;
    for (const m of mutations) {
      if ('setCell' in m && m.setCell.timestampMicros !== -1 && m.setCell.timestampMicros % 1000 !== 0) {
        throw new StoreError(
          'INVALID_TIMESTAMP',
          `setCell timestamp ${m.setCell.timestampMicros} is not a multiple of 1000: this server keeps milliseconds (use ?timestampScale=1000 to store microseconds)`,
          { table, row: keyHex(key), timestamp: m.setCell.timestampMicros },
        );
      }
    }
  }

  private checkMutations(spec: TableSpec, table: string, key: Bytes, mutations: readonly Mutation[], allowEmpty = false): void {
    validateMutations(mutations, spec, table, key, this.limits, allowEmpty);
    this.checkMillis(mutations, table, key);
  }

  /** Remembered per filter object (the transaction layer reuses one per column; ~1.4 µs each). */
  private protoFilter(f: RowFilter | undefined): ProtoRowFilter | undefined {
    if (f === undefined) return undefined;
    let p = this.protoFilters.get(f);
    if (p === undefined) this.protoFilters.set(f, (p = toProtoFilter(f, this.ts)));
    return p;
  }
  private readonly protoFilters = new WeakMap<RowFilter, ProtoRowFilter>();

  // ------------------------------------------------------------------------------------------
  // Admin

  async createTable(name: string, spec: TableSpec): Promise<void> {
    this.checkOpen();
    validateTableName(name);
    validateTableSpec(name, spec);
    await this.call({ table: name }, () =>
      this.clients.admin.createTable(
        { parent: this.clients.instanceName, tableId: name, table: tableSpecToProto(spec) },
        this.localityOptions(spec.families),
      ),
    );
    this.schemas.delete(name);
  }

  async deleteTable(name: string): Promise<void> {
    this.checkOpen();
    this.checkTableRef(name);
    try {
      await this.call({ table: name }, () => this.clients.admin.deleteTable({ name: this.tableName(name) }, this.unary()));
    } finally {
      this.schemas.delete(name);
    }
  }

  async listTables(): Promise<string[]> {
    const [tables] = await this.call({}, () =>
      this.clients.admin.listTables({ parent: this.clients.instanceName, view: 'NAME_ONLY' }, this.unary()),
    );
    const prefix = `${this.clients.instanceName}/tables/`;
    return tables
      .map((t) => t.name ?? '')
      .map((n) => (n.startsWith(prefix) ? n.slice(prefix.length) : n.slice(n.lastIndexOf('/') + 1)))
      .filter((n) => n !== '')
      .sort();
  }

  async getTable(name: string): Promise<TableSpec> {
    this.checkOpen();
    const spec = await this.schema(name, true);
    return structuredClone(spec);
  }

  async modifyColumnFamilies(name: string, modifications: readonly FamilyModification[]): Promise<TableSpec> {
    this.checkOpen();
    validateModifications(modifications, name);
    const current = await this.schema(name, true);
    const mods = checkModifications(name, current, modifications);
    if (mods.length === 0) return structuredClone(current);
    try {
      const created: Record<string, FamilySpec> = {};
      for (const m of modifications) if ('create' in m) created[m.id] = m.create;
      const [t] = await this.call({ table: name }, () =>
        this.clients.admin.modifyColumnFamilies({ name: this.tableName(name), modifications: mods }, this.localityOptions(created)),
      );
      // The response carries no locality groups: read the schema back on a local server.
      const spec = this.config.host !== undefined ? await this.call({ table: name }, () => this.fetchSpec(name)) : tableSpecFromProto(t);
      this.remember(name, spec);
      return structuredClone(spec);
    } catch (e) {
      this.schemas.delete(name);
      throw e;
    }
  }

  async dropRowRange(name: string, request: DropRowRangeRequest): Promise<void> {
    this.checkOpen();
    this.checkTableRef(name);
    const prefix = validateDropRowRange(request, name);
    const req: protos.google.bigtable.admin.v2.IDropRowRangeRequest =
      prefix === null
        ? { name: this.tableName(name), deleteAllDataFromTable: true }
        : { name: this.tableName(name), rowKeyPrefix: Buffer.from(asBuffer(prefix)) };
    await this.call({ table: name }, () => this.clients.admin.dropRowRange(req, this.unary()));
  }

  // ------------------------------------------------------------------------------------------
  // Reads

  async readRow(table: string, key: Bytes, filter?: RowFilter): Promise<Row | null> {
    this.checkOpen();
    this.checkTableRef(table);
    validateRowKey(key, this.limits, table);
    if (filter !== undefined) validateFilter(filter);
    return this.pointReads.read(table, key, filter);
  }

  /** One ReadRows for several point reads with the same filter (read-row-batcher.ts). */
  private async multiGet(table: string, filter: RowFilter | undefined, keys: readonly Bytes[]): Promise<Map<string, Row>> {
    const compiled = filter === undefined ? null : compileFilter(filter);
    const options: ReadRowsOptions = {
      rows: { rowKeys: keys },
      ...(filter !== undefined ? { filter } : {}),
      ...(keys.length === 1 ? { rowsLimit: 1 } : {}),
    };
    const out = new Map<string, Row>();
    for await (const row of this.scan(table, options, compiled)) out.set(bytesKey(row.key), row);
    return out;
  }

  readRows(table: string, options: ReadRowsOptions = {}): AsyncIterable<Row> {
    this.checkOpen();
    this.checkTableRef(table);
    // The row set before the filter, as the embedded store checks them: a request wrong in both
    // ways gets one code from every backend (INVALID_RANGE, not INVALID_REGEX / INVALID_FILTER).
    validateReadRowsOptions(options, table);
    const compiled = options.filter === undefined ? null : compileFilter(options.filter);
    const limit = options.rowsLimit ?? 0;
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw new StoreError('INVALID_ARGUMENT', `rowsLimit must be a non-negative integer, got ${limit}`, { table });
    return this.scan(table, options, compiled);
  }

  private async *scan(table: string, options: ReadRowsOptions, compiled: CompiledFilter | null): AsyncGenerator<Row> {
    this.checkOpen();
    const spec = await this.schema(table);
    const gc = gcKeepFilter(spec, this.now());
    const user = options.filter;
    const clientSide = user !== undefined && compiled !== null && this.config.emulator && emulatorUnsafe(user);
    const server = combine(gc, clientSide ? undefined : user);
    const limit = options.rowsLimit ?? 0;
    let count = 0;
    for await (const row of this.stream(table, server, options.rows, clientSide ? 0 : limit, options.reversed === true)) {
      let cells: readonly Cell[] = row.cells;
      if (clientSide) {
        cells = (compiled as CompiledFilter).apply(row.key, cells);
        if (cells.length === 0) continue;
      }
      if (limit > 0 && count >= limit) continue; // (a server past rows_limit: not ours to yield)
      yield cells === row.cells ? row : { key: row.key, cells };
      // With the limit applied by the server the stream ends right after its last row: leaving it
      // early would reset the stream, and a Node HTTP/2 server closes a connection whose client
      // resets streams faster than ~33 a second after a burst of ~1 000 (its rapid-reset
      // protection) — every point read of an existing row did. Only a client-side limit leaves.
      if (limit > 0 && ++count >= limit && clientSide) return;
    }
  }

  /** ReadRows with canonical cells, resuming after transient failures. */
  private async *stream(
    table: string,
    filter: RowFilter | undefined,
    rows: RowSet | undefined,
    limit: number,
    reversed: boolean,
  ): AsyncGenerator<Row> {
    const base = {
      tableName: this.tableName(table),
      ...(this.config.appProfileId !== undefined ? { appProfileId: this.config.appProfileId } : {}),
      ...(filter !== undefined ? { filter: this.protoFilter(filter) } : {}),
      ...(reversed ? { reversed: true } : {}),
    };
    let rowSet: protos.google.bigtable.v2.IRowSet | undefined = rowSetToProto(rows);
    let remaining = limit;
    let failures = 0;
    for (;;) {
      this.checkOpen();
      const request: protos.google.bigtable.v2.IReadRowsRequest = {
        ...base,
        ...(rowSet !== undefined ? { rows: rowSet } : {}),
        ...(remaining > 0 ? { rowsLimit: remaining } : {}),
      };
      let s: AsyncIterable<unknown> | undefined;
      const merger = new ChunkMerger(this.ts);
      let last: Uint8Array | null = null;
      try {
        s = await this.readRowsCall(request, reversed);
        for await (const resp of s as AsyncIterable<protos.google.bigtable.v2.IReadRowsResponse>) {
          for (const row of merger.push(resp.chunks)) {
            last = row.key;
            failures = 0;
            if (remaining > 0) remaining--;
            yield row;
          }
        }
        return;
      } catch (e) {
        const code = (e as { code?: unknown })?.code;
        if (this.closed || typeof code !== 'number' || !isRetryable(code) || ++failures > READ_RETRIES) throw this.fail(e, { table });
        await sleep(10 * 2 ** failures);
        if (last !== null) {
          const rest = remainingRowSet(rows, last, reversed, table);
          if (rest === null) return;
          rowSet = rest;
          rows = protoRowSetToOurs(rest); // keep trimming the remaining set on later failures
        }
        if (limit > 0 && remaining === 0) return;
      } finally {
        (s as { cancel?: () => void } | undefined)?.cancel?.();
      }
    }
  }

  async sampleRowKeys(table: string): Promise<RowKeySample[]> {
    this.checkOpen();
    this.checkTableRef(table);
    const out: RowKeySample[] = [];
    await this.call({ table }, async () => {
      const s = this.clients.data.sampleRowKeys(
        {
          tableName: this.tableName(table),
          ...(this.config.appProfileId !== undefined ? { appProfileId: this.config.appProfileId } : {}),
        },
        streamOptions(false, this.authHeaders),
      );
      for await (const r of s as AsyncIterable<protos.google.bigtable.v2.ISampleRowKeysResponse>) {
        out.push({ key: Buffer.from(r.rowKey ?? Buffer.alloc(0)), offsetBytes: Number(String(r.offsetBytes ?? 0)) });
      }
    });
    for (let i = 1; i < out.length; i++) {
      const prev = out[i - 1] as RowKeySample;
      if ((out[i] as RowKeySample).offsetBytes < prev.offsetBytes)
        out[i] = { key: (out[i] as RowKeySample).key, offsetBytes: prev.offsetBytes };
    }
    const last = out[out.length - 1];
    if (last === undefined || last.key.byteLength > 0) out.push({ key: new Uint8Array(0), offsetBytes: last?.offsetBytes ?? 0 });
    return out;
  }

  // ------------------------------------------------------------------------------------------
  // Writes

  async mutateRow(table: string, key: Bytes, mutations: readonly Mutation[], options?: WriteOptions): Promise<void> {
    this.checkOpen();
    this.checkTableRef(table);
    await this.schema(table);
    validateRowKey(key, this.limits, table);
    const deferred = isDeferredWrite(options, table);
    await this.withSchema(table, (spec) => this.checkMutations(spec, table, key, mutations));
    const muts = toProtoMutations(mutations, this.ts, this.clientTime);
    if (muts.length === 0) return;
    const request = {
      tableName: this.tableName(table),
      rowKey: Buffer.from(asBuffer(key)),
      mutations: muts,
      ...(this.config.appProfileId !== undefined ? { appProfileId: this.config.appProfileId } : {}),
    };
    if (this.config.host === undefined) {
      await this.call({ table, row: keyHex(key) }, () => this.clients.data.mutateRow(request, this.unary()));
      return;
    }
    const bytes = mutationsBytes(mutations);
    // Server-assigned timestamps would make a second send a second write; explicit ones the same one.
    const serverTime = muts.some((m) => m.setCell?.timestampMicros === '-1');
    const send =
      !this.ridesWrites() || bytes > MAX_RIDING_MUTATION_BYTES || serverTime
        ? () => this.rawData('mutateRow', request)
        : () => this.ride(request, bytes, deferred);
    await this.call({ table, row: keyHex(key) }, serverTime ? send : () => this.resending(send));
  }

  /**
   * A MutateRow request sent in the turn's CheckAndMutateRows call as an unconditional entry: the
   * same mutations whether or not the row has a cell, which is a MutateRow (atomic in its row,
   * durable before the reply unless `deferred`). Alone, or to a server without the batch service,
   * it goes as the MutateRow itself. `bytes`: what its mutations weigh (they travel twice).
   */
  private ride(
    request: { tableName: string; rowKey: Buffer; mutations: ProtoMutation[]; appProfileId?: string },
    bytes: number,
    deferred: boolean,
  ): Promise<unknown> {
    const { mutations, ...target } = request;
    return this.conditionalWrites.submit(
      { ...target, trueMutations: mutations, falseMutations: mutations },
      2 * bytes,
      () => this.rawData('mutateRow', request).then(() => ({})),
      deferred,
    );
  }

  async mutateRows(table: string, entries: readonly MutateRowsEntry[], options?: WriteOptions): Promise<MutateRowsResult[]> {
    this.checkOpen();
    this.checkTableRef(table);
    if (!Array.isArray(entries)) throw new StoreError('INVALID_ARGUMENT', 'entries must be an array', { table });
    const deferred = isDeferredWrite(options, table);
    let spec = await this.schema(table);
    const results: MutateRowsResult[] = entries.map((_, index) => ({ index }));
    let prepared: PreparedEntry[] = [];
    const check = (i: number, s: TableSpec): void => {
      const e = entries[i] as MutateRowsEntry;
      if (e === null || typeof e !== 'object') throw new StoreError('INVALID_MUTATION', 'an entry must be an object', { table, index: i });
      validateRowKey(e.key, this.limits, table);
      this.checkMutations(s, table, e.key, e.mutations);
    };
    let refreshed = false;
    for (let i = 0; i < entries.length; i++) {
      try {
        try {
          check(i, spec);
        } catch (e) {
          if (!isStoreError(e, 'FAMILY_NOT_FOUND') || refreshed) throw e;
          refreshed = true;
          spec = await this.schema(table, true);
          check(i, spec);
        }
      } catch (e) {
        if (!isStoreError(e)) throw e;
        results[i] = { index: i, error: e };
        continue;
      }
      const e = entries[i] as MutateRowsEntry;
      const mutations = toProtoMutations(e.mutations, this.ts, this.clientTime);
      if (mutations.length === 0) continue;
      let bytes = e.key.byteLength + 16;
      for (const m of e.mutations) bytes += mutationBytes(m);
      const idempotent = !mutations.some((m) => m.setCell?.timestampMicros === '-1');
      prepared.push({ index: i, key: e.key, mutations, count: mutations.length, bytes, idempotent });
    }
    if (this.ridesWrites() && prepared.length > 0) {
      prepared = await this.rideMutations(table, prepared, results, deferred);
    }
    // Batches of ≤ maxMutationsPerRequest mutations and ≤ maxRequestBytes, in input order.
    let batch: PreparedEntry[] = [];
    let count = 0;
    let bytes = 0;
    for (const p of prepared) {
      if (batch.length > 0 && (count + p.count > this.maxMutationsPerRequest || bytes + p.bytes > this.maxRequestBytes)) {
        await this.sendBatch(table, batch, results);
        batch = [];
        count = 0;
        bytes = 0;
      }
      batch.push(p);
      count += p.count;
      bytes += p.bytes;
    }
    if (batch.length > 0) await this.sendBatch(table, batch, results);
    return results;
  }

  /**
   * Whether plain writes ride in CheckAndMutateRows calls: to a local server that has (or may have)
   * the batch service. Not to the emulator, which never has it: its first writes would go as a
   * batch and then each alone, instead of as the MutateRows call they are.
   */
  private ridesWrites(): boolean {
    return this.config.host !== undefined && !this.config.emulator && this.conditionalWrites.batching;
  }

  /**
   * The small idempotent entries of a MutateRows to a local server, each sent as a MutateRow that
   * rides in the turn's CheckAndMutateRows call (`mutateRow`): with other writes in flight they
   * share calls instead of costing a streaming MutateRows call a table. Records their outcomes in
   * `results`; returns the entries left for MutateRows: the rest, and those that failed in a way
   * MutateRows retries (it sends them again).
   */
  private async rideMutations(
    table: string,
    prepared: readonly PreparedEntry[],
    results: MutateRowsResult[],
    deferred: boolean,
  ): Promise<PreparedEntry[]> {
    const left: PreparedEntry[] = [];
    const riding = prepared.filter((p) => {
      const ok = p.idempotent && p.bytes <= MAX_RIDING_MUTATION_BYTES;
      if (!ok) left.push(p);
      return ok;
    });
    const tableName = this.tableName(table);
    const app = this.config.appProfileId !== undefined ? { appProfileId: this.config.appProfileId } : {};
    const outcomes = await Promise.allSettled(
      riding.map((p) => this.ride({ tableName, rowKey: Buffer.from(asBuffer(p.key)), mutations: p.mutations, ...app }, p.bytes, deferred)),
    );
    for (let i = 0; i < riding.length; i++) {
      const o = outcomes[i] as PromiseSettledResult<unknown>;
      const p = riding[i] as PreparedEntry;
      if (o.status === 'fulfilled') {
        results[p.index] = { index: p.index };
        continue;
      }
      const code = (o.reason as { code?: unknown } | null)?.code;
      if (typeof code === 'number' && isRetryable(code) && !this.closed) {
        left.push(p);
        continue;
      }
      const error = this.fail(o.reason, { table, row: keyHex(p.key) });
      // As from a MutateRows call (sendBatch): the table gone or the store closed ends the call.
      if (error.code === 'TABLE_NOT_FOUND' || error.code === 'STORE_CLOSED') throw error;
      results[p.index] = { index: p.index, error };
    }
    return left.sort((a, b) => a.index - b.index);
  }

  private async sendBatch(table: string, batch: readonly PreparedEntry[], results: MutateRowsResult[]): Promise<void> {
    let pending = batch;
    for (let attempt = 0; pending.length > 0; attempt++) {
      this.checkOpen();
      const statuses = new Map<number, EntryStatus>();
      let callError: StoreError | undefined;
      let retryable = true;
      try {
        const s = this.clients.data.mutateRows(
          {
            tableName: this.tableName(table),
            entries: pending.map((p) => ({ rowKey: Buffer.from(asBuffer(p.key)), mutations: p.mutations })),
            ...(this.config.appProfileId !== undefined ? { appProfileId: this.config.appProfileId } : {}),
          },
          streamOptions(false, this.authHeaders),
        );
        for await (const resp of s as AsyncIterable<protos.google.bigtable.v2.IMutateRowsResponse>) {
          for (const e of resp.entries ?? []) {
            statuses.set(Number(String(e.index ?? 0)), {
              code: e.status?.code ?? 0,
              message: e.status?.message ?? '',
              details: e.status?.details,
            });
          }
        }
      } catch (e) {
        callError = this.fail(e, { table });
        if (callError.code === 'TABLE_NOT_FOUND' || callError.code === 'STORE_CLOSED') throw callError;
        const code = (e as { code?: unknown })?.code;
        retryable = typeof code === 'number' && isRetryable(code);
      }
      const mayRetry = retryable && attempt < MUTATE_RETRIES;
      pending = this.afterAttempt(pending, statuses, results, table, mayRetry, callError);
      if (pending.length > 0) await sleep(10 * 2 ** attempt);
    }
  }

  /**
   * Records the outcome of one MutateRows attempt; returns the entries worth retrying (transient
   * failures of idempotent entries). Entries without a status get `callError` (or IO_ERROR).
   */
  private afterAttempt(
    pending: readonly PreparedEntry[],
    statuses: ReadonlyMap<number, EntryStatus>,
    results: MutateRowsResult[],
    table: string,
    mayRetry: boolean,
    callError: StoreError | undefined,
  ): PreparedEntry[] {
    const retry: PreparedEntry[] = [];
    pending.forEach((p, i) => {
      const st = statuses.get(i);
      if (st !== undefined && st.code === Status.OK) {
        results[p.index] = { index: p.index };
        return;
      }
      if (mayRetry && p.idempotent && (st === undefined || isRetryable(st.code))) {
        retry.push(p);
        return;
      }
      const err =
        st === undefined
          ? (callError ?? new StoreError('IO_ERROR', 'the server did not report a status for this entry', { table, row: keyHex(p.key) }))
          : statusToStoreError(st.code, st.message, { table, row: keyHex(p.key) }, codeFromStatusDetails(st.details as never));
      results[p.index] = { index: p.index, error: err };
    });
    return retry;
  }

  async checkAndMutateRow(table: string, key: Bytes, request: CheckAndMutateRequest): Promise<boolean> {
    this.checkOpen();
    this.checkTableRef(table);
    await this.schema(table);
    validateRowKey(key, this.limits, table);
    validateCheckAndMutateRequest(request, table, key);
    const deferred = isDeferredWrite(request, table, true);
    const trueM = request.trueMutations ?? [];
    const falseM = request.falseMutations ?? [];
    const { spec } = await this.withSchema(table, (s) => {
      this.checkMutations(s, table, key, trueM, true);
      this.checkMutations(s, table, key, falseM, true);
    });
    if (request.predicateFilter !== undefined) validateFilter(request.predicateFilter);
    const predicate = combine(gcKeepFilter(spec, this.now()), request.predicateFilter);
    return this.conditional(
      table,
      key,
      predicate,
      toProtoMutations(trueM, this.ts, this.clientTime),
      toProtoMutations(falseM, this.ts, this.clientTime),
      mutationsBytes(trueM) + mutationsBytes(falseM),
      deferred,
      request.resendable === true,
    );
  }

  /** CheckAndMutateRow with a ready predicate (undefined = "the row has a cell"). */
  private async conditional(
    table: string,
    key: Bytes,
    predicate: RowFilter | undefined,
    trueMutations: ProtoMutation[],
    falseMutations: ProtoMutation[],
    /** About what the mutations weigh (`mutationBytes`): batched calls stay under a byte cap. */
    bytes: number,
    /** May be answered before durable (`percolator serve` only: check-and-mutate-batcher.ts). */
    deferred = false,
    /** May be sent again after a connection failure (CheckAndMutateRequest.resendable). */
    resendable = false,
  ): Promise<boolean> {
    if (trueMutations.length === 0 && falseMutations.length === 0) {
      // Nothing to write (the API demands at least one mutation): just evaluate the predicate.
      for await (const _ of this.stream(table, predicate, { rowKeys: [key] }, 1, false)) return true;
      return false;
    }
    const request = {
      tableName: this.tableName(table),
      rowKey: Buffer.from(asBuffer(key)),
      ...(predicate !== undefined ? { predicateFilter: this.protoFilter(predicate) } : {}),
      trueMutations,
      falseMutations,
      ...(this.config.appProfileId !== undefined ? { appProfileId: this.config.appProfileId } : {}),
    };
    const send =
      this.config.host !== undefined
        ? () => this.conditionalWrites.submit(request, bytes, undefined, deferred && !this.config.emulator)
        : async () => (await this.clients.data.checkAndMutateRow(request, this.unary()))[0];
    const resp = await this.call({ table, row: keyHex(key) }, resendable ? () => this.resending(send) : send);
    return resp.predicateMatched === true;
  }

  async readModifyWriteRow(table: string, key: Bytes, rules: readonly ReadModifyWriteRule[]): Promise<Row> {
    this.checkOpen();
    this.checkTableRef(table);
    await this.schema(table);
    validateRowKey(key, this.limits, table);
    await this.withSchema(table, (s) => validateRules(rules, s, table, key, this.limits));
    if (this.clientTime === null) return this.nativeReadModifyWrite(table, key, rules);
    return this.rowLocks.run(`${table}\u0000${bytesKey(key)}`, () => this.casReadModifyWrite(table, key, rules));
  }

  private async nativeReadModifyWrite(table: string, key: Bytes, rules: readonly ReadModifyWriteRule[]): Promise<Row> {
    const [resp] = await this.call({ table, row: keyHex(key) }, () =>
      this.clients.data.readModifyWriteRow(
        {
          tableName: this.tableName(table),
          rowKey: Buffer.from(asBuffer(key)),
          rules: toProtoRules(rules),
          ...(this.config.appProfileId !== undefined ? { appProfileId: this.config.appProfileId } : {}),
        },
        this.unary(),
      ),
    );
    const cells: Cell[] = [];
    for (const fam of resp.row?.families ?? []) {
      for (const col of fam.columns ?? []) {
        for (const c of col.cells ?? []) {
          cells.push(
            new CellRecord(
              fam.name ?? '',
              Buffer.from(col.qualifier ?? Buffer.alloc(0)),
              this.ts.fromWire(c.timestampMicros as string),
              Buffer.from(c.value ?? Buffer.alloc(0)),
            ),
          );
        }
      }
    }
    return { key: Buffer.from(resp.row?.key ?? asBuffer(key)), cells: sortCells(cells) };
  }

  private async casReadModifyWrite(table: string, key: Bytes, rules: readonly ReadModifyWriteRule[]): Promise<Row> {
    const cols = ruleColumns(rules);
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const spec = await this.schema(table);
      const gc = gcKeepFilter(spec, this.now());
      const latest = new Map<string, Cell>();
      for await (const row of this.stream(table, combine(gc, newestVersionsFilter(cols)), { rowKeys: [key] }, 1, false)) {
        for (const c of row.cells) {
          const k = columnKey(c.family, c.qualifier);
          if (!latest.has(k)) latest.set(k, c);
        }
      }
      const touched = applyRules(rules, latest, (this.clientTime as () => number)(), table, key);
      const cond = unchangedCondition(cols, latest);
      const sets = setCellsOf(touched.values());
      const writes = toProtoMutations(sets, this.ts, null);
      const matched = await this.conditional(
        table,
        key,
        combine(gc, cond.predicate),
        cond.writeWhen ? writes : [],
        cond.writeWhen ? [] : writes,
        mutationsBytes(sets),
      );
      if (matched === cond.writeWhen) return { key, cells: sortCells([...touched.values()]) };
      await sleep(Math.min(50, 1 + attempt * 2) * Math.random());
    }
    throw new StoreError('IO_ERROR', `readModifyWriteRow gave up after ${CAS_ATTEMPTS} conflicting attempts`, { table, row: keyHex(key) });
  }

  // ------------------------------------------------------------------------------------------

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.schemas.clear();
    this.batchClient?.close();
    await this.clients.close();
  }
}

/** Our RowSet view of a proto row set (used when resuming). */
function protoRowSetToOurs(p: protos.google.bigtable.v2.IRowSet): RowSet {
  const b = (x: Uint8Array | string | null | undefined): Uint8Array | undefined =>
    x === null || x === undefined ? undefined : typeof x === 'string' ? Buffer.from(x, 'base64') : x;
  return {
    rowKeys: (p.rowKeys ?? []).map((k) => b(k) as Uint8Array),
    rowRanges: (p.rowRanges ?? []).map((r) => {
      const out: { startKeyClosed?: Uint8Array; startKeyOpen?: Uint8Array; endKeyClosed?: Uint8Array; endKeyOpen?: Uint8Array } = {};
      const sc = b(r.startKeyClosed);
      const so = b(r.startKeyOpen);
      const ec = b(r.endKeyClosed);
      const eo = b(r.endKeyOpen);
      if (sc) out.startKeyClosed = sc;
      if (so) out.startKeyOpen = so;
      if (ec) out.endKeyClosed = ec;
      if (eo) out.endKeyOpen = eo;
      return out;
    }),
  };
}
