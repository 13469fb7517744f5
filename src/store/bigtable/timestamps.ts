/**
 * Our timestamps ↔ wire timestamps (docs/bigtable-backend.md, "Timestamps").
 *
 * Ours are microseconds as safe integers (< 2^53). On the wire they are int64 microseconds,
 * sent as decimal strings so nothing passes through a lossy double:
 *   wire = ours × scale        (scale 1: a local server; scale 1000: Cloud Bigtable)
 *   ours = floor(wire / scale)
 * With scale 1000 every wire timestamp is a multiple of 1000, as Cloud Bigtable's millisecond
 * granularity demands, and ours × 1000 < 2^53 × 1000 < 2^63 stays exact in int64.
 *
 * `millisOnly` says the server stores only millisecond timestamps (Cloud Bigtable, the
 * emulator) while we send wire = ours (scale 1). Then:
 * - a setCell timestamp must be a multiple of 1000 (checked by the caller, INVALID_TIMESTAMP);
 * - range bounds (filters, deleteFromColumn) are rounded UP to the next millisecond. That is
 *   exact, not an approximation: every stored timestamp is a multiple of 1000, and for such ts,
 *   ts ≥ s ⟺ ts ≥ ceil(s) and ts < e ⟺ ts < ceil(e).
 */
import { StoreError } from '../errors.js';

/** An int64 as the gapic layer hands it over (string with the default decoding). */
export type WireInt64 = string | number | bigint | { toString(): string } | null | undefined;

const MAX_INT64 = (1n << 63n) - 1n;

export class TimestampMapping {
  private readonly big: bigint;

  constructor(
    readonly scale: 1 | 1000,
    readonly millisOnly: boolean,
  ) {
    this.big = BigInt(scale);
  }

  /** Whether a setCell timestamp must be a multiple of 1000 (our units). */
  get requiresMillis(): boolean {
    return this.scale === 1 && this.millisOnly;
  }

  /** A cell timestamp (≥ 0) to the wire. */
  toWire(t: number): string {
    return (BigInt(t) * this.big).toString();
  }

  /** A range bound (≥ 0; 0 = unbounded for ends) to the wire, rounded up to ms if needed. */
  boundToWire(t: number): bigint {
    let w = BigInt(t) * this.big;
    if (this.millisOnly && w % 1000n !== 0n) w += 1000n - (w % 1000n);
    if (w > MAX_INT64) w = MAX_INT64 - (MAX_INT64 % 1000n);
    return w;
  }

  /** A wire timestamp to ours (floor division). Beyond 2^53 after scaling: DATA_CORRUPTED. */
  fromWire(w: WireInt64): number {
    if (w === null || w === undefined) return 0;
    let v: bigint;
    try {
      v = typeof w === 'bigint' ? w : BigInt(typeof w === 'number' ? Math.trunc(w) : w.toString());
    } catch {
      throw new StoreError('DATA_CORRUPTED', `the server sent a timestamp that is not an integer: ${String(w)}`, { timestamp: String(w) });
    }
    const t = v < 0n ? 0n : v / this.big;
    if (t > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new StoreError(
        'DATA_CORRUPTED',
        `a cell timestamp of ${v} µs on the wire is beyond 2^53 µs after ÷${this.scale}: was the table written with timestampScale=1000?`,
        { timestamp: v.toString(), scale: this.scale },
      );
    }
    return Number(t);
  }

  /**
   * A [start, end) range (ours; end 0 or absent = infinity) to wire bounds, or null when the range
   * is empty on the wire (start ≥ end after rounding).
   */
  rangeToWire(start: number | undefined, end: number | undefined): { start: bigint; end: bigint } | null {
    const s = this.boundToWire(start ?? 0);
    const e = end === undefined || end === 0 ? 0n : this.boundToWire(end);
    if (e !== 0n && s >= e) return null;
    return { start: s, end: e };
  }
}

/** Milliseconds × 1000 of a µs clock reading (what "server time" means in Bigtable). */
export function truncateToMillis(micros: number): number {
  return Math.floor(micros / 1000) * 1000;
}
