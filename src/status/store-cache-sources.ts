/**
 * Status numbers of an embedded store's row caches (`AtomicRowsStore.cacheStats`): what
 * `--row-cache-mib` buys, on every page whose process holds the store — `percolator serve`'s
 * /dashboard/, a `percolator worker --http-port` on `file:` or `memory:`, the demo.
 *
 * The keys are named so that a status page's /metrics (`prometheusText`) gives the same names as
 * the server's own /metrics (src/server/metrics.ts): `storeRowLookups{answered=…}` is the counter
 * family `percolator_store_row_lookups_total{answered="…"}`, `storeRowCacheBytes` the gauge
 * `percolator_store_row_cache_bytes`. A process without such a store (`bigtable://`) has none of
 * these keys and no chart for them.
 */
import { LOOKUP_ANSWERS, type LookupAnswer, type StoreCacheStats } from '../store/store.js';
import type { ChartSpec, StatusSample } from './types.js';

const lookupsKey = (answered: LookupAnswer) => `storeRowLookups{answered=${answered}}`;

/** The counters and gauges of `stats`, to merge into a sample. */
export function storeCacheSample(stats: StoreCacheStats): Required<Pick<StatusSample, 'counters' | 'gauges'>> {
  const counters: Record<string, number> = {};
  for (const a of LOOKUP_ANSWERS) counters[lookupsKey(a)] = stats.lookups[a];
  return {
    counters,
    gauges: {
      storeRowCacheBytes: stats.decoded.bytes,
      storeRowCacheBudgetBytes: stats.decoded.budgetBytes,
      storeRowCacheRows: stats.decoded.rows,
    },
  };
}

export const ROW_LOOKUPS_CHART: ChartSpec = {
  title: 'Row lookups per second, by what answered them (embedded store)',
  unit: '/s',
  series: [
    { key: `counters.${lookupsKey('decoded')}`, label: 'decoded rows cached' },
    { key: `counters.${lookupsKey('encoded')}`, label: 'encoded rows cached' },
    { key: `counters.${lookupsKey('absent')}`, label: 'absent (key filter)' },
    { key: `counters.${lookupsKey('engine')}`, label: 'engine reads (LevelDB on file:)' },
  ],
};
