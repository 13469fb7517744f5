/**
 * gRPC statuses from a Bigtable server → StoreError (stable codes).
 *
 * 1. `percolator serve` names the exact code: trailing metadata `percolator-error-code` for call
 *    errors, a `google.rpc.ErrorInfo` detail (domain "percolator", reason = code) for per-entry
 *    MutateRows statuses. When present, that code wins.
 * 2. Otherwise by status and message (Cloud Bigtable, the emulator):
 *    NOT_FOUND → TABLE_NOT_FOUND (FAMILY_NOT_FOUND if the message is about a family);
 *    ALREADY_EXISTS → TABLE_EXISTS / FAMILY_EXISTS; INVALID_ARGUMENT → INVALID_ARGUMENT, refined
 *    for timestamps, regexes, filters and families; the emulator's UNKNOWN/INTERNAL "unknown
 *    family" / "invalid timestamp" messages → FAMILY_NOT_FOUND / INVALID_TIMESTAMP; transport and
 *    server trouble (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, …) → IO_ERROR.
 * The original status code and message stay in `details` (grpcCode, grpcMessage).
 */
import { StoreError, type StoreErrorCode, isStoreErrorCode } from '../errors.js';

export const ERROR_CODE_METADATA = 'percolator-error-code';
const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';

export const Status = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

/** Transient statuses worth retrying for idempotent work. */
export function isRetryable(code: number): boolean {
  return code === Status.UNAVAILABLE || code === Status.DEADLINE_EXCEEDED || code === Status.ABORTED;
}

/**
 * A call that failed because its connection did: UNAVAILABLE (reset, dropped, not established),
 * not a status the server chose for the request (`percolator serve`'s own UNAVAILABLE codes —
 * STORE_CLOSED, STORE_LOCKED — come with the code trailer, and are not this). The request may or
 * may not have been applied; sending it again is for requests that may run twice.
 */
export function isConnectionFailure(e: unknown): boolean {
  const err = e as { code?: unknown; metadata?: unknown } | null;
  return err !== null && typeof err === 'object' && err.code === Status.UNAVAILABLE && codeFromMetadata(err.metadata) === undefined;
}

/** Minimal protobuf reader for `google.rpc.ErrorInfo { string reason = 1; string domain = 2; }`. */
function decodeErrorInfo(buf: Uint8Array): { reason?: string; domain?: string } {
  const out: { reason?: string; domain?: string } = {};
  let i = 0;
  const varint = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (i >= buf.length) throw new Error('truncated');
      const b = buf[i++] as number;
      v += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return v;
      mul *= 128;
    }
  };
  try {
    while (i < buf.length) {
      const tag = varint();
      const field = Math.floor(tag / 8);
      const wire = tag & 7;
      if (wire === 2) {
        const len = varint();
        const s = Buffer.from(buf.subarray(i, i + len)).toString('utf8');
        i += len;
        if (field === 1) out.reason = s;
        else if (field === 2) out.domain = s;
      } else if (wire === 0) varint();
      else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else break;
    }
  } catch {
    // ignore malformed details
  }
  return out;
}

interface AnyDetail {
  type_url?: string;
  typeUrl?: string;
  value?: Uint8Array | null;
}

/** The percolator code carried in a google.rpc.Status's details, if any. */
export function codeFromStatusDetails(details: readonly AnyDetail[] | null | undefined): StoreErrorCode | undefined {
  for (const d of details ?? []) {
    const url = d.type_url ?? d.typeUrl;
    if (url === ERROR_INFO_TYPE && d.value) {
      const info = decodeErrorInfo(d.value);
      if (info.domain === 'percolator' && info.reason !== undefined && isStoreErrorCode(info.reason)) return info.reason;
    }
  }
  return undefined;
}

function codeFromMetadata(metadata: unknown): StoreErrorCode | undefined {
  const md = metadata as { get?: (k: string) => unknown[] } | undefined;
  if (md === undefined || md === null || typeof md.get !== 'function') return undefined;
  const v = md.get(ERROR_CODE_METADATA)[0];
  const s = typeof v === 'string' ? v : v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : undefined;
  return s !== undefined && isStoreErrorCode(s) ? s : undefined;
}

