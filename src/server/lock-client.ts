/**
 * `NetworkLockService`: the `LockService` of src/notify/lock-service.ts, served by
 * `percolator serve` (gRPC service `percolator.lock.v1.LockService`, see lock-protocol.ts), for
 * workers in other processes or on other machines:
 *
 *   const locks = new NetworkLockService({ address: '127.0.0.1:8086', authToken });
 *   const db = await Percolator.open({ store: 'bigtable://127.0.0.1:8086', lockService: locks });
 *
 * Failure policy. The locks are advisory (§2.4: correctness comes from the ack column's
 * write-write conflict), so an unreachable lock service must not stop the workers:
 * - `tryLock` on a transport failure (UNAVAILABLE, DEADLINE_EXCEEDED, …) follows
 *   `onUnavailable`: 'grant' (default: proceed as if locked; duplicate work is possible, wrong
 *   results are not), 'deny' (skip the row for now) or 'throw' (LockServiceError
 *   LOCK_SERVICE_UNAVAILABLE);
 * - a rejection that retrying cannot fix (UNAUTHENTICATED, INVALID_ARGUMENT) always throws
 *   LockServiceError LOCK_SERVICE_REJECTED: a wrong token must be loud;
 * - `unlock` never throws for transport failures; they are counted in `stats.unlockFailures`,
 *   and the unlock is sent again in the background (UNLOCK_RETRIES times, 100 ms doubling), unless
 *   the same owner takes the same key meanwhile. Until 2026-11-30 the lock then stayed until its
 *   TTL (30 s for a worker's rows): every connection reset cost the rows being run half a minute.
 *   The lock expires after its TTL still if every retry fails.
 *
 * Batching. The tryLocks and unlocks of one event-loop turn go out in one `Batch` call (a worker's
 * runners take and release rows together: over `percolator serve` they were a third of a web-index
 * worker's calls), applied by the server in the order made, each with its own result. A lone op
 * goes as the plain TryLock or Unlock; a server from before Batch answers UNIMPLEMENTED, having
 * applied nothing, and from then on every op goes alone. A Batch call that fails in transport
 * fails each op with that error, and each meets the failure policy above as if it had gone alone.
 *
 * Concurrency contract: any number of calls may be in flight (HTTP/2 multiplexing on one
 * channel); `close()` cancels nothing in flight but makes further calls fail.
 */
import { type Client, credentials, Metadata, makeGenericClientConstructor, type ServiceError, status } from '@grpc/grpc-js';
import { type LockService, checkLockArguments } from '../notify/lock-service.js';
import { parseHostPort } from '../store/bigtable/url.js';
import { TxnError } from '../txn/errors.js';
import { describeSecret, describeValue } from '../util/describe-type.js';
import { unknownOption } from '../util/options.js';
import { isTimerMs } from '../util/timer-ms.js';
import { type LockOpResult, lockServiceDefinition } from './lock-protocol.js';
import { sendBatch } from '../util/send-batch.js';
import { type ErrorJson, errorJson } from '../util/error-json.js';

export type LockServiceErrorCode = 'LOCK_SERVICE_UNAVAILABLE' | 'LOCK_SERVICE_REJECTED' | 'LOCK_SERVICE_CLOSED';

export class LockServiceError extends Error {
  constructor(
    readonly code: LockServiceErrorCode,
    message: string,
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.name = 'LockServiceError';
  }

  /** Message, code and evidence (util/error-json.ts). */
  toJSON(): ErrorJson {
    return errorJson(this);
  }
}

export interface NetworkLockServiceOptions {
  /** `host:port` of the server's gRPC port (the same port as the Bigtable API). */
  readonly address: string;
  /** Bearer token, if the server was started with one. */
  readonly authToken?: string;
  /** Per-call deadline. Default 5000 ms. */
  readonly timeoutMs?: number;
  /** What `tryLock` answers when the service cannot be reached. Default 'grant'. */
  readonly onUnavailable?: 'grant' | 'deny' | 'throw';
}

export interface NetworkLockServiceStats {
  tryLocks: number;
  acquired: number;
  unavailable: number;
  unlocks: number;
  unlockFailures: number;
  /** Unlocks that went through on a background retry after a transport failure. */
  unlocksRetried: number;
  /** Batch calls sent (each of two ops or more) and the ops they carried. */
  batches: number;
  batchedOps: number;
}

const NETWORK_LOCK_OPTIONS: ReadonlySet<string> = new Set(['address', 'authToken', 'timeoutMs', 'onUnavailable']);

/**
 * The options of a NetworkLockService: without them, or with an address of another type, the
 * constructor was a TypeError of grpc-js; a misspelt option or an onUnavailable of 'fail' was the
 * default ('grant'). TxnError INVALID_ARGUMENT naming the option, like LockService's arguments.
 */
