/**
 * The charts of `percolator serve`, at `/dashboard/` on its HTTP port: the live status page of
 * src/status (the same one `percolator demo --serve` shows), fed with the server's own numbers —
 * gRPC requests and errors, rows read and written, timestamps handed out, calls in flight, locks
 * held, and how the embedded store's row lookups were answered (its caches or LevelDB: what
 * `--row-cache-mib` buys). Observer activity lives in the worker processes, not here.
 */
import { createStatusHandler } from '../status/server.js';
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
  {
    title: 'Row lookups per second, by what answered them (embedded store)',
    unit: '/s',
    series: [
      { key: 'counters.lookupsDecoded', label: 'decoded rows cached' },
      { key: 'counters.lookupsEncoded', label: 'encoded rows cached' },
      { key: 'counters.lookupsAbsent', label: 'absent (key filter)' },
      { key: 'counters.lookupsEngine', label: 'LevelDB reads' },
    ],
  },
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
  const l = s.storeCache?.lookups;
  return {
    counters: {
      requests: s.grpc.requests,
      errors: s.grpc.errors,
      rowsRead: s.rows.read,
      rowsWritten: s.rows.written,
      timestamps: s.oracle?.timestamps ?? 0,
      lookupsDecoded: l?.decoded ?? 0,
      lookupsEncoded: l?.encoded ?? 0,
      lookupsAbsent: l?.absent ?? 0,
      lookupsEngine: l?.engine ?? 0,
    },
    gauges: { inflight: s.grpc.inflight, locksHeld: s.locks.held, oracleConnections: s.oracle?.connections ?? null },
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
