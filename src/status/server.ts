/**
 * The live status page: an HTTP server (127.0.0.1 by default) that samples its sources once per
 * interval, keeps a bounded history, and serves
 *   GET /             the dashboard (charts drawn by the page from /status.json, polled each second)
 *   GET /status.json  title, chart specs, totals and history
 *   GET /metrics      the latest sample in the Prometheus text format
 *   GET /search?q=…   a search page (when the sources can search), /api/search?q=… its JSON
 *
 * Invariants: sampling is the server's job, so open pages cost nothing extra; a failing source
 * never stops the server (the error is shown on the page and sampling continues); memory is
 * bounded by `historySize` points.
 */
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { type HeaderLink, SEARCH_LIMIT_MAX, dashboardHtml, escapeHtml, searchHtml } from './page.js';
import type { ChartSpec, HeadlineSpec, HistoryPoint, StatusDocument, StatusSample, StatusSources } from './types.js';
import { listen } from '../util/listen.js';

export interface StatusServerOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number;
  readonly host?: string;
  readonly sources: StatusSources;
  /** Sampling interval. Default 1 000 ms. */
  readonly intervalMs?: number;
  /** Points kept. Default 600 (10 minutes at 1 s). */
  readonly historySize?: number;
  /** Links in the dashboard's header (before Search), e.g. back to the server's own page. */
  readonly links?: readonly HeaderLink[];
}

export interface StatusServer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Default charts for a sample: every counter as a rate, every gauge, observer latency. */
export function defaultCharts(sample: StatusSample): ChartSpec[] {
  const charts: ChartSpec[] = [];
  for (const k of Object.keys(sample.counters ?? {}))
    charts.push({ title: `${k} per second`, unit: '/s', series: [{ key: `counters.${k}` }] });
  for (const k of Object.keys(sample.gauges ?? {})) charts.push({ title: k, series: [{ key: `gauges.${k}` }] });
  if (sample.observers !== undefined)
    charts.push({ title: 'Observer latency (mean per interval)', unit: 'ms', series: [{ key: 'observers.*' }] });
  return charts;
}

