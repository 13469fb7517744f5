/**
 * Typed timestamp-oracle errors. Every error has a stable uppercase `code` (what callers and tests
 * match on) and the evidence as `details` (host, port, attempts, elapsed time, request id, the
 * offending value…), following the pattern of `src/store/errors.ts`.
 *
 * Invariant: an operation that rejects with one of these handed out no timestamp to its caller
 * (timestamps the server may have reserved for a failed request are simply never used, which is
 * harmless: the oracle guarantees uniqueness and order, not density).
 */
import { type ErrorJson, errorJson } from '../util/error-json.js';

export type OracleErrorCode =
  /** No connection to the oracle could be made / kept within the request timeout. */
  | 'ORACLE_UNAVAILABLE'
  /** Connected, but the oracle did not answer within the request timeout. */
  | 'ORACLE_TIMEOUT'
  /** A malformed frame, an unknown protocol version or message type, a frame too large. */
  | 'ORACLE_PROTOCOL'
  /** A well-formed request with a bad argument (batch size 0 or above the cap…). */
  | 'ORACLE_BAD_REQUEST'
  /**
   * A constructor's argument or option of the wrong type or out of its range, or a name it does not
   * take (`Oracle.open`, `startOracleServer`, `new OracleClient`, the mark stores; `details.option`).
   * Found before anything is opened, bound or connected; never sent on the wire.
   */
  | 'ORACLE_INVALID_OPTION'
  /** The client or the oracle was closed. */
  | 'ORACLE_CLOSED'
  /** The durable mark is unreadable: never silently treated as 0. */
  | 'ORACLE_MARK_CORRUPTED'
  /** Reading or persisting the durable mark failed (I/O error, store error). */
  | 'ORACLE_MARK_IO'
  /** Another live process holds the mark (two oracles on one mark would repeat timestamps). */
  | 'ORACLE_MARK_LOCKED'
  /** The next timestamp would not be a safe integer (< 2^53). */
  | 'ORACLE_EXHAUSTED'
  /**
   * `startOracleServer` could not bind its address (in use, not ours to take, no such address;
   * host, port, errno): the code `percolator serve` and `demo --serve` give their ports too.
   */
  | 'LISTEN_FAILED';

export class OracleError extends Error {
  readonly code: OracleErrorCode;
  /** Evidence: whatever identifies the failure (host, port, attempts, elapsedMs, requestId…). */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: OracleErrorCode, message: string, details: Record<string, unknown> = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = 'OracleError';
    this.code = code;
    this.details = details;
  }

  /** Message, code and evidence (util/error-json.ts). */
  toJSON(): ErrorJson {
    return errorJson(this);
  }
}

export function isOracleError(e: unknown, code?: OracleErrorCode): e is OracleError {
  return e instanceof OracleError && (code === undefined || e.code === code);
}

/** Numeric error codes carried by ERROR frames on the wire (see `protocol.ts`). */
export const WireErrorCode = {
  PROTOCOL: 1,
  BAD_REQUEST: 2,
  UNAVAILABLE: 3,
  EXHAUSTED: 4,
  CLOSED: 5,
} as const;

export function wireCodeOf(code: OracleErrorCode): number {
  switch (code) {
    case 'ORACLE_PROTOCOL':
      return WireErrorCode.PROTOCOL;
    case 'ORACLE_BAD_REQUEST':
      return WireErrorCode.BAD_REQUEST;
    case 'ORACLE_EXHAUSTED':
      return WireErrorCode.EXHAUSTED;
    case 'ORACLE_CLOSED':
      return WireErrorCode.CLOSED;
    default:
      return WireErrorCode.UNAVAILABLE;
  }
}

export function codeOfWire(wire: number): OracleErrorCode {
  switch (wire) {
    case WireErrorCode.PROTOCOL:
      return 'ORACLE_PROTOCOL';
    case WireErrorCode.BAD_REQUEST:
      return 'ORACLE_BAD_REQUEST';
    case WireErrorCode.EXHAUSTED:
      return 'ORACLE_EXHAUSTED';
    case WireErrorCode.CLOSED:
      return 'ORACLE_CLOSED';
    default:
      return 'ORACLE_UNAVAILABLE';
  }
}
