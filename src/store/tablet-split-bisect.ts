/**
 * Where to split a tablet without reading its rows: a bisection over the row-key space guided by
 * the engine's approximate sizes of key ranges (LevelDB's GetApproximateSizes: offsets found in
 * the table files' index blocks, no data block read), then one seek for the first row at or after
 * the key found.
 *
 * Why: the exact split (tablet-split-point.ts) streams every row of the tablet through the JS
 * thread twice. For a 64 MiB tablet that was seconds of the one thread the whole store shares —
 * the slowdown in the ninth tenth of a 100 000-document web index run (BENCHMARKS.md).
 *
 * Approximate by design: the sizes are of compressed table files at block granularity and leave
 * out what is still in the memtable, so the halves are near half, not exactly half. Tablet
 * boundaries only place work (scanners, samples); no read or write depends on where they are.
 * The caller decides whether the estimate covers enough of the tablet to be used (see
 * tablet-split.ts) and falls back to the exact split when it does not.
 *
 * Concurrency: the probes may see writes landing meanwhile; any key strictly between the
 * tablet's first and last rows is a valid boundary, and that is all this returns.
 */
import { compareBytes } from './bytes.js';

/** What the bisection asks of the engine, in row keys of one tablet (all locality groups). */
export interface TabletProbe {
  /** Approximate bytes of the tablet's rows with keys in [from, to). */
  size(from: Uint8Array, to: Uint8Array): Promise<number>;
  /** The tablet's first row key at or after `key` (any group), or null. */
  firstRowFrom(key: Uint8Array): Promise<Uint8Array | null>;
  /** The tablet's last row key (any group), or null when it is empty. */
  lastRow(): Promise<Uint8Array | null>;
}

export interface BisectedSplit {
  /** The first row of the right half. */
  readonly key: Uint8Array;
  /** The estimated share of the tablet's bytes left of `key`, in (0, 1). */
  readonly leftShare: number;
  /** The estimated bytes of the whole tablet the share is of. */
  readonly total: number;
  /** Size probes made (for tests and benchmarks). */
  readonly probes: number;
}

/** Stop once the left side is within this share of the tablet from half. */
const TOLERANCE = 1 / 32;
/** Each probe halves the key interval; 40 halvings is a 2^-40 sliver of it. */
const MAX_PROBES = 40;

/**
 * Returns null when the tablet has fewer than two rows, or when the engine's estimate of the
 * tablet is below `minTotal` bytes (mostly in the memtable: the estimate would place the split
 * by a small part of the rows).
 */
export async function bisectSplitPoint(probe: TabletProbe, start: Uint8Array, minTotal: number): Promise<BisectedSplit | null> {
  const first = await probe.firstRowFrom(start);
  const last = await probe.lastRow();
  if (first === null || last === null || compareBytes(first, last) >= 0) return null;
  // Rows at or after `last` are the last row alone: sizing [first, last) and bisecting inside it
  // keeps every candidate strictly between the first and the last row.
  const total = await probe.size(first, last);
  let probes = 1;
  if (total < minTotal || total <= 0) return null;
  const target = total / 2;
  let lo = first;
  let hi = last;
  let best: { key: Uint8Array; below: number } | null = null;
  while (probes < MAX_PROBES) {
    const mid = midKey(lo, hi);
    if (mid === null) break;
    const below = await probe.size(first, mid);
    probes++;
    if (best === null || Math.abs(below - target) < Math.abs(best.below - target)) best = { key: mid, below };
    if (Math.abs(below - target) <= total * TOLERANCE) break;
    if (below < target) lo = mid;
    else hi = mid;
  }
  if (best === null) return null;
  const key = await probe.firstRowFrom(best.key);
  // The first row at or after a key above `first` and at most `last`: never the first row, and
  // there is always one (the last row), unless rows were deleted meanwhile.
  if (key === null || compareBytes(key, first) <= 0) return null;
  const leftShare = Math.min(1 - TOLERANCE, Math.max(TOLERANCE, best.below / total));
  return { key, leftShare, total, probes };
}

/**
 * A key strictly between lo and hi (lo < hi, byte order), near the middle of the keys between
 * them; null when this finds none (hi is lo followed by zero bytes only — then the bisection
 * has narrowed as far as it usefully can). The keys are read as base-256 fractions, padded
 * with zero bytes to the longer one's length; a byte more is used when they are adjacent at that
 * length, so keys grow only as the interval narrows.
 */
export function midKey(lo: Uint8Array, hi: Uint8Array): Uint8Array | null {
  if (compareBytes(lo, hi) >= 0) return null;
  for (let n = Math.max(lo.length, hi.length); n <= Math.max(lo.length, hi.length) + 1; n++) {
    const a = toNumber(lo, n);
    const b = toNumber(hi, n);
    const m = (a + b) >> 1n;
    // m > a read back as bytes is > lo (at their first difference, or lo is its prefix), and
    // m < b is < hi (the difference cannot fall in hi's zero padding).
    if (m > a) return fromNumber(m, n);
  }
  return null;
}

function toNumber(key: Uint8Array, n: number): bigint {
  let v = 0n;
  for (let i = 0; i < n; i++) v = (v << 8n) | BigInt(i < key.length ? (key[i] as number) : 0);
  return v;
}

function fromNumber(v: bigint, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = n - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}
