/**
 * `google.bigtable.v2.Bigtable` over a `Store`: ReadRows, SampleRowKeys, MutateRow, MutateRows,
 * CheckAndMutateRow, ReadModifyWriteRow, PingAndWarm. (Change streams and SQL queries answer
 * UNIMPLEMENTED.)
 *
 * Invariants:
 * - A call is answered only after the store's promise settled: an OK for a write means the
 *   store acknowledged it, i.e. it is durable for durable backends (file:).
 * - Every request is validated field by field before the store sees it (`convert.ts`), and
 *   the store validates semantics before writing: a rejected request has written nothing
 *   (for MutateRows: per entry).
 * - ReadRows streams rows in the store's order with the CellChunk protocol
 *   (`read-rows-encoder.ts`), respecting flow control; a cancelled call stops the scan.
 * - MutateRows answers one status per entry, in entry order (index = position in the request),
 *   split across response messages of at most `MUTATE_ROWS_RESULTS_PER_MESSAGE` entries.
 *
 * Concurrency contract: handlers run concurrently on the one JS thread; atomicity and
 * serialization of row operations are the store's (see `Store`).
 */
import type { ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Store } from '../store/store.js';
import type { Bytes, MutateRowsEntry, Mutation, ReadRowsOptions } from '../store/types.js';
import {
  mutationsFromWire,
  parseInstanceName,
  parseTableName,
  rowFilterFromWire,
  rowSetFromWire,
  rowToWire,
  rowsLimitFromWire,
  ruleFromWire,
  type TableRef,
  type WireRowOut,
} from './convert.js';
import { type HandlerContext, serverStream, unary, writeWithBackpressure } from './handlers.js';
import type { ServerMetrics } from './metrics.js';
import type {
  CheckAndMutateRowRequest,
  MutateRowRequest,
  MutateRowsRequest,
  PingAndWarmRequest,
  ReadModifyWriteRowRequest,
  ReadRowsRequest,
  SampleRowKeysRequest,
  WireTargeted,
} from './protos.js';
import { ReadRowsEncoder } from './read-rows-encoder.js';
import { invalidArgument, rpcStatus, type TranslatedError, translateError, unimplemented } from './status.js';

const EMPTY: Bytes = new Uint8Array(0);

/** Cloud Bigtable's cap on the mutations of one MutateRows request (all entries together). */
export const MAX_MUTATIONS_PER_REQUEST = 100_000;
export const MUTATE_ROWS_RESULTS_PER_MESSAGE = 10_000;

export interface DataServiceContext extends HandlerContext {
  readonly store: Store;
  readonly metrics: ServerMetrics;
  /** Values longer than this are split into several CellChunks. */
  readonly maxChunkValueBytes: number;
  /** A ReadRowsResponse is cut once it holds this many bytes. */
  readonly flushBytes: number;
}

function target(req: WireTargeted): TableRef {
  if (req.authorizedViewName) throw unimplemented('authorized views are not supported by this server; use table_name');
  if (req.materializedViewName) throw unimplemented('materialized views are not supported by this server; use table_name');
  return parseTableName(req.tableName);
}

/** CheckAndMutateRow, shared with the batch service (batch-protocol.ts), whose entries are such requests. */
export function checkAndMutateRowHandler(ctx: Pick<DataServiceContext, 'store' | 'metrics'>) {
  const { store, metrics } = ctx;
  return async (req: CheckAndMutateRowRequest, durability: 'durable' | 'deferred' = 'durable'): Promise<{ predicateMatched: boolean }> => {
    const t = target(req);
    const trueMutations = mutationsFromWire(req.trueMutations, 'true_mutations');
    const falseMutations = mutationsFromWire(req.falseMutations, 'false_mutations');
    const predicateMatched = await store.checkAndMutateRow(t.table, req.rowKey ?? EMPTY, {
      ...(req.predicateFilter === undefined ? {} : { predicateFilter: rowFilterFromWire(req.predicateFilter, 'predicate_filter') }),
      trueMutations,
      falseMutations,
      ...(durability === 'deferred' ? { durability } : {}),
    });
    if ((predicateMatched ? trueMutations : falseMutations).length > 0) metrics.addRowsWritten(1);
    return { predicateMatched };
  };
}

function readRowsOptions(req: ReadRowsRequest): ReadRowsOptions {
  const rowsLimit = rowsLimitFromWire(req.rowsLimit);
  if (rowsLimit < 0) throw invalidArgument(`rows_limit must be ≥ 0, got ${rowsLimit}`);
  const rows = rowSetFromWire(req.rows);
  return {
    ...(rows === undefined ? {} : { rows }),
    ...(req.filter === undefined ? {} : { filter: rowFilterFromWire(req.filter) }),
    rowsLimit,
    reversed: req.reversed === true,
  };
}

/**
 * A ReadRows of point reads (row keys only, at least one), answered whole: the batch service's
 * ReadRowsMany entries (batch-protocol.ts).
 */
export function pointReadsHandler(ctx: Pick<DataServiceContext, 'store' | 'metrics'>) {
  const { store, metrics } = ctx;
  return async (req: ReadRowsRequest): Promise<WireRowOut[]> => {
    const t = target(req);
    if ((req.rows?.rowRanges?.length ?? 0) > 0 || (req.rows?.rowKeys?.length ?? 0) === 0) {
      throw invalidArgument('a ReadRowsMany entry reads row keys, at least one and no ranges (ReadRows scans)');
    }
    const out: WireRowOut[] = [];
    let cells = 0;
    let bytes = 0;
    for await (const row of store.readRows(t.table, readRowsOptions(req))) {
      out.push(rowToWire(row));
      cells += row.cells.length;
      for (const c of row.cells) bytes += c.value.byteLength;
    }
    metrics.addRowsRead(out.length, cells, bytes);
    return out;
  };
}

