/**
 * The status page's HTML: a self-contained dashboard (no external assets: it must work offline)
 * whose script polls /status.json every second and draws each chart on a canvas, and the
 * server-rendered search page. Everything interpolated into HTML goes through escapeHtml.
 */
import type { SearchView } from './types.js';

/** An empty icon: without one the browser asks for /favicon.ico, a 404 logged in its console on every page. */
export const NO_FAVICON = '<link rel="icon" href="data:,">';

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

const STYLE = `
:root { --bg:#f6f7f9; --card:#fff; --ink:#1f2937; --muted:#6b7280; --line:#e5e7eb; --accent:#2563eb; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif; background:var(--bg); color:var(--ink); }
header { display:flex; flex-wrap:wrap; align-items:center; gap:4px 16px; padding:14px 24px; background:var(--card); border-bottom:1px solid var(--line); }
header h1 { font-size:18px; margin:0; font-weight:600; }
header a { color:var(--accent); text-decoration:none; white-space:nowrap; }
/* The first link and those after it go to the right, on the dashboard and the search page alike. */
header a:first-of-type { margin-left:auto; }
#live { font-size:12px; color:var(--muted); white-space:nowrap; }
#live.on { color:#16a34a; }
main { padding:20px 24px; max-width:1400px; margin:0 auto; }
#headline { display:grid; grid-template-columns:repeat(auto-fill,minmax(150px,1fr)); gap:12px; margin-bottom:18px; }
.num { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:10px 14px; }
.num .label { display:block; color:var(--muted); font-size:12px; }
.num .value { display:block; font-size:24px; font-weight:600; font-variant-numeric:tabular-nums; }
/* min(…, 100%): a phone narrower than one chart gets one full-width column, not a page that scrolls sideways. */
#charts { display:grid; grid-template-columns:repeat(auto-fill,minmax(min(420px,100%),1fr)); gap:14px; }
.chart { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:12px 14px; }
.chart h2 { font-size:13px; margin:0 0 6px; font-weight:600; }
.chart canvas { width:100%; height:180px; display:block; }
.legend { display:flex; flex-wrap:wrap; gap:4px 14px; font-size:12px; color:var(--muted); margin-top:4px; }
.legend i { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:5px; vertical-align:-1px; }
.legend b { color:var(--ink); font-weight:600; font-variant-numeric:tabular-nums; }
#error { color:#b91c1c; }
form { display:flex; gap:8px; margin-bottom:18px; }
input[type=search] { flex:1; font-size:16px; padding:8px 10px; border:1px solid var(--line); border-radius:6px; }
button { font-size:15px; padding:8px 16px; border:0; border-radius:6px; background:var(--accent); color:#fff; cursor:pointer; }
.hit { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:10px 14px; margin-bottom:10px; }
.hit a, .hit .title { color:var(--accent); font-size:16px; text-decoration:none; }
.hit .title { color:var(--ink); }
.hit .url { color:#15803d; font-size:12px; word-break:break-all; }
.hit .meta { color:var(--muted); font-size:12px; margin-top:4px; }
.meta a { color:var(--accent); }
@media (max-width:600px) { header { padding:12px 16px; } main { padding:16px; } }
`;

