/**
 * `OracleClient`: the batching network client of the oracle (Percolator §2.3: "the client keeps
 * at most one request in flight; callers arriving meanwhile join the next request").
 *
 * Invariants:
 * - At most one TS_REQUEST is in flight per client. Every caller that arrives while it is in
 *   flight joins the queue; the queue is sent as ONE request for the sum of their counts (capped
 *   at `maxBatch`; the rest wait for the following request) once the event loop has let the
 *   callers just resolved re-enter (setImmediate), so under load the batch grows by itself.
 * - One TS_RESPONSE carries a contiguous range [first, first + total); it is split among the
 *   waiters in arrival order. Since the oracle only hands out increasing ranges and this client
 *   has one request in flight, everything this client resolves is strictly increasing in
 *   resolution order.
 * - A waiter is resolved at most once, with timestamps from exactly one response; a request
 *   lost with its connection is re-sent on the next connection (the oracle never reuses the
 *   range it may have allocated for the lost one, so nothing repeats).
 * - Failure: a batch in flight that gets no answer within `timeoutMs` rejects with
 *   ORACLE_TIMEOUT (and the connection is dropped); waiters that cannot be sent because no
 *   connection can be made reject with ORACLE_UNAVAILABLE once the oldest of them waited
 *   `timeoutMs`. Reconnection uses exponential backoff with jitter.
 * - GC leases: start timestamps registered here (`getStartTimestamp` registers in the tick the
 *   timestamp arrives) are reported every `reportIntervalMs` as this client's oldest active start
 *   timestamp; the oracle expires a silent client after its lease. A report's frame is built when
 *   it is sent (a report resent after a reconnect says what is active then), and reports are
 *   numbered in send order, so an acknowledged report numbered after a registration is known to
 *   have counted it. A registration's `held()` uses that: see `holds`.
 *
 * Concurrency contract: single JS thread; any number of concurrent callers. The hot path
 * (`getTimestamp`) allocates one promise per call and nothing else.
 */
import { randomInt } from 'node:crypto';
import * as net from 'node:net';
import { codeOfWire, OracleError } from './errors.js';
import { DEFAULT_LEASE_MS, DEFAULT_MAX_BATCH } from './oracle.js';
import { checkClientOptions } from './oracle-options.js';
import {
  encodeReport,
  encodeTsRequest,
  encodeIncarnationRequest,
  encodeIssuedRequest,
  encodeWatermarkRequest,
  expectedPayload,
  FrameReader,
  MsgType,
  PROTOCOL_VERSION,
  readU64,
} from './protocol.js';
import {
  type ActiveRegistration,
  ActiveSet,
  type MillisClock,
  monotonicMillis,
  type TimestampRange,
  type TimestampSource,
} from './types.js';

export interface OracleClientOptions {
  /** Default 127.0.0.1. */
  readonly host?: string;
  readonly port: number;
  /** Per request (and how long callers wait while the oracle is unreachable). Default 5000. */
  readonly timeoutMs?: number;
  /** One connection attempt. Default min(timeoutMs, 3000). */
  readonly connectTimeoutMs?: number;
  /** Reconnect backoff: first delay and cap (doubling, with jitter). Defaults 20 and 1000 ms. */
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  /** Largest batch per request; must not exceed the server's cap. Default 2^20. */
  readonly maxBatch?: number;
  /** How often the client reports its oldest active start timestamp. Default 1000 ms. */
  readonly reportIntervalMs?: number;
  /** The oracle's lease, for `leaseExpiresAt()`. Default 5000 ms. */
  readonly leaseMs?: number;
  /** Identifies this client's lease (default random 48-bit). */
  readonly clientId?: number;
  readonly millis?: MillisClock;
  /**
   * Where host and port came from (e.g. "PORT+2 of bigtable://…, the default"), told by
   * ORACLE_UNAVAILABLE's message and `details.addressSource`: a guessed address that is wrong
   * should say so, not only that nothing answers there.
   */
  readonly addressSource?: string;
}