function checkNetworkLockOptions(options: unknown): void {
  // A wrong string is shown as it is ("localhost"), not as its type; a token only by its type.
  const shown = (option: string, value: unknown): string => (option === 'authToken' ? describeSecret(value) : describeValue(value));
  const bad = (option: string, needs: string, value: unknown): TxnError =>
    new TxnError('INVALID_ARGUMENT', `NetworkLockService's ${option} must be ${needs}, not ${shown(option, value)}`, { option });
  if (options === null || typeof options !== 'object') throw bad('options', 'an object with an address', options);
  const o = options as Record<string, unknown>;
  const unknown = unknownOption('NetworkLockService', o, NETWORK_LOCK_OPTIONS);
  if (unknown !== undefined) throw new TxnError('INVALID_ARGUMENT', unknown.message, { option: unknown.option });
  if (typeof o.address !== 'string' || parseHostPort(o.address) === null) throw bad('address', 'HOST:PORT', o.address);
  if (o.authToken !== undefined && (typeof o.authToken !== 'string' || o.authToken === ''))
    throw bad('authToken', 'a non-empty string', o.authToken);
  if (o.timeoutMs !== undefined && !(isTimerMs(o.timeoutMs) && o.timeoutMs > 0))
    throw bad('timeoutMs', 'a number of ms above 0', o.timeoutMs);
  if (o.onUnavailable !== undefined && o.onUnavailable !== 'grant' && o.onUnavailable !== 'deny' && o.onUnavailable !== 'throw')
    throw bad('onUnavailable', "'grant', 'deny' or 'throw'", o.onUnavailable);
}

/** Background retries of an unlock that failed in transport (100, 200, … 3 200 ms after it). */
const UNLOCK_RETRIES = 6;

/** Ops in one Batch call at most (the server takes up to MAX_BATCH_OPS). */
const MAX_OPS_PER_CALL = 1000;

interface PendingOp {
  readonly method: 'TryLock' | 'Unlock';
  readonly req: { key: string; owner: string; ttlMs?: number };
  resolve(res: Record<string, unknown>): void;
  reject(e: unknown): void;
}

const closedError = (): LockServiceError => new LockServiceError('LOCK_SERVICE_CLOSED', 'the lock service client is closed');

type Callback = (err: ServiceError | null, res?: unknown) => void;
type Method = (req: unknown, md: Metadata, opts: { deadline: number }, cb: Callback) => void;

const LockClient = makeGenericClientConstructor(lockServiceDefinition(), 'LockService');

const REJECTIONS = new Set<number>([status.UNAUTHENTICATED, status.PERMISSION_DENIED, status.INVALID_ARGUMENT, status.UNIMPLEMENTED]);

export class NetworkLockService implements LockService {
  readonly stats: NetworkLockServiceStats = {
    tryLocks: 0,
    acquired: 0,
    unavailable: 0,
    unlocks: 0,
    unlockFailures: 0,
    unlocksRetried: 0,
    batches: 0,
    batchedOps: 0,
  };
  /** Ops of this turn, sent together by `flush`. */
  private queue: PendingOp[] = [];
  private scheduled = false;
  /** False once the server answered Batch with UNIMPLEMENTED. */
  private batching = true;
  /** Unlocks waiting for a retry, by key and owner (a new tryLock of the same pair cancels it). */
  private readonly retries = new Map<string, NodeJS.Timeout>();
  private readonly client: Client & Record<string, Method>;
  private readonly timeoutMs: number;
  private readonly onUnavailable: 'grant' | 'deny' | 'throw';
  private readonly authToken: string | undefined;
  private closed = false;

  constructor(readonly options: NetworkLockServiceOptions) {
    checkNetworkLockOptions(options);
    this.client = new LockClient(options.address, credentials.createInsecure(), {
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
    }) as unknown as Client & Record<string, Method>;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.onUnavailable = options.onUnavailable ?? 'grant';
    this.authToken = options.authToken;
  }