const SCRIPT = `
const COLORS = ['#2563eb','#dc2626','#16a34a','#d97706','#7c3aed','#0891b2','#db2777','#4b5563','#65a30d','#9333ea'];
// The time axis shows the history so far, from 30 s up to 5 minutes, so a short run fills the chart.
const WINDOWS = [30e3, 60e3, 120e3, 300e3];
const TICK_MS = { 30000: 10e3, 60000: 10e3, 120000: 30e3, 300000: 60e3 };
function windowFor(history, now) {
  const span = history.length > 0 ? now - history[0].t : 0;
  return WINDOWS.find((w) => w >= span) || WINDOWS[WINDOWS.length - 1];
}
const ago = (ms) => (ms >= 60e3 ? '-' + ms / 60e3 + 'm' : '-' + ms / 1e3 + 's');
let built = '';
const idOf = (k) => k.replace(/[^a-zA-Z0-9]/g, '-');
// A headline's element id: h-<key>, or h-<key>-total for a counter's total (one key may show both).
const headId = (h) => 'h-' + idOf(h.key) + (h.total ? '-total' : '');
function fmt(v, unit) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  const a = Math.abs(v);
  const s = a >= 1000 || Number.isInteger(v) ? Math.round(v).toLocaleString('en-US') : a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
  return unit ? s + ' ' + unit : s;
}
function expand(series, history) {
  const out = [];
  for (const s of series) {
    if (s.key.endsWith('.*')) {
      const prefix = s.key.slice(0, -1);
      const keys = new Set();
      for (const p of history) for (const k of Object.keys(p.v)) if (k.startsWith(prefix)) keys.add(k);
      for (const k of [...keys].sort()) out.push({ key: k, label: k.slice(prefix.length) });
    } else out.push({ key: s.key, label: s.label || s.key.replace(/^[a-z]+\\./, '') });
  }
  return out;
}
function build(s) {
  const head = document.getElementById('headline');
  head.innerHTML = '';
  for (const h of s.headline) {
    const d = document.createElement('div');
    d.className = 'num';
    d.innerHTML = '<span class="label"></span><span class="value" id="' + headId(h) + '">–</span>';
    d.querySelector('.label').textContent = h.label;
    head.appendChild(d);
  }
  const charts = document.getElementById('charts');
  charts.innerHTML = '';
  s.charts.forEach((c, i) => {
    const d = document.createElement('div');
    d.className = 'chart';
    d.innerHTML = '<h2></h2><canvas id="chart-' + i + '" data-points="0"></canvas><div class="legend" id="legend-' + i + '"></div>';
    d.querySelector('h2').textContent = c.title + (c.unit ? ' (' + c.unit + ')' : '');
    charts.appendChild(d);
  });
  built = JSON.stringify([s.headline, s.charts]);
}
function latest(history, key) {
  for (let i = history.length - 1; i >= 0; i--) { const v = history[i].v[key]; if (v !== null && v !== undefined) return v; }
  return null;
}
function draw(canvas, lines, now, windowMs) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
  const ctx = canvas.getContext('2d');
  ctx.scale(dpr, dpr);
  ctx.clearRect(0, 0, w, h);
  const L = 52, R = 8, T = 8, B = 20;
  const t0 = now - windowMs;
  let max = 0;
  for (const l of lines) for (const [t, v] of l.points) if (t >= t0 && v !== null && v > max) max = v;
  max = max <= 0 ? 1 : max * 1.15;
  const mag = Math.pow(10, Math.floor(Math.log10(max)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => max / s <= 5) || mag * 10;
  max = Math.ceil(max / step) * step;
  const x = (t) => L + ((t - t0) / windowMs) * (w - L - R);
  const y = (v) => T + (1 - v / max) * (h - T - B);
  ctx.strokeStyle = '#e5e7eb'; ctx.fillStyle = '#6b7280'; ctx.lineWidth = 1; ctx.font = '11px system-ui, sans-serif';
  ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
  for (let v = 0; v <= max + 1e-9; v += step) {
    ctx.beginPath(); ctx.moveTo(L, Math.round(y(v)) + 0.5); ctx.lineTo(w - R, Math.round(y(v)) + 0.5); ctx.stroke();
    ctx.fillText(fmt(v), L - 6, y(v));
  }
  ctx.textBaseline = 'top';
  const tick = TICK_MS[windowMs];
  for (let ms = 0; ms <= windowMs; ms += tick) {
    ctx.textAlign = ms === 0 ? 'right' : ms === windowMs ? 'left' : 'center';
    ctx.fillText(ms === 0 ? 'now' : ago(ms), x(now - ms), h - B + 5);
  }
  let points = 0;
  lines.forEach((l) => {
    ctx.strokeStyle = l.color; ctx.lineWidth = 2; ctx.lineJoin = 'round';
    ctx.beginPath();
    let pen = false;
    for (const [t, v] of l.points) {
      if (t < t0 || v === null) { pen = false; continue; }
      points++;
      if (pen) ctx.lineTo(x(t), y(v)); else { ctx.moveTo(x(t), y(v)); pen = true; }
    }
    ctx.stroke();
  });
  canvas.dataset.points = String(points);
}
function render(s) {
  document.getElementById('title').textContent = s.title;
  if (JSON.stringify([s.headline, s.charts]) !== built) build(s);
  const hist = s.history;
  for (const h of s.headline) {
    const el = document.getElementById(headId(h));
    if (el) el.textContent = fmt(h.total ? (s.totals[h.key] ?? null) : latest(hist, h.key), h.unit);
  }
  s.charts.forEach((c, i) => {
    const lines = expand(c.series, hist).map((sr, j) => ({ ...sr, color: COLORS[j % COLORS.length], points: hist.map((p) => [p.t, p.v[sr.key] ?? null]) }));
    draw(document.getElementById('chart-' + i), lines, s.now, windowFor(hist, s.now));
    const legend = document.getElementById('legend-' + i);
    legend.innerHTML = '';
    for (const l of lines) {
      const span = document.createElement('span');
      span.innerHTML = '<i></i><span></span> <b></b>';
      span.querySelector('i').style.background = l.color;
      span.querySelector('span').textContent = l.label;
      span.querySelector('b').textContent = fmt(latest(hist, l.key));
      legend.appendChild(span);
    }
  });
  document.getElementById('error').textContent = s.error ? 'source error: ' + s.error : '';
  document.body.dataset.updated = String(s.now);
  document.body.dataset.samples = String(hist.length);
}
// A page opened with ?token=… (a server that requires a bearer token) passes it on.
const pageToken = new URLSearchParams(location.search).get('token');
const tokenSuffix = pageToken ? '?token=' + encodeURIComponent(pageToken) : '';
if (pageToken) for (const a of document.querySelectorAll('header a')) a.href += tokenSuffix;
async function tick() {
  const live = document.getElementById('live');
  try {
    const r = await fetch('status.json' + tokenSuffix, { cache: 'no-store' });
    render(await r.json());
    live.textContent = '● live'; live.className = 'on';
  } catch (e) {
    live.textContent = '○ disconnected'; live.className = '';
  } finally {
    setTimeout(tick, 1000);
  }
}
tick();
`;

