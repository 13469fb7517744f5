/**
 * Typed store errors. Every error has a stable uppercase `code` (what callers and tests match on)
 * and the evidence as fields. `grpcStatus` is the Cloud Bigtable status the server maps it to.
 *
 * Invariant: an operation that throws one of these for bad input has written nothing.
 */
import { type ErrorJson, errorJson } from '../util/error-json.js';

/** gRPC status codes used by the mapping (numbers from grpc/status.proto). */
export const GrpcStatus = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  FAILED_PRECONDITION: 9,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
  DATA_LOSS: 15,
  INTERNAL: 13,
} as const;

export type StoreErrorCode =
  | 'TABLE_NOT_FOUND'
  | 'TABLE_EXISTS'
  | 'FAMILY_NOT_FOUND'
  | 'FAMILY_EXISTS'
  | 'INVALID_NAME'
  | 'EMPTY_ROW_KEY'
  | 'ROW_KEY_TOO_LARGE'
  | 'VALUE_TOO_LARGE'
  | 'TOO_MANY_MUTATIONS'
  | 'INVALID_MUTATION'
  | 'INVALID_TIMESTAMP'
  | 'INVALID_FILTER'
  | 'INVALID_REGEX'
  | 'INVALID_RANGE'
  | 'INVALID_ARGUMENT'
  /** An increment of a cell whose value is not 8 bytes (a big-endian int64): the request is valid, the data is not. */
  | 'NOT_AN_INT64'
  | 'INVALID_STORE_URL'
  | 'STORE_CLOSED'
  | 'STORE_LOCKED'
  /** A directory named as a store's is not one: it holds files the store did not write (so nothing is removed), or no database where one must exist (so nothing is created). */
  | 'NOT_A_STORE'
  | 'DATA_CORRUPTED'
  /** A server refused the call's credentials (`percolator serve --auth-token`): retrying cannot help. */
  | 'UNAUTHENTICATED'
  | 'IO_ERROR';

const statusOf: Record<StoreErrorCode, number> = {
  TABLE_NOT_FOUND: GrpcStatus.NOT_FOUND,
  TABLE_EXISTS: GrpcStatus.ALREADY_EXISTS,
  FAMILY_NOT_FOUND: GrpcStatus.NOT_FOUND,
  FAMILY_EXISTS: GrpcStatus.ALREADY_EXISTS,
  INVALID_NAME: GrpcStatus.INVALID_ARGUMENT,
  EMPTY_ROW_KEY: GrpcStatus.INVALID_ARGUMENT,
  ROW_KEY_TOO_LARGE: GrpcStatus.INVALID_ARGUMENT,
  VALUE_TOO_LARGE: GrpcStatus.INVALID_ARGUMENT,
  TOO_MANY_MUTATIONS: GrpcStatus.INVALID_ARGUMENT,
  INVALID_MUTATION: GrpcStatus.INVALID_ARGUMENT,
  INVALID_TIMESTAMP: GrpcStatus.INVALID_ARGUMENT,
  INVALID_FILTER: GrpcStatus.INVALID_ARGUMENT,
  INVALID_REGEX: GrpcStatus.INVALID_ARGUMENT,
  INVALID_RANGE: GrpcStatus.INVALID_ARGUMENT,
  INVALID_ARGUMENT: GrpcStatus.INVALID_ARGUMENT,
  // Cloud Bigtable's status for it (googleapis/google-cloud-go#1455).
  NOT_AN_INT64: GrpcStatus.FAILED_PRECONDITION,
  INVALID_STORE_URL: GrpcStatus.INVALID_ARGUMENT,
  STORE_CLOSED: GrpcStatus.UNAVAILABLE,
  STORE_LOCKED: GrpcStatus.UNAVAILABLE,
  NOT_A_STORE: GrpcStatus.FAILED_PRECONDITION,
  DATA_CORRUPTED: GrpcStatus.DATA_LOSS,
  UNAUTHENTICATED: GrpcStatus.UNAUTHENTICATED,
  IO_ERROR: GrpcStatus.INTERNAL,
};

/** Whether `s` is one of the codes above (a code that travelled over the wire, say). */
export function isStoreErrorCode(s: string): s is StoreErrorCode {
  return Object.hasOwn(statusOf, s);
}

export class StoreError extends Error {
  readonly code: StoreErrorCode;
  /** Evidence: table, row key (hex), family, sizes… whatever identifies the offending input. */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: StoreErrorCode, message: string, details: Record<string, unknown> = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StoreError';
    this.code = code;
    this.details = details;
  }

  get grpcStatus(): number {
    return statusOf[this.code];
  }

  /** Message, code and evidence, row keys as text (util/error-json.ts). */
  toJSON(): ErrorJson {
    return errorJson(this);
  }
}

export function isStoreError(e: unknown, code?: StoreErrorCode): e is StoreError {
  return e instanceof StoreError && (code === undefined || e.code === code);
}

/** Hex of a key for error messages, shortened so huge keys do not flood logs. */
export function keyHex(key: Uint8Array): string {
  const hex = Buffer.from(key.buffer, key.byteOffset, Math.min(key.byteLength, 64)).toString('hex');
  return key.byteLength > 64 ? `${hex}…(${key.byteLength} bytes)` : hex;
}