export function dataService(ctx: DataServiceContext): UntypedServiceImplementation {
  const { store, metrics } = ctx;

  async function readRows(req: ReadRowsRequest, call: ServerWritableStream<unknown, unknown>): Promise<void> {
    const t = target(req);
    // readRows validates eagerly and throws here for bad input (before anything is sent).
    const iterable = store.readRows(t.table, readRowsOptions(req));
    const it = iterable[Symbol.asyncIterator]();
    const enc = new ReadRowsEncoder(ctx.maxChunkValueBytes, ctx.flushBytes);
    let bytes = 0;
    let finished = false;
    let sinceYield = 0;
    try {
      for (;;) {
        if (call.cancelled) return;
        const next = await it.next();
        if (next.done) {
          finished = true;
          break;
        }
        enc.addRow(next.value);
        for (const msg of enc.takeReady()) {
          bytes += msg.byteLength;
          if (!(await writeWithBackpressure(call, msg))) return;
        }
        // Let timers and I/O of other calls run during long scans of a fast (in-memory) store.
        if (++sinceYield >= 1000) {
          sinceYield = 0;
          await new Promise<void>((r) => setImmediate(r));
        }
      }
      const last = enc.finish();
      if (last !== null) {
        bytes += last.byteLength;
        await writeWithBackpressure(call, last);
      }
    } finally {
      metrics.addRowsRead(enc.rows, enc.cells, bytes);
      if (!finished) await it.return?.(undefined)?.catch(() => undefined);
    }
  }

  async function sampleRowKeys(req: SampleRowKeysRequest, call: ServerWritableStream<unknown, unknown>): Promise<void> {
    const t = target(req);
    const samples = await store.sampleRowKeys(t.table);
    for (const s of samples) {
      if (
        !(await writeWithBackpressure(call, {
          rowKey: Buffer.from(s.key.buffer, s.key.byteOffset, s.key.byteLength),
          offsetBytes: String(s.offsetBytes),
        }))
      )
        return;
    }
  }

  async function mutateRow(req: MutateRowRequest): Promise<object> {
    const t = target(req);
    const mutations = mutationsFromWire(req.mutations, 'mutations');
    await store.mutateRow(t.table, req.rowKey ?? EMPTY, mutations);
    metrics.addRowsWritten(1);
    return {};
  }

  async function mutateRows(req: MutateRowsRequest, call: ServerWritableStream<unknown, unknown>): Promise<void> {
    const t = target(req);
    const entries = req.entries ?? [];
    if (entries.length === 0) throw invalidArgument('MutateRows needs at least one entry');
    let total = 0;
    for (const e of entries) total += e.mutations?.length ?? 0;
    if (total > MAX_MUTATIONS_PER_REQUEST) {
      throw invalidArgument(`MutateRows carries ${total} mutations; at most ${MAX_MUTATIONS_PER_REQUEST} are allowed per request`);
    }
    const results: (TranslatedError | null)[] = new Array<TranslatedError | null>(entries.length).fill(null);
    const valid: MutateRowsEntry[] = [];
    const validIndex: number[] = [];
    entries.forEach((e, i) => {
      let mutations: Mutation[];
      try {
        mutations = mutationsFromWire(e.mutations, `entries[${i}].mutations`);
      } catch (err) {
        results[i] = translateError(err);
        return;
      }
      valid.push({ key: e.rowKey ?? EMPTY, mutations });
      validIndex.push(i);
    });
    if (valid.length > 0) {
      const out = await store.mutateRows(t.table, valid);
      for (const r of out) if (r.error !== undefined) results[validIndex[r.index] as number] = translateError(r.error);
    }
    metrics.addRowsWritten(results.filter((r) => r === null).length);
    for (let start = 0; start < results.length; start += MUTATE_ROWS_RESULTS_PER_MESSAGE) {
      const slice = results.slice(start, start + MUTATE_ROWS_RESULTS_PER_MESSAGE);
      const message = { entries: slice.map((r, j) => ({ index: String(start + j), status: r === null ? { code: 0 } : rpcStatus(r) })) };
      if (!(await writeWithBackpressure(call, message))) return;
    }
  }

  const checkAndMutateRow = checkAndMutateRowHandler(ctx);

  async function readModifyWriteRow(req: ReadModifyWriteRowRequest): Promise<object> {
    const t = target(req);
    const rules = (req.rules ?? []).map((r, i) => ruleFromWire(r, `rules[${i}]`));
    const row = await store.readModifyWriteRow(t.table, req.rowKey ?? EMPTY, rules);
    metrics.addRowsWritten(1);
    return { row: rowToWire(row) };
  }

  async function pingAndWarm(req: PingAndWarmRequest): Promise<object> {
    parseInstanceName(req.name, 'name');
    return {};
  }

  return {
    ReadRows: serverStream(ctx, 'ReadRows', readRows),
    SampleRowKeys: serverStream(ctx, 'SampleRowKeys', sampleRowKeys),
    MutateRow: unary(ctx, 'MutateRow', mutateRow),
    MutateRows: serverStream(ctx, 'MutateRows', mutateRows),
    // The plain call is always durable (the unary wrapper's second argument is the gRPC call).
    CheckAndMutateRow: unary(ctx, 'CheckAndMutateRow', (req: CheckAndMutateRowRequest) => checkAndMutateRow(req)),
    ReadModifyWriteRow: unary(ctx, 'ReadModifyWriteRow', readModifyWriteRow),
    PingAndWarm: unary(ctx, 'PingAndWarm', pingAndWarm),
  };
}
