/**
 * In-process counters of the web index, for progress bars and the live status page. They are
 * observations, not results: observer bodies call them before their transaction commits, so a
 * retried run may report twice; each event is therefore deduplicated by (document, fetch) among
 * the last `remember` events of its kind (a retry follows its first run closely; sets that grew
 * to 200 000 keys before they were cleared fit the ~30 MiB a 30-minute soak's heap grew by). The
 * authoritative numbers (summary, --json) are read back from the store (stats.ts).
 */
import { FifoSet } from '../../util/fifo-set.js';

/** Events remembered per kind for deduplication: ~5 MiB of keys at most. */
const REMEMBERED_EVENTS = 50_000;

export class WebIndexMetrics {
  loaded = 0;
  deleted = 0;
  processed = 0;
  indexed = 0;
  private readonly seenIndexed: FifoSet<string>;
  private readonly seenUnchanged: FifoSet<string>;
  /** Recent crawl-to-index latencies (ms), a ring of the last `capacity`. */
  private readonly latencies: number[] = [];
  private next = 0;

  constructor(
    private readonly capacity = 10_000,
    remember = REMEMBERED_EVENTS,
  ) {
    this.seenIndexed = new FifoSet(remember);
    this.seenUnchanged = new FifoSet(remember);
  }

  onLoaded(n = 1): void {
    this.loaded += n;
  }

  onDeleted(n = 1): void {
    this.deleted += n;
  }

  /** Fetches processed whose content changed nothing (they never become "newly" searchable). */
  unchanged = 0;

  /** The processor handled a fetch; `unchanged` when it left the document's index entry as it was. */
  onProcessed(url?: string, fetchedAt?: number, unchanged = false): void {
    this.processed++;
    if (!unchanged || url === undefined) return;
    const key = `${fetchedAt}\u0000${url}`;
    if (this.seenUnchanged.has(key)) return;
    this.seenUnchanged.add(key);
    this.unchanged++;
  }

  /** Loaded fetches not yet searchable and not known to change nothing. */
  get outstanding(): number {
    return this.loaded - this.indexed - this.unchanged;
  }

  /** A document version became searchable `latencyMs` after its crawl. */
  onIndexed(url: string, fetchedAt: number, latencyMs: number): void {
    const key = `${fetchedAt}\u0000${url}`;
    if (this.seenIndexed.has(key)) return;
    this.seenIndexed.add(key);
    this.indexed++;
    if (this.latencies.length < this.capacity) this.latencies.push(latencyMs);
    else this.latencies[this.next] = latencyMs;
    this.next = (this.next + 1) % this.capacity;
  }

  /** Median and 99th percentile of the recent latencies (null when none yet). */
  latencyPercentiles(): { medianMs: number; p99Ms: number } | null {
    if (this.latencies.length === 0) return null;
    const sorted = [...this.latencies].sort((a, b) => a - b);
    return { medianMs: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99) };
  }
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return sorted[i] as number;
}
