/**
 * Plumbing shared by every gRPC service of `percolator serve`:
 * - `unary` / `serverStream` turn `async (request, call) => …` functions into grpc-js handlers
 *   that never throw and never leave a call unanswered: a `MalformedRequest` (undecodable
 *   protobuf) gets INVALID_ARGUMENT, errors go through `translateError` (StoreError →
 *   `grpcStatus`; unexpected → INTERNAL, logged with the stack);
 * - `writeWithBackpressure` respects `call.write()` flow control: when it returns false we wait
 *   for 'drain' (or for the call to end), so a slow reader never makes the server buffer a
 *   whole scan;
 * - `serverInterceptor` checks the bearer token on the call's metadata BEFORE the request
 *   message is read or decoded, and records per-method metrics from the status that is sent
 *   (so rejected, malformed and unimplemented calls are counted too).
 *
 * Concurrency contract: single JS thread; each call is independent; a handler's promise may
 * outlive a cancelled call (writes to a cancelled call are dropped by grpc-js).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import {
  type handleServerStreamingCall,
  type handleUnaryCall,
  type Metadata,
  ServerInterceptingCall,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  type ServerUnaryCall,
  type ServerWritableStream,
  status,
} from '@grpc/grpc-js';
import type { ServerMetrics } from './metrics.js';
import { MalformedRequest } from './protos.js';
import { invalidArgument, toServiceError, translateError } from './status.js';

export type Logger = (line: string) => void;

export interface HandlerContext {
  readonly log: Logger;
}

type AnyUnaryCall = ServerUnaryCall<unknown, unknown>;
type AnyStreamCall = ServerWritableStream<unknown, unknown>;

function fail(ctx: HandlerContext, method: string, e: unknown): ReturnType<typeof toServiceError> {
  const t = translateError(e);
  if (t.unexpected) {
    ctx.log(`${method}: unexpected error (answered ${status[t.code]}): ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  }
  return toServiceError(t);
}

function malformed(req: MalformedRequest): Error {
  return invalidArgument(`malformed request message: ${req.reason}`);
}

export function unary<Req, Res>(
  ctx: HandlerContext,
  method: string,
  impl: (req: Req, call: AnyUnaryCall) => Promise<Res>,
): handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    const req = call.request;
    let p: Promise<Res>;
    try {
      p = req instanceof MalformedRequest ? Promise.reject(malformed(req)) : impl(req as Req, call);
    } catch (e) {
      p = Promise.reject(e);
    }
    p.then(
      (res) => callback(null, res),
      (e: unknown) => callback(fail(ctx, method, e), null),
    );
  };
}

export function serverStream<Req>(
  ctx: HandlerContext,
  method: string,
  impl: (req: Req, call: AnyStreamCall) => Promise<void>,
): handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    const req = call.request;
    let p: Promise<void>;
    try {
      p = req instanceof MalformedRequest ? Promise.reject(malformed(req)) : impl(req as Req, call);
    } catch (e) {
      p = Promise.reject(e);
    }
    p.then(
      () => {
        if (!call.cancelled) call.end();
      },
      (e: unknown) => {
        const err = fail(ctx, method, e);
        if (!call.cancelled) call.emit('error', err);
      },
    );
  };
}

/**
 * Writes one message; resolves true when the caller may write more, false when the call is
 * over (cancelled, closed or failed) and the caller should stop producing.
 */
export function writeWithBackpressure(call: AnyStreamCall, message: unknown): Promise<boolean> | boolean {
  if (call.cancelled || call.destroyed || call.writableEnded) return false;
  if (call.write(message)) return true;
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => () => {
      call.off('drain', onDrain);
      call.off('cancelled', onEnd);
      call.off('close', onEnd);
      call.off('error', onEnd);
      resolve(ok && !call.cancelled);
    };
    const onDrain = done(true);
    const onEnd = done(false);
    call.on('drain', onDrain);
    call.on('cancelled', onEnd);
    call.on('close', onEnd);
    call.on('error', onEnd);
  });
}

// ---------------------------------------------------------------------------------------------
// Auth + metrics interceptor

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** Constant-time check of `authorization: Bearer <token>` values against the expected token. */
export function bearerMatches(values: readonly unknown[], expected: Buffer): boolean {
  let ok = false;
  for (const v of values) {
    if (typeof v !== 'string') continue;
    const m = /^Bearer\s+(.+)$/i.exec(v.trim());
    if (m !== null && timingSafeEqual(digest(m[1] as string), expected)) ok = true;
  }
  return ok;
}

export function tokenDigest(token: string): Buffer {
  return digest(token);
}

/** `/google.bigtable.v2.Bigtable/ReadRows` → `Bigtable.ReadRows`. */
export function shortMethodName(path: string): string {
  const m = /^\/(?:[\w.]*\.)?(\w+)\/(\w+)$/.exec(path);
  return m === null ? path : `${m[1]}.${m[2]}`;
}

/**
 * Tracks calls between their start and their status, and refuses new ones while draining
 * (graceful shutdown: new calls get UNAVAILABLE, in-flight ones finish).
 */
export class CallTracker {
  private active = 0;
  private draining = false;
  private idleWaiters: (() => void)[] = [];

  get inflight(): number {
    return this.active;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  started(): void {
    this.active++;
  }

  finished(): void {
    this.active--;
    if (this.active === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Refuses new calls from now on; resolves once no call is in flight. */
  drain(): Promise<void> {
    this.draining = true;
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}

export function serverInterceptor(options: { metrics: ServerMetrics; authToken?: string; tracker?: CallTracker }): ServerInterceptor {
  const expected = options.authToken === undefined ? null : tokenDigest(options.authToken);
  const metrics = options.metrics;
  const tracker = options.tracker ?? new CallTracker();
  return (methodDescriptor, call: ServerInterceptingCallInterface) => {
    const method = shortMethodName(methodDescriptor.path);
    const started = performance.now();
    metrics.callStarted();
    tracker.started();
    let finished = false;
    const finish = (code: status): void => {
      if (finished) return;
      finished = true;
      tracker.finished();
      metrics.callFinished(method, status[code] ?? String(code), (performance.now() - started) / 1000);
    };
    const intercepting: ServerInterceptingCall = new ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: (metadata: Metadata, mdNext: (m: Metadata) => void) => {
            if (tracker.isDraining) {
              intercepting.sendStatus({ code: status.UNAVAILABLE, details: 'the server is shutting down' });
              return;
            }
            if (expected !== null && !bearerMatches(metadata.get('authorization'), expected)) {
              intercepting.sendStatus({
                code: status.UNAUTHENTICATED,
                details: 'missing or wrong bearer token (metadata "authorization: Bearer <token>")',
              });
              return;
            }
            mdNext(metadata);
          },
          onCancel: () => finish(status.CANCELLED),
        });
      },
      sendStatus: (st, next) => {
        finish(st.code);
        next(st);
      },
    });
    return intercepting;
  };
}