export interface OracleClientStats {
  readonly requests: number;
  readonly timestamps: number;
  readonly connects: number;
  readonly connectFailures: number;
  readonly largestBatch: number;
}

type Resolver = (value: never) => void;

/**
 * Waiters of one request. Most waiters want one timestamp: only the others are listed in
 * `specials` as (index, kind) pairs, kind > 0 = a range of that size, -1 = a start timestamp.
 * Failures resolve every waiter with one shared rejected promise, so no reject functions are kept.
 */
class Batch {
  resolves: Resolver[] = [];
  specials: number[] = [];
  total = 0;
  since = 0;

  clear(): void {
    this.resolves.length = 0;
    this.specials.length = 0;
    this.total = 0;
  }

  /** Resolves every waiter with the same rejection. */
  fail(err: unknown): void {
    const resolves = this.resolves;
    this.resolves = [];
    this.specials = [];
    this.total = 0;
    if (resolves.length === 0) return;
    const rejected = Promise.reject(err);
    rejected.catch(() => undefined);
    for (const r of resolves) (r as (v: unknown) => void)(rejected);
  }
}

interface ControlRequest {
  readonly id: number;
  /** Built when sent: a report says what is active at that moment. */
  readonly frameOf: (id: number) => Buffer;
  readonly resolve: (value: number) => void;
  readonly reject: (err: unknown) => void;
  readonly timer: NodeJS.Timeout;
  readonly isReport: boolean;
  /** The response type that answers it (WATERMARK, or ISSUED). */
  readonly answer: number;
  sent: boolean;
  sentAt: number;
  /** A report's number in send order (0 until sent). */
  seq: number;
  /** What the caller awaits: a confirm shares a report that will count its registration. */
  readonly done: Promise<number>;
}

/** Connections whose incarnation is remembered: a registration from an older one is not held past the holdback. */
const KEPT_INCARNATIONS = 64;

/** Waiter kinds, stored in the count array: 0 = one timestamp, n > 0 = a range, -1 = a start. */
const SINGLE = 0;
const START = -1;

export class OracleClient implements TimestampSource {
  readonly host: string;
  readonly port: number;
  readonly clientId: number;
  private readonly timeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly backoffInitialMs: number;
  private readonly backoffMaxMs: number;
  readonly maxBatch: number;
  private readonly leaseMs: number;
  /** How long a start timestamp is held by the oracle's holdback alone (its report interval, which that must exceed). */
  private readonly holdbackMs: number;
  private readonly millis: MillisClock;
  private readonly addressSource: string | undefined;

  // Connection.
  private socket: net.Socket | null = null;
  private connected = false;
  private connectTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private lastError: string | undefined;
  private closedError: OracleError | null = null;

  // Waiters not yet sent, and the one request in flight (the two batches are swapped, not reallocated).
  private queue = new Batch();
  private inflight = new Batch();
  private unavailableTimer: NodeJS.Timeout | null = null;
  private flushScheduled = false;
  private pendingKind = SINGLE;

  private fId = 0;
  private fTimer: NodeJS.Timeout | null = null;
  /** When the request in flight was sent: the oracle issued its timestamps after that. */
  private fSentAt = 0;

  private nextId = 1;
  private readonly control = new Map<number, ControlRequest>();
  private readonly active = new ActiveSet();
  private readonly reportTimer: NodeJS.Timeout;
  /** Reports sent, and the number, send time and connection (`connects` then) of the newest one acknowledged. */
  private reportSeq = 0;
  private ackSeq = 0;
  private leaseAckedAt = Number.NEGATIVE_INFINITY;
  private ackConnection = 0;
  private lastWatermark = 0;
  /**
   * The oracle incarnation each recent connection reached (by its `connects` number): an
   * acknowledgement on a later connection to the same one holds what an earlier one issued.
   */
  private readonly incarnations = new Map<number, number>();
  /** False once a server answered INCARNATION_REQUEST with an error (one from before it). */
  private askIncarnation = true;
  private incarnationPending = false;

  private requests = 0;
  private timestampsReceived = 0;
  private connects = 0;
  private largestBatch = 0;

