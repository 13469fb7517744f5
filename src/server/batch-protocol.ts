/**
 * Batched conditional mutations (Percolator §2.2: "batching of conditional mutations") and
 * batched point reads, served by `percolator serve` on its gRPC port next to the Bigtable API.
 * Cloud Bigtable's v2 API has one conditional mutation per call and one table and filter per
 * ReadRows, and over a network a transaction's prewrites and secondary commits are one
 * CheckAndMutateRow each, its reads one ReadRows a column: most of what a transaction costs both
 * ends is gRPC's work per call, not the store's per row. This service takes many in one call.
 * Schema (proto3):
 *
 *   package percolator.batch.v1;
 *   service BatchService {
 *     rpc CheckAndMutateRows(CheckAndMutateRowsRequest) returns (CheckAndMutateRowsResponse);
 *     rpc ReadRowsMany(ReadRowsManyRequest) returns (ReadRowsManyResponse);
 *   }
 *   message CheckAndMutateRowsRequest {
 *     repeated google.bigtable.v2.CheckAndMutateRowRequest entries = 1;
 *     bool deferred = 2;   // since 2026-11-30 (seventh session)
 *   }
 *   message CheckAndMutateRowsResponse {
 *     message Entry { bool predicate_matched = 1; google.rpc.Status status = 2; }
 *     repeated Entry entries = 1;   // one per request entry, in request order
 *   }
 *   message ReadRowsManyRequest  { repeated google.bigtable.v2.ReadRowsRequest entries = 1; }
 *   message ReadRowsManyResponse {
 *     message Entry { repeated google.bigtable.v2.Row rows = 1; google.rpc.Status status = 2; }
 *     repeated Entry entries = 1;   // one per request entry, in request order
 *   }
 *
 * Semantics: each CheckAndMutateRows entry is exactly a CheckAndMutateRow call — validated,
 * atomic within its row, durable before the response is sent — and entries are independent, as
 * MutateRows entries are: one failing (its `status` set, with the stable code in a
 * `google.rpc.ErrorInfo` detail as MutateRows gives) leaves the others applied. Entries run concurrently, so two entries for one
 * row are applied in either order (as two calls in flight at once would be). A request that cannot
 * be decoded, or breaks the limits below, fails as a whole with INVALID_ARGUMENT and writes nothing.
 *
 * `deferred` relaxes "durable before the response" for every entry of the call to the store's
 * deferred durability (`WriteOptions`): applied and visible to every reader when answered, durable
 * with the server's next group commit, and at the latest before any durable write acknowledged
 * after this answer. The server's engine keeps one sequential log, so a crash keeps a prefix of
 * the writes: a deferred write is lost only with everything after it that was not durable. It is
 * what a Percolator client asks for its locks, its secondary commits and its observers' commits,
 * exactly what it defers on an embedded store (docs/transactions.md › *Durability*).
 *
 * Each ReadRowsMany entry is a ReadRows of point reads — its row set names row keys only (an
 * entry with ranges fails with INVALID_ARGUMENT) — answered whole: its rows in the order ReadRows
 * would stream them, each read atomically, as `Row` messages (families, columns, cells newest
 * first, labels kept). Point reads of many tables and filters then cost one call, where ReadRows
 * takes one table and one filter.
 *
 * Limits: at most MAX_BATCH_ENTRIES entries; for CheckAndMutateRows MAX_MUTATIONS_PER_REQUEST
 * mutations in all (Cloud Bigtable's cap for one MutateRows request), for ReadRowsMany
 * MAX_BATCH_ENTRIES row keys in all.
 *
 * Clients find out whether a server has it by calling it: the emulator and Cloud Bigtable answer
 * UNIMPLEMENTED, and the client goes back to one call per entry (src/store/bigtable:
 * check-and-mutate-batcher.ts, read-row-batcher.ts).
 */
