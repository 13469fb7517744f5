/**
 * Coalesces concurrent CheckAndMutateRow calls into one call of `percolator serve`'s BatchService
 * (src/server/batch-protocol.ts): the calls that arrive before the next macrotask go out together.
 * A transaction's prewrites are issued at once, and so are its secondary commits, so each of those
 * phases costs about one call instead of one a row — and the workers' other transactions in
 * flight share it. A lone call goes out as a plain CheckAndMutateRow.
 *
 * Each entry keeps its own semantics (batch-protocol.ts): atomic in its row, independent of the
 * others, its own result or error. A call that fails as a whole (the connection reset, the
 * deadline) fails every entry with that error, which is what each would have met on its own: the
 * write may or may not have been applied.
 *
 * Servers without the service (the emulator, Cloud Bigtable, an older `percolator serve`) answer
 * UNIMPLEMENTED, having applied nothing: those entries are sent again one call each, and so is
 * everything after (the answer is remembered for the store's lifetime).
 *
 * Deferred entries (`submit`'s `deferred`: Percolator's locks, secondary commits, observers'
 * commits, notification clears) go in calls of their own with the request's `deferred` flag: the
 * server answers them once applied and visible, durable with its next group commit
 * (batch-protocol.ts), so they do not wait for an fsync. A lone deferred entry goes as a call of
 * one, since a plain CheckAndMutateRow is always durable.
 *
 * An entry may bring its own way of going alone (`submit`'s `single`): the store's MutateRow calls
 * ride in these batches as unconditional entries (bigtable-store.ts `mutateRow`), and alone they
 * go as the MutateRow they are.
 *
 * Concurrency contract: single-threaded; any number of calls may be pending.
 */
import { Metadata } from '@grpc/grpc-js';
import { ERROR_CODE_METADATA, Status, codeFromStatusDetails } from './grpc-errors.js';
import { sendBatch } from '../../util/send-batch.js';

/** At most this many entries in one batched call (the server takes up to 10 000). */
export const MAX_BATCH_ENTRIES = 1000;
/**
 * At most about this many bytes of mutations in one batched call: far below the server's message
 * cap (256 MiB by default), whatever the values (up to 10 MiB each). A larger entry goes alone.
 */
export const MAX_BATCH_BYTES = 16 * 1024 * 1024;
/**
 * At most this many mutations (both branches, all entries) in one batched call: the server's cap
 * for a whole CheckAndMutateRows call (batch-protocol.ts), beyond which it refuses the call and
 * every entry in it would fail. An entry with more goes alone.
 */
export const MAX_BATCH_MUTATIONS = 100_000;

/** The mutations a CheckAndMutateRowRequest carries, both branches. */
function mutationCount(request: object): number {
  const r = request as { trueMutations?: readonly unknown[] | null; falseMutations?: readonly unknown[] | null };
  return (r.trueMutations?.length ?? 0) + (r.falseMutations?.length ?? 0);
}

export interface CheckAndMutateResult {
  readonly predicateMatched?: boolean | null;
}

/** One entry of a batched call's response (`status` only when the entry failed). */
export interface BatchEntry {
  readonly predicateMatched?: boolean | null;
  readonly status?: {
    readonly code?: number | null;
    readonly message?: string | null;
    readonly details?: readonly { type_url?: string; typeUrl?: string; value?: Uint8Array | null }[] | null;
  } | null;
}

export interface CheckAndMutateBatcherStats {
  /** Batched calls sent (each of two entries or more, or of one deferred entry). */
  batches: number;
  /** Entries they carried. */
  batchedEntries: number;
  /** Plain CheckAndMutateRow calls (a lone entry, or a server without the service). */
  singles: number;
}

interface Waiter {
  readonly request: object;
  readonly deferred: boolean;
  readonly bytes: number;
  readonly mutations: number;
  /** How this entry goes alone, if not as a plain CheckAndMutateRow of `request`. */
  readonly single: (() => Promise<CheckAndMutateResult>) | undefined;
  resolve(result: CheckAndMutateResult): void;
  reject(e: unknown): void;
}

/**
 * The error an entry's status stands for, shaped as a gRPC call error (code, details, and the code
 * trailer `percolator serve` sets), so the store translates it as it would a call of its own.
 */
