/**
 * Turns a RowSet into the scan plan: sorted, disjoint half-open key intervals [gte, lt), with
 * single keys marked as points so they are served by a point read instead of an iterator.
 * An empty bound (absent or zero-length bytes, as in the v2 protos) is unbounded.
 */
import { compareBytes } from './bytes.js';
import { keySuccessor } from './key-layout.js';
import type { RowRange, RowSet } from './types.js';
import { validateRowRange } from './validate.js';

export interface KeyInterval {
  readonly gte?: Uint8Array;
  readonly lt?: Uint8Array;
  /** Set when the interval holds exactly this one key. */
  readonly point?: Uint8Array;
}

function nonEmpty(b: Uint8Array | undefined): Uint8Array | undefined {
  return b !== undefined && b.byteLength > 0 ? b : undefined;
}

function toInterval(r: RowRange): KeyInterval {
  const sc = nonEmpty(r.startKeyClosed);
  const so = nonEmpty(r.startKeyOpen);
  const ec = nonEmpty(r.endKeyClosed);
  const eo = nonEmpty(r.endKeyOpen);
  const gte = sc ?? (so ? keySuccessor(so) : undefined);
  const lt = ec ? keySuccessor(ec) : eo;
  return { gte, lt };
}

/** Lower bound order with undefined = -∞. */
function cmpStart(a: Uint8Array | undefined, b: Uint8Array | undefined): number {
  if (a === undefined) return b === undefined ? 0 : -1;
  if (b === undefined) return 1;
  return compareBytes(a, b);
}

/** Upper bound order with undefined = +∞. */
function cmpEnd(a: Uint8Array | undefined, b: Uint8Array | undefined): number {
  if (a === undefined) return b === undefined ? 0 : 1;
  if (b === undefined) return -1;
  return compareBytes(a, b);
}

export function planRowSet(rows: RowSet | undefined, table: string): KeyInterval[] {
  const keys = rows?.rowKeys ?? [];
  const ranges = rows?.rowRanges ?? [];
  if (keys.length === 0 && ranges.length === 0) return [{}];
  const intervals: KeyInterval[] = [];
  for (const k of keys) {
    if (k.byteLength === 0) continue; // the empty key names no row
    intervals.push({ gte: k, lt: keySuccessor(k), point: k });
  }
  for (const r of ranges) {
    validateRowRange(r, table);
    const iv = toInterval(r);
    if (iv.gte !== undefined && iv.lt !== undefined && compareBytes(iv.gte, iv.lt) >= 0) continue;
    intervals.push(iv);
  }
  intervals.sort((a, b) => cmpStart(a.gte, b.gte));
  const out: KeyInterval[] = [];
  for (const iv of intervals) {
    const last = out[out.length - 1];
    // Merge when overlapping or touching (last.lt >= iv.gte).
    if (last !== undefined && (last.lt === undefined || iv.gte === undefined || compareBytes(last.lt, iv.gte) >= 0)) {
      // Already covered (e.g. a repeated key): keep `last` as it is, point marker included.
      if (cmpEnd(last.lt, iv.lt) >= 0) continue;
      out[out.length - 1] = { gte: last.gte, lt: iv.lt };
    } else {
      out.push(iv);
    }
  }
  return out;
}

export function intervalContains(iv: KeyInterval, key: Uint8Array): boolean {
  return (iv.gte === undefined || compareBytes(key, iv.gte) >= 0) && (iv.lt === undefined || compareBytes(key, iv.lt) < 0);
}