  constructor(options: OracleClientOptions) {
    checkClientOptions(options);
    this.host = options.host ?? '127.0.0.1';
    this.port = options.port;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? Math.min(this.timeoutMs, 3000);
    this.backoffInitialMs = options.backoffInitialMs ?? 20;
    this.backoffMaxMs = options.backoffMaxMs ?? 1000;
    this.maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.millis = options.millis ?? monotonicMillis;
    this.addressSource = options.addressSource;
    this.clientId = options.clientId ?? randomInt(1, 2 ** 48 - 1);
    const reportIntervalMs = options.reportIntervalMs ?? 1000;
    this.holdbackMs = reportIntervalMs;
    this.reportTimer = setInterval(() => this.report(), reportIntervalMs);
    this.reportTimer.unref();
    this.connect();
  }

  // --- the hot path ----------------------------------------------------------------------------

  private readonly executor = (resolve: Resolver): void => {
    const q = this.queue;
    if (q.total === 0) this.onFirstQueued();
    const kind = this.pendingKind;
    if (kind === SINGLE) {
      q.total++;
    } else {
      q.specials.push(q.resolves.length, kind);
      q.total += kind > 0 ? kind : 1;
    }
    q.resolves.push(resolve);
    if (!this.flushScheduled && this.fId === 0 && this.connected) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  };

  getTimestamp(): Promise<number> {
    if (this.closedError !== null) return Promise.reject(this.closedError);
    return new Promise<number>(this.executor);
  }

  getTimestamps(count: number): Promise<TimestampRange> {
    if (this.closedError !== null) return Promise.reject(this.closedError);
    if (!(Number.isInteger(count) && count >= 1 && count <= this.maxBatch)) {
      return Promise.reject(
        new OracleError('ORACLE_BAD_REQUEST', `batch size must be an integer in [1, ${this.maxBatch}], got ${count}`, {
          count,
          maxBatch: this.maxBatch,
        }),
      );
    }
    this.pendingKind = count;
    const p = new Promise<TimestampRange>(this.executor);
    this.pendingKind = SINGLE;
    return p;
  }

  getStartTimestamp(): Promise<ActiveRegistration> {
    if (this.closedError !== null) return Promise.reject(this.closedError);
    this.pendingKind = START;
    const p = new Promise<ActiveRegistration>(this.executor);
    this.pendingKind = SINGLE;
    return p;
  }