function guess(code: number, message: string): StoreErrorCode {
  const m = message.toLowerCase();
  switch (code) {
    case Status.NOT_FOUND:
      return /famil/.test(m) && !/table .* not found/.test(m) ? 'FAMILY_NOT_FOUND' : 'TABLE_NOT_FOUND';
    case Status.ALREADY_EXISTS:
      return /famil/.test(m) ? 'FAMILY_EXISTS' : 'TABLE_EXISTS';
    case Status.UNAUTHENTICATED:
      return 'UNAUTHENTICATED';
    case Status.INVALID_ARGUMENT:
    case Status.UNKNOWN:
    case Status.INTERNAL:
    case Status.FAILED_PRECONDITION:
    case Status.OUT_OF_RANGE:
      if (/unknown (column )?family|family .*(not found|does not exist)|no such family/.test(m)) return 'FAMILY_NOT_FOUND';
      if (/timestamp/.test(m)) return 'INVALID_TIMESTAMP';
      if (/regex|regexp|error parsing/.test(m)) return 'INVALID_REGEX';
      if (/filter/.test(m)) return 'INVALID_FILTER';
      if (/row key|rowkey/.test(m) && /empty/.test(m)) return 'EMPTY_ROW_KEY';
      if (code === Status.FAILED_PRECONDITION && /increment/.test(m)) return 'NOT_AN_INT64';
      if (code === Status.INVALID_ARGUMENT || code === Status.FAILED_PRECONDITION || code === Status.OUT_OF_RANGE)
        return 'INVALID_ARGUMENT';
      if (/increment|non-64-bit|mutation/.test(m)) return 'INVALID_ARGUMENT';
      return 'IO_ERROR';
    default:
      return 'IO_ERROR';
  }
}

/**
 * gax's account of a unary call it gave up retrying: `Exceeded maximum number of retries retrying
 * error Error: 14 UNAVAILABLE: <what> before any response was received : Previous errors : [<each
 * attempt again>]` (or `Total timeout of API … exceeded N milliseconds …`). Group 1 is `<what>`.
 */
const GAX_GAVE_UP =
  /^(?:Exceeded maximum number of retries|Total timeout of API \S+ exceeded \d+ milliseconds)\s+retrying error (?:\w*Error: )?(?:\d+ [A-Z_]+: )?([\s\S]*?)\s*(?:Resolution note:\s*)?before any response was received[\s\S]*$/;

/**
 * The message without our code as its prefix, nor grpc-js's empty "Resolution note: " at its end;
 * a call gax gave up retrying says what failed, once (its whole text stays in `details.grpcMessage`:
 * a worker over a `percolator serve` that restarts logged ~600 characters of it a line).
 */
function readableMessage(message: string, code: StoreErrorCode): string {
  const text = message.startsWith(`${code}: `) ? message.slice(code.length + 2) : message;
  const gaveUp = GAX_GAVE_UP.exec(text);
  if (gaveUp !== null && gaveUp[1] !== '') return `${gaveUp[1]} (retries exhausted)`;
  return text.replace(/\s*Resolution note:\s*$/, '');
}

/** A status (call error or MutateRows entry) → StoreError. */
export function statusToStoreError(
  grpcCode: number,
  message: string,
  context: Record<string, unknown>,
  known?: StoreErrorCode,
  cause?: unknown,
): StoreError {
  const code = known ?? guess(grpcCode, message);
  const text = readableMessage(message, code) || `gRPC status ${grpcCode}`;
  return new StoreError(code, text, { ...context, grpcCode, grpcMessage: message }, cause === undefined ? undefined : { cause });
}

/** Any error thrown by the gapic client → StoreError (StoreErrors pass through). */
export function toStoreError(e: unknown, context: Record<string, unknown>): StoreError {
  if (e instanceof StoreError) return e;
  const err = e as { code?: unknown; details?: unknown; message?: unknown; metadata?: unknown; statusDetails?: unknown } | null;
  if (err !== null && typeof err === 'object' && typeof err.code === 'number') {
    const message = typeof err.details === 'string' && err.details !== '' ? err.details : String(err.message ?? '');
    return statusToStoreError(err.code, message, context, codeFromMetadata(err.metadata), e);
  }
  const message = e instanceof Error ? e.message : String(e);
  return new StoreError('IO_ERROR', `Bigtable request failed: ${message}`, context, { cause: e });
}
