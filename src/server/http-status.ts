/**
 * The HTTP side of `percolator serve`: `/healthz`, `/metrics` (Prometheus text format),
 * `/status.json` and a small auto-refreshing status page at `/`. Other parts of the project
 * add pages through `extraRoutes` (at start) or `addRoute` (later), e.g. the web-index demo's
 * live page: `startHttpStatus({ port, host, extraRoutes: [{ path: '/webindex/*', title:
 * 'Web index', handler }] })`. Routes with a `title` are linked from the status page.
 *
 * Auth: with `authToken`, every request except `/healthz` (and routes marked `public`) needs
 * `Authorization: Bearer <token>` or `?token=<token>` (for browsers; the page passes it on to
 * its own fetches). Otherwise 401.
 *
 * Invariants: a handler that throws or rejects gets a 500 (logged), never a crash; `/healthz`
 * answers 503, with the reason, while `unhealthy()` gives one (shutdown in progress, a store that
 * refuses writes). Binds 127.0.0.1 by default.
 * `close()` stops listening and closes idle and active connections.
 */
import { timingSafeEqual } from 'node:crypto';
import * as http from 'node:http';
import type { Registry } from 'prom-client';
import { tokenDigest } from './handlers.js';
import { NO_FAVICON } from '../status/page.js';
import { listen } from '../util/listen.js';

export interface HttpRoute {
  /** An exact path (`/webindex`), or a prefix when it ends in `/*` (`/webindex/*`). */
  readonly path: string;
  /** Methods served; default GET and HEAD. */
  readonly methods?: readonly string[];
  /** Link text on the status page (routes without one are not linked). */
  readonly title?: string;
  /** Serve without the bearer token (like /healthz). Default false. */
  readonly public?: boolean;
  handler(req: http.IncomingMessage, res: http.ServerResponse, url: URL): void | Promise<void>;
}

export interface HttpStatusOptions {
  /** Default 0 (ephemeral; read it back from the result). */
  readonly port?: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  readonly extraRoutes?: readonly HttpRoute[];
  readonly authToken?: string;
  /** Served at /metrics (404 without one). */
  readonly registry?: Registry;
  /** The numbers shown on the status page and at /status.json. */
  readonly status?: () => unknown | Promise<unknown>;
  /** Page title. Default "percolator serve". */
  readonly title?: string;
  /** Why /healthz answers 503, or null: it answers 200 (default always). */
  readonly unhealthy?: () => string | null;
  readonly log?: (line: string) => void;
}

export interface HttpStatusServer {
  readonly host: string;
  readonly port: number;
  /** Adds (or replaces, by path) a route while running. */
  addRoute(route: HttpRoute): void;
  close(): Promise<void>;
}

