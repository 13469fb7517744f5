import { describe, expect, it } from 'vitest';
import { ROW_LOOKUPS_CHART } from '../status/store-cache-sources.js';
import { prometheusText } from '../status/server.js';
import { sampleServer } from './dashboard.js';
import type { ServerStatus } from './server.js';

function status(storeCache: ServerStatus['storeCache']): ServerStatus {
  return {
    server: { uptimeSeconds: 1, store: 'memory:', grpc: '127.0.0.1:1', oracle: null, shuttingDown: false, storeWriteFailure: null },
    grpc: { requests: 5, errors: 1, cancelled: 0, inflight: 2, requestsPerSecond: 0 },
    rows: { read: 3, written: 4, readPerSecond: 0, writtenPerSecond: 0 },
    oracle: null,
    locks: { held: 0 },
    storeCache,
  };
}

describe('the serve dashboard sample', () => {
  it("charts the row lookups by what answered them, under the names of the server's /metrics; none for a store without caches", () => {
    const lookups = { total: 10, decoded: 6, encoded: 2, absent: 1, engine: 1 };
    const s = sampleServer(status({ decoded: { budgetBytes: 8, bytes: 5, rows: 2 }, encoded: { budgetBytes: 0 }, lookups }));
    expect(s.counters?.requests).toBe(5);
    const charted = ROW_LOOKUPS_CHART.series.map((x) => s.counters?.[x.key.replace(/^counters\./, '')]);
    expect(charted).toEqual([6, 2, 1, 1]);
    const text = prometheusText(s);
    for (const [answered, n] of [
      ['decoded', 6],
      ['encoded', 2],
      ['absent', 1],
      ['engine', 1],
    ] as const)
      expect(text).toContain(`percolator_store_row_lookups_total{answered="${answered}"} ${n}\n`);
    for (const line of [
      'percolator_store_row_cache_bytes 5',
      'percolator_store_row_cache_budget_bytes 8',
      'percolator_store_row_cache_rows 2',
    ])
      expect(text.split('\n')).toContain(line);
    const without = sampleServer(status(null));
    expect(Object.keys({ ...without.counters, ...without.gauges }).filter((k) => k.startsWith('storeRow'))).toEqual([]);
  });
});