/** A link in the dashboard's header, e.g. back to the page of the server that mounts it. */
export interface HeaderLink {
  readonly href: string;
  readonly label: string;
}

export function dashboardHtml(title: string, searchEnabled: boolean, links: readonly HeaderLink[] = []): string {
  const nav = [...links, ...(searchEnabled ? [{ href: 'search', label: 'Search →' }] : [])]
    .map((l) => `<a href="${escapeHtml(l.href)}">${escapeHtml(l.label)}</a>`)
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">${NO_FAVICON}
<title>${escapeHtml(title)} — status</title><style>${STYLE}</style></head>
<body><header><h1 id="title">${escapeHtml(title)}</h1><span id="live">○ connecting</span>${nav}</header>
<main><section id="headline"></section><p id="error"></p><section id="charts"></section></main>
<script>${SCRIPT}</script></body></html>`;
}

/** Result links only for the web's schemes: a `file:` URL is dead from an http page, a `javascript:` one would run. */
const linkable = (url: string) => /^https?:\/\//i.test(url);

const searchLink = (q: string, limit?: number) => `search?q=${encodeURIComponent(q)}${limit === undefined ? '' : `&amp;limit=${limit}`}`;

/** The most hits the search page asks for (server.ts caps `limit` there). */
export const SEARCH_LIMIT_MAX = 100;

export function searchHtml(
  title: string,
  query: string,
  result: SearchView | null,
  error: string | null,
  examples: readonly string[] = [],
): string {
  const tryThese =
    examples.length === 0
      ? ''
      : `<p class="meta">Try: ${examples.map((q) => `<a href="${searchLink(q)}">${escapeHtml(q)}</a>`).join(' · ')}</p>`;
  let summary = '';
  if (result !== null && result.terms?.length === 0) {
    summary = `<p class="meta">Nothing to search for in “${escapeHtml(query)}”: the index leaves out very short and very common words.</p>${tryThese}`;
  } else if (result !== null && result.total === 0) {
    summary = `<p class="meta">No documents match “${escapeHtml(query)}”.</p>${tryThese}`;
  } else if (result !== null) {
    const shown = result.hits.length;
    const more =
      result.total > shown && shown < SEARCH_LIMIT_MAX
        ? ` · top ${shown} shown · <a href="${searchLink(query, SEARCH_LIMIT_MAX)}">show ${result.total > SEARCH_LIMIT_MAX ? `the top ${SEARCH_LIMIT_MAX}` : 'all'}</a>`
        : '';
    summary = `<p class="meta">${result.total.toLocaleString('en-US')} result${result.total === 1 ? '' : 's'} in ${result.tookMs.toFixed(1)} ms${more}</p>`;
  } else if (error === null) summary = tryThese;
  const hits =
    result === null
      ? ''
      : result.hits
          .map(
            (h) =>
              `<div class="hit">${
                linkable(h.url)
                  ? `<a href="${escapeHtml(h.url)}">${escapeHtml(h.title || h.url)}</a>`
                  : `<span class="title">${escapeHtml(h.title || h.url)}</span>`
              }<div class="url">${escapeHtml(h.url)}</div>` +
              `${h.snippet ? `<div>${escapeHtml(h.snippet)}</div>` : ''}<div class="meta">` +
              [
                h.size !== undefined && h.size > 1 ? `${h.size - 1} duplicate${h.size === 2 ? '' : 's'}` : null,
                h.latencyMs !== undefined && h.latencyMs !== null
                  ? `indexed ${Math.round(h.latencyMs).toLocaleString('en-US')} ms after crawl`
                  : null,
                h.score !== undefined ? `score ${h.score}` : null,
              ]
                .filter((x) => x !== null)
                .join(' · ') +
              '</div></div>',
          )
          .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">${NO_FAVICON}
<title>${query ? `${escapeHtml(query)} — ` : ''}${escapeHtml(title)} search</title><style>${STYLE}</style></head>
<body><header><h1>${escapeHtml(title)} — search</h1><a href="./">← Status</a></header>
<main><form action="search" method="get"><input type="search" name="q" value="${escapeHtml(query)}" placeholder="Search the index" autofocus><button>Search</button></form>
${error !== null ? `<p id="error">${escapeHtml(error)}</p>` : ''}<section id="results">${summary}${hits}</section></main></body></html>`;
}