  private onFirstQueued(): void {
    this.queue.since = this.millis();
    if (!this.connected) {
      if (this.socket === null && this.reconnectTimer === null) this.connect();
      this.reconnectTimer?.ref();
      this.armUnavailable();
    }
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.fId !== 0 || !this.connected || this.queue.total === 0 || this.socket === null) return;
    if (this.queue.total > this.maxBatch) {
      this.flushPartial();
    } else {
      // Swap: the queue goes in flight; the old (empty) in-flight batch becomes the queue.
      const empty = this.inflight;
      this.inflight = this.queue;
      this.queue = empty;
    }
    this.clearUnavailable();
    this.send();
  };

  /** More than one request's worth queued: send the waiters of the first `maxBatch` timestamps. */
  private flushPartial(): void {
    const q = this.queue;
    const f = this.inflight;
    let total = 0;
    let n = 0;
    let sp = 0;
    while (n < q.resolves.length) {
      const isSpecial = sp < q.specials.length && q.specials[sp] === n;
      const kind = isSpecial ? q.specials[sp + 1] : SINGLE;
      const k = kind > 0 ? kind : 1;
      if (total + k > this.maxBatch) break;
      if (isSpecial) sp += 2;
      total += k;
      n++;
    }
    f.resolves = q.resolves.splice(0, n);
    f.specials = q.specials.splice(0, sp);
    f.total = total;
    f.since = q.since;
    q.total -= total;
    for (let i = 0; i < q.specials.length; i += 2) q.specials[i] -= n;
  }

  private send(): void {
    const id = this.takeId();
    this.fId = id;
    this.requests++;
    const total = this.inflight.total;
    if (total > this.largestBatch) this.largestBatch = total;
    this.fSentAt = this.millis();
    (this.socket as net.Socket).write(encodeTsRequest(id, total));
    this.fTimer = setTimeout(this.onRequestTimeout, this.timeoutMs);
  }

  private takeId(): number {
    const id = this.nextId;
    this.nextId = id >= 0xfffffffe ? 1 : id + 1;
    return id;
  }

  private onTsResponse(requestId: number, first: number, count: number): boolean {
    const f = this.inflight;
    if (requestId !== this.fId || count !== f.total || first < 0) {
      this.protocolFailure(`unexpected TS_RESPONSE (id ${requestId}, count ${count}; expected id ${this.fId}, count ${f.total})`, {
        requestId,
        count,
        expectedId: this.fId,
        expectedCount: f.total,
      });
      return false;
    }
    if (this.fTimer !== null) {
      clearTimeout(this.fTimer);
      this.fTimer = null;
    }
    this.fId = 0;
    this.timestampsReceived += count;
    const resolves = f.resolves as ((v: unknown) => void)[];
    const specials = f.specials;
    const n = resolves.length;
    let t = first;
    if (specials.length === 0) {
      for (let i = 0; i < n; i++) resolves[i](t++);
    } else {
      let sp = 0;
      for (let i = 0; i < n; i++) {
        if (sp < specials.length && specials[sp] === i) {
          const kind = specials[sp + 1];
          sp += 2;
          if (kind > 0) {
            resolves[i]({ first: t, count: kind });
            t += kind;
          } else {
            resolves[i](this.leased(this.active.register(t++), this.fSentAt));
          }
        } else {
          resolves[i](t++);
        }
      }
    }
    f.clear();
    if (this.queue.total !== 0 && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
    return true;
  }

  /** Rejects the batch in flight (not the queue). */
  private failInflight(err: OracleError): void {
    if (this.fTimer !== null) {
      clearTimeout(this.fTimer);
      this.fTimer = null;
    }
    this.fId = 0;
    this.inflight.fail(err);
  }

  private failQueue(err: OracleError): void {
    this.clearUnavailable();
    this.queue.fail(err);
  }

  /** The in-flight batch goes back to the head of the queue (its connection was lost). */
  private requeueInflight(): void {
    if (this.fId === 0) return;
    if (this.fTimer !== null) {
      clearTimeout(this.fTimer);
      this.fTimer = null;
    }
    this.fId = 0;
    const f = this.inflight;
    const q = this.queue;
    const shift = f.resolves.length;
    const specials = f.specials.slice();
    for (let i = 0; i < q.specials.length; i += 2) specials.push(q.specials[i] + shift, q.specials[i + 1]);
    q.since = q.total === 0 ? f.since : Math.min(f.since, q.since);
    q.resolves = f.resolves.concat(q.resolves);
    q.specials = specials;
    q.total += f.total;
    this.inflight = new Batch();
  }

  private readonly onRequestTimeout = (): void => {
    this.fTimer = null;
    const err = new OracleError('ORACLE_TIMEOUT', `the oracle at ${this.host}:${this.port} did not answer within ${this.timeoutMs} ms`, {
      host: this.host,
      port: this.port,
      timeoutMs: this.timeoutMs,
      requestId: this.fId,
      batch: this.inflight.total,
    });
    this.failInflight(err);
    this.dropConnection('request timeout');
  };

  // --- unavailability ----------------------------------------------------------------------

  private armUnavailable(): void {
    if (this.unavailableTimer !== null || this.queue.total === 0) return;
    const delay = Math.max(0, this.queue.since + this.timeoutMs - this.millis());
    this.unavailableTimer = setTimeout(() => {
      this.unavailableTimer = null;
      if (this.connected || this.queue.total === 0) return;
      this.failQueue(this.unavailable());
    }, delay);
  }

  private clearUnavailable(): void {
    if (this.unavailableTimer !== null) {
      clearTimeout(this.unavailableTimer);
      this.unavailableTimer = null;
    }
  }

  private unavailable(): OracleError {
    return new OracleError(
      'ORACLE_UNAVAILABLE',
      `the oracle at ${this.host}:${this.port} is unreachable (${this.failures} failed attempts, last: ${this.lastError ?? 'none'})` +
        (this.addressSource === undefined ? '' : `; that address is ${this.addressSource}`),
      {
        host: this.host,
        port: this.port,
        ...(this.addressSource === undefined ? {} : { addressSource: this.addressSource }),
        attempts: this.failures,
        lastError: this.lastError,
        timeoutMs: this.timeoutMs,
        waitedMs: Math.round(this.millis() - this.queue.since),
      },
    );
  }

  // --- connection --------------------------------------------------------------------------

  private connect(): void {
    if (this.closedError !== null || this.socket !== null) return;
    if (this.reconnectTimer !== null) {
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = null;
    }
    const socket = net.connect({ host: this.host, port: this.port, noDelay: true });
    this.socket = socket;
    const reader = new FrameReader(
      (buf, start, end) => this.onFrame(buf, start, end),
      (reason, details) => this.protocolFailure(reason, details),
    );
    this.connectTimer = setTimeout(() => {
      this.connectTimer = null;
      this.lastError = `connect timeout after ${this.connectTimeoutMs} ms`;
      socket.destroy();
    }, this.connectTimeoutMs);
    socket.on('connect', () => {
      if (this.connectTimer !== null) {
        clearTimeout(this.connectTimer);
        this.connectTimer = null;
      }
      if (this.socket !== socket) return;
      socket.setNoDelay(true);
      this.connected = true;
      this.connects++;
      this.failures = 0;
      this.clearUnavailable();
      this.requestIncarnation(); // first: an older server closes the connection on it
      for (const c of this.control.values()) this.sendControl(c);
      if (this.queue.total !== 0 && !this.flushScheduled && this.fId === 0) {
        this.flushScheduled = true;
        setImmediate(this.flush);
      }
      if (this.active.size > 0) this.report();
    });
    socket.on('data', (chunk: Buffer) => {
      if (this.socket === socket) reader.push(chunk);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      this.lastError = err.code ?? err.message;
    });
    socket.on('close', () => {
      if (this.connectTimer !== null) {
        clearTimeout(this.connectTimer);
        this.connectTimer = null;
      }
      if (this.socket !== socket) return;
      this.onDisconnect();
    });
  }

  private onDisconnect(): void {
    const wasConnected = this.connected;
    this.socket = null;
    this.connected = false;
    if (!wasConnected) this.failures++;
    if (this.closedError !== null) return;
    this.requeueInflight();
    for (const c of this.control.values()) c.sent = false;
    if (this.queue.total !== 0) this.armUnavailable();
    this.scheduleReconnect(wasConnected);
  }

  private scheduleReconnect(immediate: boolean): void {
    if (this.reconnectTimer !== null || this.closedError !== null) return;
    const exp = Math.min(this.backoffMaxMs, this.backoffInitialMs * 2 ** Math.min(20, Math.max(0, this.failures - 1)));
    const delay = immediate ? 0 : exp * (0.5 + Math.random() / 2);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      // Reconnect only while someone needs the oracle; otherwise the next caller reconnects.
      if (this.queue.total !== 0 || this.awaitedControls() !== 0 || this.active.size !== 0) this.connect();
    }, delay);
    if (this.queue.total === 0 && this.awaitedControls() === 0) this.reconnectTimer.unref();
  }

  private dropConnection(reason: string): void {
    this.lastError = reason;
    this.socket?.destroy();
  }

  private protocolFailure(reason: string, details: Record<string, unknown>): void {
    const err = new OracleError('ORACLE_PROTOCOL', `oracle protocol error from ${this.host}:${this.port}: ${reason}`, {
      host: this.host,
      port: this.port,
      ...details,
    });
    this.failInflight(err);
    for (const c of this.control.values()) {
      if (c.sent) this.finishControl(c, err);
    }
    this.dropConnection(reason);
  }

  private onFrame(buf: Buffer, start: number, end: number): boolean {
    const version = buf[start];
    const type = buf[start + 1];
    const requestId = buf.readUInt32LE(start + 4);
    const payload = end - start - 8;
    const p = start + 8;
    if (version !== PROTOCOL_VERSION) {
      this.protocolFailure(`unknown protocol version ${version}`, { version });
      return false;
    }
    const expected = expectedPayload(type);
    if (type === MsgType.ERROR ? payload < 4 || payload !== 4 + buf.readUInt16LE(p + 2) : payload !== expected) {
      this.protocolFailure(`bad payload size ${payload} for type 0x${type.toString(16)}`, { type, payload });
      return false;
    }
    if (type === MsgType.TS_RESPONSE) {
      return this.onTsResponse(requestId, readU64(buf, p), buf.readUInt32LE(p + 8));
    }
    if (type === MsgType.WATERMARK) {
      const wm = readU64(buf, p);
      const c = this.answered(requestId, type, 'WATERMARK', wm);
      if (c === null) return false;
      if (wm > this.lastWatermark) this.lastWatermark = wm;
      if (c.isReport && c.seq > this.ackSeq) {
        this.ackSeq = c.seq;
        this.leaseAckedAt = c.sentAt;
        this.ackConnection = this.connects;
      }
      this.finishControl(c, null, wm);
      return true;
    }
    if (type === MsgType.INCARNATION) {
      const n = readU64(buf, p);
      const c = this.answered(requestId, type, 'INCARNATION', n);
      if (c === null) return false;
      this.incarnations.set(this.connects, n);
      this.incarnations.delete(this.connects - KEPT_INCARNATIONS);
      this.finishControl(c, null, n);
      return true;
    }
    if (type === MsgType.ISSUED) {
      const n = readU64(buf, p);
      const c = this.answered(requestId, type, 'ISSUED', n);
      if (c === null) return false;
      this.finishControl(c, null, n);
      return true;
    }
    if (type === MsgType.ERROR) {
      const wire = buf.readUInt16LE(p);
      const message = buf.toString('utf8', p + 4, end);
      const err = new OracleError(codeOfWire(wire), `oracle ${this.host}:${this.port}: ${message}`, {
        host: this.host,
        port: this.port,
        requestId,
        serverMessage: message,
        wireCode: wire,
      });
      if (requestId !== 0 && requestId === this.fId) {
        this.failInflight(err);
        if (this.queue.total !== 0 && !this.flushScheduled) {
          this.flushScheduled = true;
          setImmediate(this.flush);
        }
        return true;
      }
      const c = this.control.get(requestId);
      if (requestId !== 0 && c !== undefined) {
        this.finishControl(c, err);
        return true;
      }
      // Connection-level error: the server closes this connection.
      this.failInflight(err);
      this.dropConnection(message);
      return false;
    }
    this.protocolFailure(`unknown message type 0x${type.toString(16)}`, { type });
    return false;
  }

  // --- control requests: reports and watermark -------------------------------------------------

  /** `background`: nobody awaits it, so its timeout does not keep the process alive. */
  private controlRequest(
    frameOf: (id: number) => Buffer,
    isReport: boolean,
    answer: number = MsgType.WATERMARK,
    background = false,
  ): Promise<number> {
    if (this.closedError !== null) return Promise.reject(this.closedError);
    let resolve!: (value: number) => void;
    let reject!: (err: unknown) => void;
    const done = new Promise<number>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const id = this.takeId();
    const timer = setTimeout(() => {
      const c = this.control.get(id);
      if (c === undefined) return;
      this.finishControl(
        c,
        c.sent
          ? new OracleError('ORACLE_TIMEOUT', `the oracle at ${this.host}:${this.port} did not answer within ${this.timeoutMs} ms`, {
              host: this.host,
              port: this.port,
              timeoutMs: this.timeoutMs,
              requestId: id,
            })
          : this.unavailable(),
      );
    }, this.timeoutMs);
    if (background) timer.unref();
    const c: ControlRequest = { id, frameOf, resolve, reject, timer, isReport, answer, sent: false, sentAt: 0, seq: 0, done };
    this.control.set(id, c);
    if (this.connected) this.sendControl(c);
    else if (this.socket === null && this.reconnectTimer === null) this.connect();
    return done;
  }

  private sendControl(c: ControlRequest): void {
    if (c.sent || this.socket === null) return;
    c.sent = true;
    c.sentAt = this.millis();
    if (c.isReport) c.seq = ++this.reportSeq;
    this.socket.write(c.frameOf(c.id));
  }

  /** The control request a u64 answer of `type` is for; null (after a protocol failure) if none asked. */
  private answered(requestId: number, type: number, name: string, value: number): ControlRequest | null {
    const c = this.control.get(requestId);
    if (c === undefined || c.answer !== type || value < 0) {
      this.protocolFailure(`unexpected ${name} (id ${requestId})`, { requestId });
      return null;
    }
    return c;
  }

  private finishControl(c: ControlRequest, err: unknown, value = 0): void {
    this.control.delete(c.id);
    clearTimeout(c.timer);
    if (err !== null) c.reject(err);
    else c.resolve(value);
  }

  private reportFrame(id: number): Buffer {
    const min = this.active.min();
    return encodeReport(id, this.clientId, min === Number.POSITIVE_INFINITY ? null : min);
  }

  /** Control requests someone awaits (the incarnation request is the client's own). */
  private awaitedControls(): number {
    return this.control.size - (this.incarnationPending ? 1 : 0);
  }

  /** Asks which oracle incarnation this connection reached (once a connection; see `incarnations`). */
  private requestIncarnation(): void {
    if (!this.askIncarnation || this.incarnationPending) return;
    this.incarnationPending = true;
    this.controlRequest((id) => encodeIncarnationRequest(id), false, MsgType.INCARNATION, true).then(
      () => {
        this.incarnationPending = false;
      },
      (e: unknown) => {
        this.incarnationPending = false;
        // The server's answer, not a timeout or a close: it does not know the request.
        if (e instanceof OracleError && e.details.wireCode !== undefined) this.askIncarnation = false;
      },
    );
  }

  /** Whether connections `a` and `b` (their `connects` numbers) reached the same oracle incarnation. */
  private sameIncarnation(a: number, b: number): boolean {
    if (a === b) return true;
    const x = this.incarnations.get(a);
    return x !== undefined && x === this.incarnations.get(b);
  }

  /** Periodic lease renewal (fire and forget). */
  private report(): void {
    if (this.closedError !== null) return;
    if (!this.connected) {
      if (this.active.size > 0 && this.socket === null && this.reconnectTimer === null) this.connect();
      return;
    }
    for (const c of this.control.values()) if (c.isReport) return; // one report at a time
    this.controlRequest((id) => this.reportFrame(id), true).catch(() => undefined);
  }

  registerActive(startTs: number): ActiveRegistration {
    // Not a timestamp just issued: only a report can hold it (no holdback evidence).
    return this.leased(this.active.register(startTs), Number.NEGATIVE_INFINITY);
  }

  /** `reg` with `held()`: reports numbered above the current count were built after it. */
  private leased(reg: ActiveRegistration, issuedAfter: number): ActiveRegistration {
    const afterSeq = this.reportSeq;
    const connection = this.connects;
    const ts = reg.timestamp;
    return { timestamp: ts, release: reg.release, held: () => this.holds(ts, afterSeq, connection, issuedAfter) };
  }

  /**
   * Whether the oracle still holds the watermark at or below `ts` (registered when `afterSeq`
   * reports had been sent; issued after `issuedAfter`). The watermark never decreases, so:
   * - one seen above `ts` means the oracle stopped counting it: false;
   * - an acknowledged report sent after the registration counted it, and keeps counting it until
   *   the lease runs out from that report's send time: true before then;
   * - before such a report, the oracle's holdback keeps every timestamp it issued in the last
   *   holdback (more than our report interval) above the watermark: true within it;
   * - otherwise a report now settles it: it counts `ts` from its arrival on, and the watermark it
   *   returns is the highest ever handed out: at or below `ts`, nobody has used a higher one.
   * An acknowledgement is that evidence only from the oracle that issued `ts`: one restarted since
   * forgets the watermarks it handed out. So one received on a later connection than the
   * registration's is taken only if both reached the same incarnation (a network blip); after a
   * restart, or with a server that does not say, it is not (false, unless the holdback still
   * holds `ts`): the transaction runs again.
   */
  private holds(ts: number, afterSeq: number, connection: number, issuedAfter: number): boolean | Promise<boolean> {
    if (this.lastWatermark > ts) return false;
    const now = this.millis();
    if (now < issuedAfter + this.holdbackMs) return true;
    const sameOracle = () => this.sameIncarnation(this.ackConnection, connection);
    if (this.ackSeq > afterSeq && sameOracle()) return now < this.leaseAckedAt + this.leaseMs || this.confirm(ts, afterSeq, sameOracle);
    // Reconnected since: an oracle that says which incarnation it is may be the same one.
    return (this.askIncarnation || this.connects === connection) && this.confirm(ts, afterSeq, sameOracle);
  }

  /**
   * What the acknowledgement of a report built after the registration (numbered above `afterSeq`)
   * says of `ts` (see `holds`): one in flight or queued if there is one — after a stall every
   * running transaction asks at once, and one round trip answers them all — else a report now.
   */
  private confirm(ts: number, afterSeq: number, sameOracle: () => boolean): Promise<boolean> {
    let report: Promise<number> | null = null;
    for (const c of this.control.values()) {
      if (c.isReport && (!c.sent || c.seq > afterSeq)) {
        report = c.done;
        break;
      }
    }
    return (report ?? this.getWatermark()).then(() => sameOracle() && this.lastWatermark <= ts);
  }

  /** Reports this client's oldest active start timestamp and returns the oracle's watermark. */
  getWatermark(): Promise<number> {
    return this.controlRequest((id) => this.reportFrame(id), true);
  }

  /** Without reporting (a reader that holds no start timestamps). */
  getWatermarkOnly(): Promise<number> {
    return this.controlRequest((id) => encodeWatermarkRequest(id), false);
  }

  /**
   * How many timestamps the oracle has handed out, to every client, since it started: two answers
   * equal mean nobody began or committed a transaction between them (waitForQuiescence's rule).
   * Rejects as getWatermarkOnly does; a server from before ISSUED closes the connection on it.
   */
  issuedCount(): Promise<number> {
    return this.controlRequest((id) => encodeIssuedRequest(id), false, MsgType.ISSUED);
  }

  /**
   * Until when (this process's monotonic ms) the oracle is known to count this client's active
   * start timestamps: the send time of the last acknowledged report plus the lease. A
   * transaction whose lease ran out must not trust its snapshot for GC purposes.
   */
  leaseExpiresAt(): number {
    return this.leaseAckedAt + this.leaseMs;
  }

  /** The largest watermark seen from the oracle. */
  get knownWatermark(): number {
    return this.lastWatermark;
  }

  get isConnected(): boolean {
    return this.connected;
  }

  stats(): OracleClientStats {
    return {
      requests: this.requests,
      timestamps: this.timestampsReceived,
      connects: this.connects,
      connectFailures: this.failures,
      largestBatch: this.largestBatch,
    };
  }

  async close(): Promise<void> {
    if (this.closedError !== null) return;
    this.closedError = new OracleError('ORACLE_CLOSED', 'the oracle client is closed', { host: this.host, port: this.port });
    clearInterval(this.reportTimer);
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    if (this.connectTimer !== null) clearTimeout(this.connectTimer);
    this.reconnectTimer = null;
    this.connectTimer = null;
    this.failInflight(this.closedError);
    this.failQueue(this.closedError);
    for (const c of [...this.control.values()]) this.finishControl(c, this.closedError);
    const socket = this.socket;
    this.socket = null;
    this.connected = false;
    if (socket !== null) {
      await new Promise<void>((resolve) => {
        socket.once('close', () => resolve());
        socket.destroy();
      });
    }
  }
}
