/**
 * The JSON form of the project's typed errors (`toJSON` of TxnError, StoreError, OracleError,
 * LockServiceError, ObserverFailure, ObserverAbandoned): what a structured logger or
 * `JSON.stringify(err)` records.
 *
 * Why: an Error's `message` and `stack` are not enumerable, so `JSON.stringify` of one of ours
 * gave its code and details but not what happened; and the evidence's row keys are bytes, which
 * JSON spells as an object of indices (`{"0":114,"1":49}`). Here every byte string in the
 * evidence becomes text: the key itself when it is printable ASCII and does not start with `0x`,
 * else `0x` and its hex — the same rule as the command line's printed keys (src/cli/printable.ts),
 * so a key read from a log can be passed back to `percolator get`.
 *
 * Invariants: never throws (a log line must not fail); cycles and depth are cut (`[cycle]`,
 * `[…]`); a cause is rendered by the same rules, its own cause too, to a bounded depth.
 */

const MAX_DEPTH = 6;

export interface ErrorJson {
  readonly name: string;
  readonly code?: string;
  readonly message: string;
  readonly retryable?: boolean;
  readonly details?: unknown;
  readonly cause?: unknown;
}

/** Text for a byte string: printable ASCII as is (unless it starts with `0x`), else `0x` + hex. */
export function bytesText(b: Uint8Array): string {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const latin1 = buf.toString('latin1');
  return /^[\x20-\x7e]*$/.test(latin1) && !latin1.startsWith('0x') ? latin1 : `0x${buf.toString('hex')}`;
}

/** `err`'s JSON form (header). */
export function errorJson(err: Error): ErrorJson {
  return errorAt(err, new Set(), 0);
}

function errorAt(err: Error, seen: Set<object>, depth: number): ErrorJson {
  seen.add(err);
  try {
    return fieldsOf(err, seen, depth);
  } finally {
    seen.delete(err);
  }
}

function fieldsOf(err: Error, seen: Set<object>, depth: number): ErrorJson {
  const e = err as Error & { code?: unknown; retryable?: unknown; details?: unknown };
  const out: { -readonly [K in keyof ErrorJson]: ErrorJson[K] } = { name: err.name, message: err.message };
  if (typeof e.code === 'string') out.code = e.code;
  if (typeof e.retryable === 'boolean') out.retryable = e.retryable;
  if (e.details !== undefined) out.details = valueAt(e.details, seen, depth + 1);
  if (err.cause !== undefined) out.cause = valueAt(err.cause, seen, depth + 1);
  return out;
}

function valueAt(v: unknown, seen: Set<object>, depth: number): unknown {
  if (v instanceof Uint8Array) return bytesText(v);
  if (typeof v === 'bigint') return v.toString();
  if (v === null || typeof v !== 'object') return typeof v === 'function' || typeof v === 'symbol' ? String(v) : v;
  if (seen.has(v)) return '[cycle]';
  if (depth > MAX_DEPTH) return '[…]';
  if (v instanceof Error) return errorAt(v, seen, depth);
  seen.add(v);
  try {
    const own = (v as { toJSON?: unknown }).toJSON;
    if (typeof own === 'function') return valueAt(own.call(v), seen, depth + 1); // a Date, say
    if (Array.isArray(v)) return v.map((x) => valueAt(x, seen, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = valueAt(x, seen, depth + 1);
    return out;
  } catch {
    return '[unreadable]'; // a getter that throws: the log line still goes out
  } finally {
    seen.delete(v);
  }
}
