/**
 * A `Store` served over a Node IPC channel, so that crash-test worker processes can share one
 * store that only the supervisor may open (`file:DIR` takes LevelDB's exclusive lock).
 *
 * Supervisor side: `serveStoreOverIpc(store, child)` answers the child's requests with the real
 * store. Worker side: `new IpcStore(url)` implements `Store` by sending requests over
 * `process.send` and awaiting the answers.
 *
 * Invariants (why the layers above cannot tell the difference, and why crashes stay realistic):
 * - Every call is one request and one answer; the supervisor runs the real operation, so its
 *   atomicity and durability are the store's. A request that reached the supervisor runs to
 *   completion even if the worker is killed meanwhile — exactly like a network request that
 *   landed before its client died.
 * - Errors keep their identity: a StoreError is re-created on the worker side as a real
 *   `StoreError` with the same code and details (so `isStoreError(e, 'TABLE_EXISTS')` works);
 *   per-row errors of `mutateRows` too. Bytes survive as bytes because the channel must use
 *   `serialization: 'advanced'` (V8 structured clone; Buffers and Uint8Arrays round-trip).
 * - `readRows` is one request answered with the whole result (fine for the checkers' small
 *   tables); the iterator then yields it row by row.
 * - When the channel closes, pending and later calls reject with STORE_CLOSED; nothing hangs.
 *   `close()` only detaches this client: the supervisor owns the store and closes it.
 */
import type { ChildProcess } from 'node:child_process';
import * as v8 from 'node:v8';
import { StoreError, type StoreErrorCode } from '../store/errors.js';
import { DEFAULT_LIMITS, type Store, type StoreLimits, atomicRowsOf } from '../store/store.js';
import type {
  Bytes,
  CheckAndMutateRequest,
  DropRowRangeRequest,
  FamilyModification,
  MutateRowsEntry,
  MutateRowsResult,
  Mutation,
  ReadModifyWriteRule,
  ReadRowsOptions,
  Row,
  RowFilter,
  RowKeySample,
  TableSpec,
  WriteOptions,
} from '../store/types.js';
import { isDeferredWrite } from '../store/validate.js';

/** The operations forwarded (everything but `close` and `url`). */
const OPS = [
  'createTable',
  'deleteTable',
  'listTables',
  'getTable',
  'modifyColumnFamilies',
  'dropRowRange',
  'readRow',
  'readRows',
  'mutateRow',
  'mutateRows',
  'checkAndMutateRow',
  'readModifyWriteRow',
  'sampleRowKeys',
] as const;
type Op = (typeof OPS)[number];
const OP_SET: ReadonlySet<string> = new Set(OPS);

/** An error as it crosses the channel. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
  readonly details?: Record<string, unknown>;
  readonly store: boolean;
}

export interface StoreRequest {
  readonly t: 'store.req';
  readonly id: number;
  readonly op: Op;
  readonly args: readonly unknown[];
}

export type StoreResponse =
  | { readonly t: 'store.res'; readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly t: 'store.res'; readonly id: number; readonly ok: false; readonly error: WireError };

/** One end of a message channel (a forked child, the child's `process`, or an in-process pair). */
export interface IpcChannel {
  /** Best effort: a closed channel drops the message. `done` runs once it was handed to the OS. */
  send(message: unknown, done?: (err: Error | null) => void): void;
  /** Subscribes; returns the unsubscribe function. */
  onMessage(listener: (message: unknown) => void): () => void;
  /** Runs once the channel is closed (immediately if it already is). */
  onClose(listener: () => void): () => void;
}

/** The supervisor's end of a child forked with an IPC channel. */
export function childChannel(child: ChildProcess): IpcChannel {
  return {
    send(message, done) {
      if (!child.connected) {
        done?.(new Error('channel closed'));
        return;
      }
      try {
        child.send(message as never, undefined, {}, (err) => done?.(err ?? null));
      } catch (e) {
        done?.(e as Error);
      }
    },
    onMessage(listener) {
      child.on('message', listener);
      return () => child.off('message', listener);
    },
    onClose(listener) {
      if (!child.connected) {
        queueMicrotask(listener);
        return () => undefined;
      }
      child.once('disconnect', listener);
      return () => child.off('disconnect', listener);
    },
  };
}

/** The child's end (`process`), when it was forked with an IPC channel. */
export function processChannel(): IpcChannel {
  if (process.send === undefined) throw new Error('this process has no IPC channel (start it with child_process.fork)');
  return {
    send(message, done) {
      if (!process.connected || process.send === undefined) {
        done?.(new Error('channel closed'));
        return;
      }
      try {
        process.send(message, undefined, {}, (err: Error | null) => done?.(err ?? null));
      } catch (e) {
        done?.(e as Error);
      }
    },
    onMessage(listener) {
      process.on('message', listener);
      return () => process.off('message', listener);
    },
    onClose(listener) {
      if (!process.connected) {
        queueMicrotask(listener);
        return () => undefined;
      }
      process.once('disconnect', listener);
      return () => process.off('disconnect', listener);
    },
  };
}

