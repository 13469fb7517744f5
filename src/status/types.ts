/**
 * What a live status page shows and where the numbers come from. A source is sampled once per
 * interval by the server (never by the page), so any number of open pages costs one sample.
 */

/**
 * One reading of the system. A counter or gauge key `name{label=value}` is one series of a
 * labelled family: /metrics gives `percolator_name{label="value"}` (`_total` for a counter), so
 * that a page's metrics can carry the names a server's registry gives (store-cache-sources.ts).
 */
export interface StatusSample {
  /** Monotonic totals (commits, documents indexed, timestamps…): charted as a rate per second. */
  readonly counters?: Readonly<Record<string, number>>;
  /** Current values (notifications pending, latency percentiles…): charted as they are. */
  readonly gauges?: Readonly<Record<string, number | null>>;
  /** Per-observer cumulative runs and run time: charted as mean latency per interval. */
  readonly observers?: Readonly<Record<string, { readonly runs: number; readonly totalMs: number }>>;
}

/** A series of a chart: `counters.x` (a rate), `gauges.x`, or `observers.*` (every observer). */
export interface SeriesSpec {
  readonly key: string;
  readonly label?: string;
}

export interface ChartSpec {
  readonly title: string;
  readonly unit?: string;
  readonly series: readonly SeriesSpec[];
}

/** A big number at the top of the page: the latest value of a series key (see SeriesSpec). */
export interface HeadlineSpec {
  readonly key: string;
  readonly label: string;
  /** Show the counter's total instead of its rate. */
  readonly total?: boolean;
  readonly unit?: string;
}

export interface SearchHitView {
  readonly url: string;
  readonly title: string;
  readonly snippet?: string;
  readonly score?: number;
  readonly size?: number;
  readonly latencyMs?: number | null;
}

export interface SearchView {
  /** The words searched for, when the source says: none means the query had nothing to search for. */
  readonly terms?: readonly string[];
  readonly total: number;
  readonly tookMs: number;
  readonly hits: readonly SearchHitView[];
}

export interface StatusSources {
  readonly title?: string;
  sample(): StatusSample | Promise<StatusSample>;
  /** Charts to draw; default: one per counter and gauge, and one for observer latency. */
  readonly charts?: readonly ChartSpec[];
  readonly headline?: readonly HeadlineSpec[];
  /** Enables the search page. */
  search?(query: string, limit: number): Promise<SearchView>;
  /** Queries the search page offers as examples (asked at each page view: they may come once the index is built). */
  searchExamples?(): readonly string[];
}

/** One point of history: series key → value (null = no data in that interval). */
export interface HistoryPoint {
  readonly t: number;
  readonly v: Readonly<Record<string, number | null>>;
}

/** The JSON the page polls. */
export interface StatusDocument {
  readonly title: string;
  readonly now: number;
  readonly intervalMs: number;
  readonly charts: readonly ChartSpec[];
  readonly headline: readonly HeadlineSpec[];
  readonly totals: Readonly<Record<string, number>>;
  readonly history: readonly HistoryPoint[];
  readonly searchEnabled: boolean;
  /** Last sampling error, if the source failed. */
  readonly error: string | null;
}
