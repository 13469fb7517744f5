/**
 * Errors → gRPC statuses. One place decides what a client sees:
 * - `ServerError` (bad request shape, unsupported feature): its own code and message;
 * - `StoreError`: `err.grpcStatus` and `CODE: message`; the stable code also travels in the
 *   trailing metadata `percolator-error-code` (and, for per-entry MutateRows statuses, in a
 *   `google.rpc.ErrorInfo` detail with `reason` = the code, `domain` = "percolator"), so a
 *   client can rebuild the exact StoreError. It is the caller's evidence, not a bug here, so it is
 *   not logged: a failed write (IO_ERROR, answered INTERNAL) makes the store refuse writes,
 *   which the server logs once when it starts and once when it ends (server.ts);
 * - anything else is a bug: INTERNAL, logged with its stack, never rethrown.
 */
import { Metadata, status } from '@grpc/grpc-js';
import { isStoreError } from '../store/errors.js';

export const ERROR_CODE_METADATA = 'percolator-error-code';
export const ERROR_DOMAIN = 'percolator';

export class ServerError extends Error {
  constructor(
    readonly grpcCode: status,
    message: string,
    /** A stable uppercase code for clients (`percolator-error-code`), e.g. INVALID_ARGUMENT. */
    readonly code: string = status[grpcCode] ?? 'UNKNOWN',
  ) {
    super(message);
    this.name = 'ServerError';
  }
}

export function invalidArgument(message: string): ServerError {
  return new ServerError(status.INVALID_ARGUMENT, message);
}

export function unimplemented(message: string): ServerError {
  return new ServerError(status.UNIMPLEMENTED, message);
}

export interface TranslatedError {
  readonly code: status;
  readonly details: string;
  /** Stable code, e.g. TABLE_NOT_FOUND, or INTERNAL. */
  readonly errorCode: string;
  /** True when the error was unexpected (a bug) and should be logged. */
  readonly unexpected: boolean;
}

export function translateError(e: unknown): TranslatedError {
  if (e instanceof ServerError) return { code: e.grpcCode, details: e.message, errorCode: e.code, unexpected: false };
  if (isStoreError(e)) {
    // Answered, not logged (see the header).
    return { code: e.grpcStatus as status, details: `${e.code}: ${e.message}`, errorCode: e.code, unexpected: false };
  }
  const message = e instanceof Error ? e.message : String(e);
  return { code: status.INTERNAL, details: `internal error: ${message}`, errorCode: 'INTERNAL', unexpected: true };
}

/** A grpc-js service error (what callbacks and `emit('error')` take), with the code trailer. */
export function toServiceError(t: TranslatedError): { code: status; details: string; metadata: Metadata } {
  const metadata = new Metadata();
  metadata.set(ERROR_CODE_METADATA, t.errorCode);
  return { code: t.code, details: t.details, metadata };
}

// ---------------------------------------------------------------------------------------------
// google.rpc.Status with an ErrorInfo detail, hand-encoded (the client's descriptor set does not
// include google/rpc/error_details.proto). Used for per-entry MutateRows results.

const ERROR_INFO_TYPE_URL = 'type.googleapis.com/google.rpc.ErrorInfo';

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

function lengthDelimited(field: number, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from([(field << 3) | 2, ...varint(payload.byteLength)]), payload]);
}

/** Serialized `google.rpc.ErrorInfo { reason, domain }`. */
export function encodeErrorInfo(reason: string, domain = ERROR_DOMAIN): Buffer {
  return Buffer.concat([lengthDelimited(1, Buffer.from(reason, 'utf8')), lengthDelimited(2, Buffer.from(domain, 'utf8'))]);
}

/** A `google.rpc.Status` object for proto-loader serialization. */
// Note: the descriptor set spells google.protobuf.Any's field `type_url` (snake case).
export function rpcStatus(t: TranslatedError): { code: number; message: string; details: { type_url: string; value: Buffer }[] } {
  return { code: t.code, message: t.details, details: [{ type_url: ERROR_INFO_TYPE_URL, value: encodeErrorInfo(t.errorCode) }] };
}