  /**
   * One op, coalesced with the others of this event-loop turn into one Batch call when the server
   * has it (a lone op goes as the plain call). Resolves with the op's response; rejects with the
   * call's gRPC error, or with the op's own status shaped as one.
   */
  private call(method: 'TryLock' | 'Unlock', req: { key: string; owner: string; ttlMs?: number }): Promise<Record<string, unknown>> {
    if (this.closed) return Promise.reject(closedError());
    if (!this.batching) return this.callOne(method, req);
    return new Promise((resolve, reject) => {
      this.queue.push({ method, req, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const queue = this.queue;
    this.queue = [];
    for (let i = 0; i < queue.length; i += MAX_OPS_PER_CALL) void this.send(queue.slice(i, i + MAX_OPS_PER_CALL));
  }

  private async send(ops: readonly PendingOp[]): Promise<void> {
    const single = (o: PendingOp) => void this.callOne(o.method, o.req).then(o.resolve, o.reject);
    if (ops.length === 1 || !this.batching) {
      for (const o of ops) single(o);
      return;
    }
    this.stats.batches++;
    this.stats.batchedOps += ops.length;
    await sendBatch(ops, {
      call: async () => {
        const res = await this.callOne('Batch', {
          ops: ops.map((o) => (o.method === 'Unlock' ? { key: o.req.key, owner: o.req.owner, unlock: true } : o.req)),
        });
        return (res.results as LockOpResult[] | undefined) ?? [];
      },
      single,
      // A server from before Batch: it applied nothing; these and all later ops go one call each.
      unsupported: () => {
        if (this.closed) return false;
        this.batching = false;
        return true;
      },
      mismatch: (got) => `lock Batch answered ${got} results for ${ops.length} ops`,
      settle: (o, r: LockOpResult) => {
        if ((r.code ?? 0) !== 0) o.reject(Object.assign(new Error(r.message ?? ''), { code: r.code, details: r.message ?? '' }));
        else o.resolve(o.method === 'TryLock' ? { acquired: r.acquired === true } : {});
      },
    });
  }

  private callOne(method: 'TryLock' | 'Unlock' | 'Batch', req: object): Promise<Record<string, unknown>> {
    if (this.closed) return Promise.reject(closedError());
    const md = new Metadata();
    if (this.authToken !== undefined) md.set('authorization', `Bearer ${this.authToken}`);
    return new Promise((resolve, reject) => {
      this.client[method](req, md, { deadline: Date.now() + this.timeoutMs }, (err, res) => {
        if (err) reject(err);
        else resolve((res ?? {}) as Record<string, unknown>);
      });
    });
  }

  async tryLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    // Before the call: with the service out of reach, 'grant' granted a lock on anything.
    checkLockArguments(key, owner, ttlMs);
    this.stats.tryLocks++;
    // A late retry of an earlier unlock must not release the lock taken now.
    this.cancelRetry(key, owner);
    try {
      const res = await this.call('TryLock', { key, owner, ttlMs: Math.max(1, Math.ceil(ttlMs)) });
      const acquired = res.acquired === true;
      if (acquired) this.stats.acquired++;
      return acquired;
    } catch (e) {
      if (e instanceof LockServiceError) throw e;
      const err = e as ServiceError;
      if (REJECTIONS.has(err.code)) {
        throw new LockServiceError(
          'LOCK_SERVICE_REJECTED',
          `lock service at ${this.options.address} rejected TryLock: ${err.details ?? err.message}`,
          {
            address: this.options.address,
            grpcCode: err.code,
          },
        );
      }
      this.stats.unavailable++;
      if (this.onUnavailable === 'grant') return true;
      if (this.onUnavailable === 'deny') return false;
      throw new LockServiceError(
        'LOCK_SERVICE_UNAVAILABLE',
        `lock service at ${this.options.address} unavailable: ${err.details ?? err.message}`,
        {
          address: this.options.address,
          grpcCode: err.code,
        },
      );
    }
  }

  async unlock(key: string, owner: string): Promise<void> {
    checkLockArguments(key, owner);
    this.stats.unlocks++;
    try {
      await this.call('Unlock', { key, owner });
    } catch (e) {
      if (e instanceof LockServiceError) throw e;
      const err = e as ServiceError;
      if (err.code === status.UNAUTHENTICATED || err.code === status.INVALID_ARGUMENT) {
        throw new LockServiceError(
          'LOCK_SERVICE_REJECTED',
          `lock service at ${this.options.address} rejected Unlock: ${err.details ?? err.message}`,
          {
            address: this.options.address,
            grpcCode: err.code,
          },
        );
      }
      this.stats.unlockFailures++;
      this.retryUnlock(key, owner, 1);
    }
  }

  private retryUnlock(key: string, owner: string, attempt: number): void {
    if (this.closed || attempt > UNLOCK_RETRIES) return;
    const id = `${key}\u0000${owner}`;
    const timer = setTimeout(
      () => {
        if (this.retries.get(id) !== timer) return;
        this.retries.delete(id);
        this.call('Unlock', { key, owner }).then(
          () => void this.stats.unlocksRetried++,
          () => this.retryUnlock(key, owner, attempt + 1),
        );
      },
      50 * 2 ** attempt,
    );
    timer.unref();
    this.retries.set(id, timer);
  }

  private cancelRetry(key: string, owner: string): void {
    if (this.retries.size === 0) return;
    const id = `${key}\u0000${owner}`;
    clearTimeout(this.retries.get(id));
    this.retries.delete(id);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.retries.values()) clearTimeout(t);
    this.retries.clear();
    this.client.close();
  }
}