import type { ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import { MAX_MUTATIONS_PER_REQUEST } from './data-service.js';
import { type HandlerContext, unary } from './handlers.js';
import type { WireRowOut } from './convert.js';
import { type CheckAndMutateRowRequest, type ReadRowsRequest, bigtableRoot, serviceDefinition } from './protos.js';
import { invalidArgument, rpcStatus, translateError } from './status.js';

export const BATCH_SERVICE = 'percolator.batch.v1.BatchService';
export const MAX_BATCH_ENTRIES = 10_000;

const BATCH_V1 = {
  CheckAndMutateRowsRequest: {
    fields: {
      entries: { rule: 'repeated', type: '.google.bigtable.v2.CheckAndMutateRowRequest', id: 1 },
      deferred: { type: 'bool', id: 2 },
    },
  },
  CheckAndMutateRowsResponse: {
    fields: { entries: { rule: 'repeated', type: 'Entry', id: 1 } },
    nested: {
      Entry: { fields: { predicateMatched: { type: 'bool', id: 1 }, status: { type: '.google.rpc.Status', id: 2 } } },
    },
  },
  ReadRowsManyRequest: {
    fields: { entries: { rule: 'repeated', type: '.google.bigtable.v2.ReadRowsRequest', id: 1 } },
  },
  ReadRowsManyResponse: {
    fields: { entries: { rule: 'repeated', type: 'Entry', id: 1 } },
    nested: {
      Entry: {
        fields: { rows: { rule: 'repeated', type: '.google.bigtable.v2.Row', id: 1 }, status: { type: '.google.rpc.Status', id: 2 } },
      },
    },
  },
  BatchService: {
    methods: {
      CheckAndMutateRows: { requestType: 'CheckAndMutateRowsRequest', responseType: 'CheckAndMutateRowsResponse' },
      ReadRowsMany: { requestType: 'ReadRowsManyRequest', responseType: 'ReadRowsManyResponse' },
    },
  },
};

let cached: ServiceDefinition | null = null;

/** The BatchService definition (wrapped deserializers, as for the Bigtable services); its messages embed Bigtable's. */
export function batchServiceDefinition(): ServiceDefinition {
  if (cached === null) {
    // Into the shared root, whose Bigtable messages are parsed once per process: a server serves both.
    const root = bigtableRoot();
    root.define('percolator.batch.v1').addJSON(BATCH_V1 as unknown as Record<string, protobuf.AnyNestedObject>);
    root.resolveAll();
    cached = serviceDefinition(root, BATCH_SERVICE);
  }
  return cached;
}

export interface CheckAndMutateRowsRequest {
  entries?: CheckAndMutateRowRequest[];
  deferred?: boolean;
}

export interface ReadRowsManyRequest {
  entries?: ReadRowsRequest[];
}

/** An entry's failure, as MutateRows entries carry it. */
type EntryStatus = ReturnType<typeof rpcStatus>;

/**
 * Runs every entry through `run` concurrently; an entry that throws gets its status instead of
 * a result (logged when unexpected, as a call's error would be).
 */
function eachEntry<E, R extends object>(
  ctx: HandlerContext,
  method: string,
  entries: readonly E[],
  run: (entry: E) => Promise<R>,
): Promise<(R | { status: EntryStatus })[]> {
  return Promise.all(
    entries.map((e) =>
      run(e).catch((err: unknown) => {
        const t = translateError(err);
        if (t.unexpected)
          ctx.log(`${method}: unexpected error in an entry: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
        return { status: rpcStatus(t) };
      }),
    ),
  );
}

function checkEntryCount(method: string, n: number, what = 'entries'): void {
  if (n > MAX_BATCH_ENTRIES) throw invalidArgument(`${method} carries ${n} ${what}; at most ${MAX_BATCH_ENTRIES} are allowed`);
}

/**
 * `checkAndMutateRow`: the data service's CheckAndMutateRow handler, which each CheckAndMutateRows
 * entry goes through; `pointReads`: its ReadRows of row keys, answered whole, for ReadRowsMany.
 */
export function batchServiceImplementation(
  ctx: HandlerContext & {
    checkAndMutateRow: (req: CheckAndMutateRowRequest, durability?: 'durable' | 'deferred') => Promise<{ predicateMatched: boolean }>;
    pointReads: (req: ReadRowsRequest) => Promise<WireRowOut[]>;
  },
): UntypedServiceImplementation {
  return {
    CheckAndMutateRows: unary(ctx, 'CheckAndMutateRows', async (req: CheckAndMutateRowsRequest) => {
      const entries = req.entries ?? [];
      checkEntryCount('CheckAndMutateRows', entries.length);
      let mutations = 0;
      for (const e of entries) mutations += (e.trueMutations?.length ?? 0) + (e.falseMutations?.length ?? 0);
      if (mutations > MAX_MUTATIONS_PER_REQUEST) {
        throw invalidArgument(
          `CheckAndMutateRows carries ${mutations} mutations; at most ${MAX_MUTATIONS_PER_REQUEST} are allowed per request`,
        );
      }
      const durability = req.deferred === true ? 'deferred' : 'durable';
      return { entries: await eachEntry(ctx, 'CheckAndMutateRows', entries, (e) => ctx.checkAndMutateRow(e, durability)) };
    }),
    ReadRowsMany: unary(ctx, 'ReadRowsMany', async (req: ReadRowsManyRequest) => {
      const entries = req.entries ?? [];
      checkEntryCount('ReadRowsMany', entries.length);
      checkEntryCount(
        'ReadRowsMany',
        entries.reduce((n, e) => n + (e.rows?.rowKeys?.length ?? 0), 0),
        'row keys',
      );
      return { entries: await eachEntry(ctx, 'ReadRowsMany', entries, async (e) => ({ rows: await ctx.pointReads(e) })) };
    }),
  };
}