function matches(route: HttpRoute, pathname: string): boolean {
  if (route.path.endsWith('/*')) {
    const base = route.path.slice(0, -2);
    return pathname === base || pathname.startsWith(`${base}/`);
  }
  return pathname === route.path;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function statusPage(title: string, links: { path: string; title: string }[]): string {
  const nav = links.map((l) => `<a href="${escapeHtml(l.path.replace(/\/\*$/, '/'))}">${escapeHtml(l.title)}</a>`).join(' · ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">${NO_FAVICON}
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.3em} table{border-collapse:collapse;min-width:min(28em,100%)}
td{padding:.25em .8em;border-bottom:1px solid #eee;overflow-wrap:anywhere} td:first-child{color:#666}
@media (max-width:600px){body{margin:1em}}
td.num{text-align:right;font-variant-numeric:tabular-nums} .err{color:#b00}
nav{margin:.5em 0 1.5em}
</style></head><body>
<h1>${escapeHtml(title)}</h1>
<nav><a href="metrics">metrics</a> · <a href="status.json">status.json</a>${nav ? ` · ${nav}` : ''}</nav>
<table id="t"><tbody></tbody></table>
<p id="e" class="err"></p>
<script>
const q = new URLSearchParams(location.search).get('token');
const suffix = q ? '?token=' + encodeURIComponent(q) : '';
for (const a of document.querySelectorAll('nav a')) a.href += suffix;
function rows(obj, prefix, out) {
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix ? prefix + '.' + k : k;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) rows(v, key, out); else out.push([key, v]);
  }
  return out;
}
function fmt(v) { return typeof v === 'number' ? (Number.isInteger(v) ? v.toLocaleString() : v.toFixed(1)) : String(v); }
async function tick() {
  try {
    const r = await fetch('status.json' + suffix, { cache: 'no-store' });
    if (!r.ok) throw new Error('HTTP ' + r.status);
    const body = document.querySelector('#t tbody');
    body.replaceChildren(...rows(await r.json(), '', []).map(([k, v]) => {
      const tr = document.createElement('tr');
      const a = document.createElement('td'); a.textContent = k;
      const b = document.createElement('td'); b.textContent = fmt(v); if (typeof v === 'number') b.className = 'num';
      tr.append(a, b); return tr;
    }));
    document.getElementById('e').textContent = '';
  } catch (err) { document.getElementById('e').textContent = 'cannot refresh: ' + err.message; }
}
tick(); setInterval(tick, 1000);
</script></body></html>
`;
}

export async function startHttpStatus(options: HttpStatusOptions = {}): Promise<HttpStatusServer> {
  const host = options.host ?? '127.0.0.1';
  const title = options.title ?? 'percolator serve';
  const expected = options.authToken === undefined ? null : tokenDigest(options.authToken);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const routes: HttpRoute[] = [...(options.extraRoutes ?? [])];

  const authorized = (req: http.IncomingMessage, url: URL): boolean => {
    if (expected === null) return true;
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
    const given = m?.[1] ?? url.searchParams.get('token');
    return given !== null && given !== undefined && timingSafeEqual(tokenDigest(given), expected);
  };

  const send = (res: http.ServerResponse, code: number, type: string, body: string | Buffer): void => {
    res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store' });
    res.end(body);
  };

  const builtin: HttpRoute[] = [
    {
      path: '/healthz',
      public: true,
      handler: (_req, res) => {
        const why = options.unhealthy?.() ?? null;
        send(res, why === null ? 200 : 503, 'text/plain; charset=utf-8', `${why ?? 'ok'}\n`);
      },
    },
    {
      path: '/metrics',
      handler: async (_req, res) => {
        if (options.registry === undefined) return send(res, 404, 'text/plain; charset=utf-8', 'no metrics\n');
        send(res, 200, options.registry.contentType, await options.registry.metrics());
      },
    },
    {
      path: '/status.json',
      handler: async (_req, res) => {
        send(res, 200, 'application/json', `${JSON.stringify((await options.status?.()) ?? {})}\n`);
      },
    },
    {
      path: '/',
      handler: (_req, res) => {
        const links = routes.filter((r) => r.title !== undefined).map((r) => ({ path: r.path, title: r.title as string }));
        send(res, 200, 'text/html; charset=utf-8', statusPage(title, links));
      },
    },
  ];

  const server = http.createServer((req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      send(res, 400, 'text/plain; charset=utf-8', 'bad request\n');
      return;
    }
    const route = routes.find((r) => matches(r, url.pathname)) ?? builtin.find((r) => matches(r, url.pathname));
    if (route === undefined) return send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
    const methods = route.methods ?? ['GET', 'HEAD'];
    if (!methods.includes(req.method ?? 'GET')) {
      res.setHeader('allow', methods.join(', '));
      return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
    }
    if (route.public !== true && !authorized(req, url)) {
      res.setHeader('www-authenticate', 'Bearer');
      // Most who read this body opened a page in a browser, which cannot send the header.
      return send(
        res,
        401,
        'text/plain; charset=utf-8',
        'missing or wrong bearer token: send "Authorization: Bearer <token>", or, in a browser, add ?token=<token> to the address\n',
      );
    }
    Promise.resolve()
      .then(() => route.handler(req, res, url))
      .catch((e: unknown) => {
        log(`http ${req.method} ${url.pathname}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
        if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
        else res.destroy();
      });
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;

  const port = await listen(server, options.port ?? 0, host);

  let closing: Promise<void> | null = null;
  return {
    host,
    port,
    addRoute(route: HttpRoute): void {
      const i = routes.findIndex((r) => r.path === route.path);
      if (i >= 0) routes[i] = route;
      else routes.push(route);
    },
    close(): Promise<void> {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