/**
 * Two connected in-process channel ends whose messages go through V8 serialization (what
 * `serialization: 'advanced'` does), delivered asynchronously. For tests.
 */
export function loopbackChannels(): [IpcChannel & { close(): void }, IpcChannel] {
  const listeners: [Set<(m: unknown) => void>, Set<(m: unknown) => void>] = [new Set(), new Set()];
  const closers: [Set<() => void>, Set<() => void>] = [new Set(), new Set()];
  let closed = false;
  const end = (me: 0 | 1): IpcChannel => {
    const other = (1 - me) as 0 | 1;
    return {
      send(message, done) {
        if (closed) {
          done?.(new Error('channel closed'));
          return;
        }
        let bytes: Buffer;
        try {
          bytes = v8.serialize(message);
        } catch (e) {
          done?.(e as Error);
          return;
        }
        setImmediate(() => {
          if (closed) return;
          const copy = v8.deserialize(bytes);
          for (const l of listeners[other]) l(copy);
        });
        done?.(null);
      },
      onMessage(listener) {
        listeners[me].add(listener);
        return () => listeners[me].delete(listener);
      },
      onClose(listener) {
        if (closed) {
          queueMicrotask(listener);
          return () => undefined;
        }
        closers[me].add(listener);
        return () => closers[me].delete(listener);
      },
    };
  };
  const a = end(0);
  const b = end(1);
  return [
    Object.assign(a, {
      close(): void {
        if (closed) return;
        closed = true;
        for (const s of closers) for (const l of s) l();
      },
    }),
    b,
  ];
}

function toWire(e: unknown): WireError {
  if (e instanceof StoreError) return { name: e.name, message: e.message, code: e.code, details: { ...e.details }, store: true };
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    return { name: e.name, message: e.message, ...(typeof code === 'string' ? { code } : {}), store: false };
  }
  return { name: 'Error', message: String(e), store: false };
}

function fromWire(w: WireError): Error {
  if (w.store) return new StoreError(w.code as StoreErrorCode, w.message, w.details ?? {});
  const e = new Error(w.message);
  e.name = w.name;
  if (w.code !== undefined) Object.assign(e, { code: w.code });
  return e;
}

function isRequest(m: unknown): m is StoreRequest {
  return typeof m === 'object' && m !== null && (m as { t?: unknown }).t === 'store.req';
}

export interface StoreServer {
  /** Requests received and not yet answered. */
  inFlight(): number;
  /** Resolves when no request is in flight. */
  idle(): Promise<void>;
  /** Stops answering new requests (those in flight are still answered if the channel is open). */
  detach(): void;
}

/**
 * Serves `store` to the process at the other end of `child` (a forked ChildProcess, or any
 * IpcChannel). Requests are answered as long as the channel is open.
 */
export function serveStoreOverIpc(store: Store, child: ChildProcess | IpcChannel): StoreServer {
  const channel: IpcChannel = isChildProcess(child) ? childChannel(child) : child;
  // The worker's readers cannot see this process's in-memory commit locks (two-phase from now on).
  // Shared for good (the share is not released): a detached server still answers the requests in
  // flight, so nothing here knows when the last answer has gone, and the checkers serve their
  // workers until they close the store anyway.
  atomicRowsOf(store)?.markShared();
  let inFlight = 0;
  let waiters: (() => void)[] = [];
  const settle = (): void => {
    inFlight--;
    if (inFlight === 0) {
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    }
  };
  const reply = (r: StoreResponse): void => {
    channel.send(r, (err) => {
      // The answer could not be cloned (never expected): answer with an error instead of hanging.
      // On a closed channel this second send fails the same way and is dropped.
      if (err !== null && !closed) {
        channel.send({
          t: 'store.res',
          id: r.id,
          ok: false,
          error: { name: 'Error', message: `ipc-store: unsendable answer: ${err.message}`, store: false },
        });
      }
    });
  };
  let closed = false;
  const unsubscribeClose = channel.onClose(() => {
    closed = true;
  });
  const unsubscribe = channel.onMessage((m) => {
    if (!isRequest(m)) return;
    inFlight++;
    void handle(store, m).then(
      (value) => {
        settle();
        reply({ t: 'store.res', id: m.id, ok: true, value });
      },
      (e: unknown) => {
        settle();
        reply({ t: 'store.res', id: m.id, ok: false, error: toWire(e) });
      },
    );
  });
  return {
    inFlight: () => inFlight,
    idle: () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((r) => waiters.push(r))),
    detach: () => {
      unsubscribe();
      unsubscribeClose();
    },
  };
}