/** The status page's sampling and request handling, without a server of its own. */
export interface StatusHandler {
  /** Serves `pathname` (`/`, `/status.json`, `/metrics`, `/search`, `/api/search`). */
  handle(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void>;
  /** Stops sampling. */
  close(): Promise<void>;
}

/**
 * Starts sampling `options.sources` and returns a request handler for the status page, for
 * servers that mount it under a path of their own (`percolator serve` serves it at /dashboard/).
 */
export function createStatusHandler(options: Omit<StatusServerOptions, 'port' | 'host'>): StatusHandler {
  const sources = options.sources;
  const intervalMs = options.intervalMs ?? 1_000;
  const historySize = options.historySize ?? 600;
  const history: HistoryPoint[] = [];
  let previous: { t: number; sample: StatusSample } | null = null;
  // The charts a source names are read at each request (they may change: a worker's, once its
  // store is open); the default ones are made from the first sample.
  let defaults: readonly ChartSpec[] = [];
  const headline: readonly HeadlineSpec[] = sources.headline ?? [];
  let totals: Record<string, number> = {};
  let lastError: string | null = null;
  let latest: StatusSample = {};

  const takeSample = async (): Promise<void> => {
    let sample: StatusSample;
    try {
      sample = await sources.sample();
      lastError = null;
    } catch (e) {
      lastError = e instanceof Error ? e.message : String(e);
      return;
    }
    const t = Date.now();
    latest = sample;
    if (sources.charts === undefined && defaults.length === 0) defaults = defaultCharts(sample);
    const v: Record<string, number | null> = {};
    const dt = previous === null ? 0 : (t - previous.t) / 1000;
    totals = {};
    for (const [k, x] of Object.entries(sample.counters ?? {})) {
      totals[`counters.${k}`] = x;
      const before = previous?.sample.counters?.[k];
      v[`counters.${k}`] = dt > 0 && before !== undefined ? Math.max(0, (x - before) / dt) : null;
    }
    for (const [k, x] of Object.entries(sample.gauges ?? {})) {
      v[`gauges.${k}`] = x;
      if (x !== null) totals[`gauges.${k}`] = x;
    }
    for (const [k, o] of Object.entries(sample.observers ?? {})) {
      const before = previous?.sample.observers?.[k];
      const runs = o.runs - (before?.runs ?? 0);
      v[`observers.${k}`] = before !== undefined && runs > 0 ? (o.totalMs - before.totalMs) / runs : null;
      totals[`observers.${k}`] = o.runs > 0 ? o.totalMs / o.runs : 0;
    }
    previous = { t, sample };
    history.push({ t, v });
    if (history.length > historySize) history.splice(0, history.length - historySize);
  };

  let sampling: Promise<void> = takeSample();
  const timer = setInterval(() => {
    sampling = sampling.then(takeSample);
  }, intervalMs);
  timer.unref();

  const statusDocument = (): StatusDocument => ({
    title: sources.title ?? 'Percolator',
    now: Date.now(),
    intervalMs,
    charts: sources.charts ?? defaults,
    headline,
    totals,
    history,
    searchEnabled: sources.search !== undefined,
    error: lastError,
  });

  const send = (res: ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
    res.end(body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://status.local');
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain', 'method not allowed\n');
    switch (pathname) {
      case '/':
        return send(
          res,
          200,
          'text/html; charset=utf-8',
          dashboardHtml(sources.title ?? 'Percolator', sources.search !== undefined, options.links),
        );
      case '/status.json':
        return send(res, 200, 'application/json', JSON.stringify(statusDocument()));
      case '/metrics':
        return send(res, 200, 'text/plain; version=0.0.4', prometheusText(latest));
      case '/search':
      case '/api/search': {
        if (sources.search === undefined) return send(res, 404, 'text/plain', 'search is not enabled\n');
        const q = url.searchParams.get('q') ?? '';
        const limit = Math.min(SEARCH_LIMIT_MAX, Math.max(1, Number(url.searchParams.get('limit') ?? 10) || 10));
        let result = null;
        let error: string | null = null;
        if (q.trim() !== '') {
          try {
            result = await sources.search(q, limit);
          } catch (e) {
            error = e instanceof Error ? e.message : String(e);
          }
        }
        if (url.pathname === '/api/search') {
          return send(
            res,
            error === null ? 200 : 500,
            'application/json',
            JSON.stringify(error === null ? { query: q, ...(result ?? { total: 0, tookMs: 0, hits: [] }) } : { error }),
          );
        }
        return send(
          res,
          200,
          'text/html; charset=utf-8',
          searchHtml(sources.title ?? 'Percolator', q, result, error, sources.searchExamples?.() ?? []),
        );
      }
      default:
        return send(res, 404, 'text/html; charset=utf-8', `<p>not found: ${escapeHtml(url.pathname)}</p>`);
    }
  };

  return {
    handle: (req, res, pathname) =>
      handle(req, res, pathname).catch((e: unknown) => {
        if (!res.headersSent) send(res, 500, 'text/plain', `${e instanceof Error ? e.message : String(e)}\n`);
        else res.end();
      }),
    close: async () => {
      clearInterval(timer);
      await sampling.catch(() => undefined);
    },
  };
}

/**
 * Starts the status page's server. Throws LISTEN_FAILED (host, port, role 'HTTP', the system's
 * reason) when the port cannot be bound, with nothing left running.
 */
export async function startStatusServer(options: StatusServerOptions): Promise<StatusServer> {
  const handler = createStatusHandler(options);
  const server = createServer((req, res) => {
    void handler.handle(req, res, new URL(req.url ?? '/', 'http://status.local').pathname);
  });
  const host = options.host ?? '127.0.0.1';
  const port = await listen(server, options.port ?? 0, host).catch(async (e: unknown) => {
    await handler.close();
    throw listenFailed(host, options.port ?? 0, e);
  });
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/`,
    port,
    close: async () => {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A status port that cannot be bound, as `percolator serve` reports its own (server/server.ts): one typed line. */
function listenFailed(host: string, port: number, e: unknown): Error {
  const message = e instanceof Error ? e.message : String(e);
  return Object.assign(new Error(`cannot listen on ${host}:${port} (HTTP): ${message}`), {
    code: 'LISTEN_FAILED',
    host,
    port,
    role: 'HTTP',
    cause: e,
  });
}

/** A camelCase key as a Prometheus name: `latencyP99Ms` → `latency_p99_ms` (a capital after a digit starts a word too). */
const metricName = (s: string) =>
  s
    .replace(/[^a-zA-Z0-9_]/g, '_')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase();

/** A label value in the exposition format: backslash, double quote and newline escaped. */
const labelValue = (v: string) => v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));

/**
 * Lines of one kind of series. A key `name{label=value}` is one series of a labelled family (see
 * StatusSample); the family's `# TYPE` line comes once, before its first series.
 */
function exposition(lines: string[], entries: [string, number | null][], type: 'counter' | 'gauge'): void {
  const typed = new Set<string>();
  for (const [k, v] of entries) {
    if (v === null) continue;
    const labelled = /^([^{]+)\{([a-zA-Z_][a-zA-Z0-9_]*)=([^}]*)\}$/.exec(k);
    const n = `percolator_${metricName(labelled?.[1] ?? k)}${type === 'counter' ? '_total' : ''}`;
    if (!typed.has(n)) lines.push(`# TYPE ${n} ${type}`);
    typed.add(n);
    lines.push(labelled === null ? `${n} ${v}` : `${n}{${labelled[2]}="${labelValue(labelled[3] ?? '')}"} ${v}`);
  }
}

/** The latest sample as Prometheus text exposition. */
export function prometheusText(sample: StatusSample): string {
  const lines: string[] = [];
  exposition(lines, Object.entries(sample.counters ?? {}), 'counter');
  exposition(lines, Object.entries(sample.gauges ?? {}), 'gauge');
  const obs = Object.entries(sample.observers ?? {});
  if (obs.length > 0) {
    lines.push('# TYPE percolator_observer_runs_total counter');
    for (const [k, o] of obs) lines.push(`percolator_observer_runs_total{observer="${k.replace(/["\\\n]/g, '_')}"} ${o.runs}`);
    lines.push('# TYPE percolator_observer_run_seconds_total counter');
    for (const [k, o] of obs)
      lines.push(`percolator_observer_run_seconds_total{observer="${k.replace(/["\\\n]/g, '_')}"} ${o.totalMs / 1000}`);
  }
  return `${lines.join('\n')}\n`;
}
