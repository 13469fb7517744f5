/**
 * The charts of `percolator serve`, at `/dashboard/` on its HTTP port: the live status page of
 * src/status (the same one `percolator demo --serve` shows), fed with the server's own numbers —
 * gRPC requests and errors, rows read and written, timestamps handed out, calls in flight, locks
 * held, and how the embedded store's row lookups were answered (its caches or LevelDB: what
 * `--row-cache-mib` buys). Observer activity lives in the worker processes, not here.
 */
import { createStatusHandler } from '../status/server.js';
import { ROW_LOOKUPS_CHART, storeCacheSample } from '../status/store-cache-sources.js';
import type { ChartSpec, HeadlineSpec, StatusSample } from '../status/types.js';
import type { HttpRoute } from './http-status.js';
import type { ServerStatus } from './server.js';

const CHARTS: readonly ChartSpec[] = [
  {
    title: 'gRPC requests per second',
    unit: '/s',
    series: [
      { key: 'counters.requests', label: 'requests' },
      { key: 'counters.errors', label: 'errors' },
    ],
  },
  {
    title: 'Rows per second',
    unit: '/s',
    series: [
      { key: 'counters.rowsRead', label: 'read' },
      { key: 'counters.rowsWritten', label: 'written' },
    ],
  },
  ROW_LOOKUPS_CHART,
  { title: 'Timestamps per second (oracle)', unit: '/s', series: [{ key: 'counters.timestamps', label: 'timestamps' }] },
  {
    title: 'In flight',
    series: [
      { key: 'gauges.inflight', label: 'gRPC calls' },
      { key: 'gauges.locksHeld', label: 'advisory locks held' },
      { key: 'gauges.oracleConnections', label: 'oracle connections' },
    ],
  },
];

const HEADLINE: readonly HeadlineSpec[] = [
  { key: 'counters.requests', label: 'requests/s' },
  { key: 'counters.rowsWritten', label: 'rows written/s' },
  { key: 'counters.timestamps', label: 'timestamps/s' },
  { key: 'counters.rowsWritten', label: 'rows written', total: true },
];

export function sampleServer(s: ServerStatus): StatusSample {
  const cache = s.storeCache === null ? null : storeCacheSample(s.storeCache);
  return {
    counters: {
      requests: s.grpc.requests,
      errors: s.grpc.errors,
      rowsRead: s.rows.read,
      rowsWritten: s.rows.written,
      timestamps: s.oracle?.timestamps ?? 0,
      ...cache?.counters,
    },
    gauges: {
      inflight: s.grpc.inflight,
      locksHeld: s.locks.held,
      oracleConnections: s.oracle?.connections ?? null,
      ...cache?.gauges,
    },
  };
}

/** The `/dashboard/*` route and a `close` that stops its sampling. */
export function dashboardRoute(status: () => ServerStatus, intervalMs = 1_000): { route: HttpRoute; close(): Promise<void> } {
  const handler = createStatusHandler({
    sources: { title: 'percolator serve', sample: () => sampleServer(status()), charts: CHARTS, headline: HEADLINE },
    intervalMs,
    links: [{ href: '../', label: '← Status' }],
  });
  return {
    route: {
      path: '/dashboard/*',
      title: 'dashboard (charts)',
      handler: async (req, res, url) => {
        // The page fetches `status.json` relative to itself: it must be served from /dashboard/.
        if (url.pathname === '/dashboard') {
          res.writeHead(301, { location: `/dashboard/${url.search}` });
          res.end();
          return;
        }
        await handler.handle(req, res, url.pathname.slice('/dashboard'.length));
      },
    },
    close: () => handler.close(),
  };
}