function entryError(status: NonNullable<BatchEntry['status']>): Error {
  const message = status.message ?? '';
  const metadata = new Metadata();
  const known = codeFromStatusDetails(status.details);
  if (known !== undefined) metadata.set(ERROR_CODE_METADATA, known);
  return Object.assign(new Error(message), { code: status.code ?? Status.UNKNOWN, details: message, metadata });
}

export class CheckAndMutateBatcher {
  readonly stats: CheckAndMutateBatcherStats = { batches: 0, batchedEntries: 0, singles: 0 };
  /** This turn's entries; a call carries durable or deferred ones, not both. */
  private queue: Waiter[] = [];
  private scheduled = false;
  /** False once the server answered UNIMPLEMENTED. */
  private supported = true;

  /**
   * `batch` sends requests in one BatchService call and resolves with its entries; `single` sends
   * one CheckAndMutateRow. Both reject with the call's gRPC error.
   */
  constructor(
    private readonly batch: (requests: readonly object[], deferred: boolean) => Promise<readonly BatchEntry[]>,
    private readonly single: (request: object) => Promise<CheckAndMutateResult>,
  ) {}

  /** Whether the server has the batch service, as far as is known (true until it said otherwise). */
  get batching(): boolean {
    return this.supported;
  }

  /**
   * `bytes`: about what the request's mutations weigh (MAX_BATCH_BYTES). `single`: how the entry
   * goes when it goes alone (default: `request` as a plain CheckAndMutateRow). `deferred`: the
   * entry may be answered before it is durable (above).
   */
  submit(request: object, bytes = 0, single?: () => Promise<CheckAndMutateResult>, deferred = false): Promise<CheckAndMutateResult> {
    if (!this.supported) return this.sendSingle(request, single);
    return new Promise((resolve, reject) => {
      this.queue.push({ request, deferred, bytes, mutations: mutationCount(request), single, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private sendSingle(request: object, single: (() => Promise<CheckAndMutateResult>) | undefined): Promise<CheckAndMutateResult> {
    this.stats.singles++;
    return single !== undefined ? single() : this.single(request);
  }

  private flush(): void {
    this.scheduled = false;
    const queue = this.queue;
    this.queue = [];
    this.flushKind(queue.filter((w) => !w.deferred));
    this.flushKind(queue.filter((w) => w.deferred));
  }

  /** Sends entries of one durability in calls within the limits. */
  private flushKind(queue: readonly Waiter[]): void {
    let batch: Waiter[] = [];
    let bytes = 0;
    let mutations = 0;
    for (const w of queue) {
      if (
        batch.length > 0 &&
        (batch.length === MAX_BATCH_ENTRIES || bytes + w.bytes > MAX_BATCH_BYTES || mutations + w.mutations > MAX_BATCH_MUTATIONS)
      ) {
        void this.run(batch);
        batch = [];
        bytes = 0;
        mutations = 0;
      }
      batch.push(w);
      bytes += w.bytes;
      mutations += w.mutations;
    }
    if (batch.length > 0) void this.run(batch);
  }

  private async run(waiters: Waiter[]): Promise<void> {
    const single = (w: Waiter) => void this.sendSingle(w.request, w.single).then(w.resolve, w.reject);
    // A lone durable entry goes as a plain call; a lone deferred one as a call of one, to be deferred.
    if ((waiters.length === 1 && !(waiters[0] as Waiter).deferred) || !this.supported) {
      for (const w of waiters) single(w);
      return;
    }
    this.stats.batches++;
    this.stats.batchedEntries += waiters.length;
    await sendBatch(waiters, {
      call: () =>
        this.batch(
          waiters.map((w) => w.request),
          (waiters[0] as Waiter).deferred,
        ),
      single,
      unsupported: () => {
        this.supported = false;
        return true;
      },
      mismatch: (got) => `CheckAndMutateRows answered ${got} entries for ${waiters.length}`,
      settle: (w, entry: BatchEntry) => {
        const status = entry.status;
        if (status !== undefined && status !== null && (status.code ?? 0) !== 0) w.reject(entryError(status));
        else w.resolve({ predicateMatched: entry.predicateMatched === true });
      },
    });
  }
}
