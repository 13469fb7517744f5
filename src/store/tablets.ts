/**
 * Tablets (Bigtable §5): a table's rows are partitioned into contiguous row ranges whose sizes
 * are tracked approximately (bytes added minus bytes removed by writes). When a tablet grows past
 * the split threshold, the store splits it at the row where half its bytes lie. Boundaries are
 * persisted in the catalog; sizes are persisted with them and are approximate after a crash
 * (only the boundaries matter for correctness, and none of them does for data).
 *
 * `starts[0]` is always the empty key (the table's beginning); tablet i holds [starts[i], starts[i+1]).
 */
import { compareBytes } from './bytes.js';
import type { RowKeySample } from './types.js';

export interface TabletsJson {
  readonly starts: string[]; // base64
  readonly bytes: number[];
}

export class Tablets {
  readonly starts: Uint8Array[];
  readonly bytes: number[];
  /** Indexes whose split is being computed, so one tablet is not split twice at once. */
  readonly splitting = new Set<Uint8Array>();

  constructor(json?: TabletsJson) {
    this.starts = json ? json.starts.map((s) => new Uint8Array(Buffer.from(s, 'base64'))) : [new Uint8Array(0)];
    this.bytes = json ? json.bytes.slice() : [0];
  }

  toJSON(): TabletsJson {
    return { starts: this.starts.map((s) => Buffer.from(s).toString('base64')), bytes: this.bytes.slice() };
  }

  /** Index of the tablet holding `key`. */
  find(key: Uint8Array): number {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (compareBytes(this.starts[mid] as Uint8Array, key) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Adds a size delta; returns the tablet index. */
  account(key: Uint8Array, delta: number): number {
    const i = this.find(key);
    this.bytes[i] = Math.max(0, (this.bytes[i] as number) + delta);
    return i;
  }

  /** End key of tablet i (exclusive), or undefined for the last. */
  end(i: number): Uint8Array | undefined {
    return this.starts[i + 1];
  }

  /** Inserts a boundary inside tablet i at `key` with the measured sizes of both halves. */
  split(i: number, key: Uint8Array, leftBytes: number, rightBytes: number): boolean {
    const start = this.starts[i] as Uint8Array;
    const end = this.end(i);
    if (compareBytes(key, start) <= 0 || (end !== undefined && compareBytes(key, end) >= 0)) return false;
    this.starts.splice(i + 1, 0, key);
    this.bytes.splice(i, 1, leftBytes, rightBytes);
    return true;
  }

  /** Removes every boundary inside [from, to) (used when a range of rows is dropped). */
  reset(): void {
    this.starts.splice(1);
    this.bytes.splice(0, this.bytes.length, 0);
  }

  samples(): RowKeySample[] {
    const out: RowKeySample[] = [];
    let offset = 0;
    for (let i = 0; i < this.starts.length; i++) {
      offset += this.bytes[i] as number;
      out.push({ key: this.end(i) ?? new Uint8Array(0), offsetBytes: offset });
    }
    return out;
  }
}