async function handle(store: Store, m: StoreRequest): Promise<unknown> {
  if (!OP_SET.has(m.op)) throw new StoreError('INVALID_ARGUMENT', `ipc-store: unknown operation ${String(m.op)}`);
  const a = m.args as never[];
  switch (m.op) {
    case 'readRows': {
      const rows: Row[] = [];
      for await (const r of store.readRows(a[0], a[1])) rows.push(r);
      return rows;
    }
    case 'mutateRows': {
      const results = await store.mutateRows(a[0], a[1]);
      return results.map((r) => (r.error === undefined ? { index: r.index } : { index: r.index, error: toWire(r.error) }));
    }
    default: {
      const fn = store[m.op] as (...args: unknown[]) => Promise<unknown>;
      return fn.apply(store, a);
    }
  }
}

/** The worker side: a Store whose every call is answered by the supervisor's store. */
export class IpcStore implements Store {
  /** The supervisors open their stores with the default limits (bank.ts, notify.ts): not asked over the channel. */
  readonly limits: StoreLimits = DEFAULT_LIMITS;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  private closed = false;
  private channelClosed = false;
  private readonly unsubscribe: (() => void)[] = [];

  /**
   * @param url the URL the supervisor opened (reported as this store's `url`)
   * @param channel default: this process's IPC channel to its parent
   */
  constructor(
    readonly url: string,
    private readonly channel: IpcChannel = processChannel(),
  ) {
    this.unsubscribe.push(
      channel.onMessage((m) => {
        const r = m as StoreResponse;
        if (typeof r !== 'object' || r === null || r.t !== 'store.res') return;
        const p = this.pending.get(r.id);
        if (p === undefined) return;
        this.pending.delete(r.id);
        if (r.ok) p.resolve(r.value);
        else p.reject(fromWire(r.error));
      }),
      channel.onClose(() => {
        this.channelClosed = true;
        this.failPending('the supervisor closed the IPC channel');
      }),
    );
  }

  private failPending(why: string): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(new StoreError('STORE_CLOSED', `ipc-store: ${why}`));
  }

  private call<T>(op: Op, ...args: unknown[]): Promise<T> {
    if (this.closed) return Promise.reject(new StoreError('STORE_CLOSED', 'the store is closed'));
    if (this.channelClosed) return Promise.reject(new StoreError('STORE_CLOSED', 'ipc-store: the IPC channel is closed'));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.channel.send({ t: 'store.req', id, op, args } satisfies StoreRequest, (err) => {
        if (err !== null && this.pending.delete(id))
          reject(new StoreError('STORE_CLOSED', `ipc-store: could not send ${op}: ${err.message}`));
      });
    });
  }

  createTable(name: string, spec: TableSpec): Promise<void> {
    return this.call('createTable', name, spec);
  }
  deleteTable(name: string): Promise<void> {
    return this.call('deleteTable', name);
  }
  listTables(): Promise<string[]> {
    return this.call('listTables');
  }
  getTable(name: string): Promise<TableSpec> {
    return this.call('getTable', name);
  }
  modifyColumnFamilies(name: string, modifications: readonly FamilyModification[]): Promise<TableSpec> {
    return this.call('modifyColumnFamilies', name, modifications);
  }
  dropRowRange(name: string, request: DropRowRangeRequest): Promise<void> {
    return this.call('dropRowRange', name, request);
  }
  readRow(table: string, key: Bytes, filter?: RowFilter): Promise<Row | null> {
    return this.call('readRow', table, key, filter);
  }
  async *readRows(table: string, options?: ReadRowsOptions): AsyncIterable<Row> {
    const rows = await this.call<Row[]>('readRows', table, options);
    yield* rows;
  }
  // Write options are checked as every store checks them; the supervisor writes durably whatever they ask.
  async mutateRow(table: string, key: Bytes, mutations: readonly Mutation[], options?: WriteOptions): Promise<void> {
    isDeferredWrite(options, table);
    return this.call('mutateRow', table, key, mutations);
  }
  async mutateRows(table: string, entries: readonly MutateRowsEntry[], options?: WriteOptions): Promise<MutateRowsResult[]> {
    isDeferredWrite(options, table);
    const results = await this.call<{ index: number; error?: WireError }[]>('mutateRows', table, entries);
    return results.map((r) => (r.error === undefined ? { index: r.index } : { index: r.index, error: fromWire(r.error) as StoreError }));
  }
  checkAndMutateRow(table: string, key: Bytes, request: CheckAndMutateRequest): Promise<boolean> {
    return this.call('checkAndMutateRow', table, key, request);
  }
  readModifyWriteRow(table: string, key: Bytes, rules: readonly ReadModifyWriteRule[]): Promise<Row> {
    return this.call('readModifyWriteRow', table, key, rules);
  }
  sampleRowKeys(table: string): Promise<RowKeySample[]> {
    return this.call('sampleRowKeys', table);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const u of this.unsubscribe) u();
    this.failPending('the store was closed');
  }
}

function isChildProcess(x: ChildProcess | IpcChannel): x is ChildProcess {
  return typeof (x as ChildProcess).kill === 'function' && 'pid' in x;
}
