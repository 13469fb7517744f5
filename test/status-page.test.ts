/**
 * The live status page in a real browser: headless Chromium (Debian's `chromium` package, driven by
 * playwright-core with `executablePath`) loads the dashboard and the test checks that it renders
 * live numbers — values that change between two looks — and charts with drawn pixels, then that
 * the search page renders results. Skipped, with a message, where /usr/bin/chromium is absent.
 *
 * The second part runs the real web index (memory store) behind the page.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SyntheticCorpus } from '../src/apps/webindex/corpus/synthetic.js';
import { loadDocuments } from '../src/apps/webindex/loader.js';
import { WebIndexMetrics } from '../src/apps/webindex/metrics.js';
import { createWebIndexTables, registerWebIndex } from '../src/apps/webindex/pipeline.js';
import { webIndexStatusSources } from '../src/apps/webindex/status.js';
import { prometheusText, startStatusServer } from '../src/status/server.js';
import type { StatusDocument } from '../src/status/types.js';
import { Percolator } from '../src/txn/percolator.js';

/** Debian's chromium; CHROMIUM_PATH overrides it (e.g. to check the skip path). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  console.warn(`status page browser tests SKIPPED: ${CHROMIUM} not found (install Debian's chromium: apt-get install -y chromium)`);
}

type Browser = import('playwright-core').Browser;

// In-page code is passed as strings: this project type-checks for Node (no DOM library).
/** An in-page expression: the number shown by element `id` (thousands separators removed). */
const shown = (id: string) => `Number((document.getElementById('${id}')?.textContent ?? '').replace(/,/g, ''))`;
let browser: Browser | null = null;

beforeAll(async () => {
  if (!hasChromium) return;
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
});
afterAll(async () => {
  await browser?.close();
});

/** `percolator serve` in this process over `memory:`, on ports of its own (with `authToken`, behind it). */
async function memoryServer(authToken?: string) {
  const { startServer } = await import('../src/server/server.js');
  return startServer({
    storeUrl: 'memory:',
    port: 0,
    httpPort: 0,
    oraclePort: 0,
    log: () => undefined,
    ...(authToken === undefined ? {} : { authToken }),
  });
}

describe('status server (HTTP)', () => {
  it('serves history as JSON, Prometheus text, and 404s', async () => {
    let n = 0;
    const server = await startStatusServer({
      intervalMs: 50,
      sources: { sample: () => ({ counters: { things: (n += 10) }, gauges: { depth: n % 7 } }) },
    });
    try {
      // Sampling happens every 50 ms; wait for a few points (polling an HTTP endpoint, bounded).
      let doc: StatusDocument | null = null;
      for (let i = 0; i < 100 && (doc?.history.length ?? 0) < 4; i++) {
        doc = (await (await fetch(`${server.url}status.json`)).json()) as StatusDocument;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(doc?.history.length).toBeGreaterThanOrEqual(4);
      expect(doc?.charts.map((c) => c.title)).toEqual(['things per second', 'depth']);
      const rates = doc?.history.slice(1).map((p) => p.v['counters.things']) ?? [];
      expect(rates.every((r) => typeof r === 'number' && r > 0)).toBe(true);
      const metrics = await (await fetch(`${server.url}metrics`)).text();
      expect(metrics).toMatch(/^percolator_things_total \d+$/m);
      expect((await fetch(`${server.url}nope`)).status).toBe(404);
      expect((await fetch(`${server.url}search?q=x`)).status).toBe(404);
    } finally {
      await server.close();
    }
    expect(prometheusText({ observers: { 'a"b': { runs: 2, totalMs: 500 } } })).toContain(
      'percolator_observer_run_seconds_total{observer="a_b"} 0.5',
    );
    // A word after a digit is a word of its own: the demo's p99 was `percolator_latency_p99ms`.
    expect(prometheusText({ gauges: { latencyP99Ms: 21, latencyMedianMs: 7 } })).toBe(
      '# TYPE percolator_latency_p99_ms gauge\npercolator_latency_p99_ms 21\n# TYPE percolator_latency_median_ms gauge\npercolator_latency_median_ms 7\n',
    );
    // A key `name{label=value}` is one series of a labelled family, typed once: the names a worker's
    // page gives its store's row lookups are the server's (src/status/store-cache-sources.ts).
    expect(prometheusText({ counters: { 'storeRowLookups{answered=decoded}': 3, 'storeRowLookups{answered=engine}': 1, x: 2 } })).toBe(
      '# TYPE percolator_store_row_lookups_total counter\npercolator_store_row_lookups_total{answered="decoded"} 3\n' +
        'percolator_store_row_lookups_total{answered="engine"} 1\n# TYPE percolator_x_total counter\npercolator_x_total 2\n',
    );
    expect(prometheusText({ gauges: { 'g{kind=a"b\\c}': 1 } })).toBe('# TYPE percolator_g gauge\npercolator_g{kind="a\\"b\\\\c"} 1\n');
  });

  it('the search page links only web results, says when nothing matches, offers examples and says how many it shows', async () => {
    const hits = [
      { url: 'https://example.com/a', title: 'On the web' },
      { url: 'file:///node_modules/x/README.md', title: 'A local file' },
      { url: 'javascript:alert(1)', title: 'A script' },
    ];
    const server = await startStatusServer({
      sources: {
        sample: () => ({}),
        search: async (q) =>
          q === 'many'
            ? { terms: ['many'], total: 70, tookMs: 1, hits }
            : { terms: q === '%' ? [] : [q.replace(/[^a-z]/g, '')], total: 0, tookMs: 1, hits: [] },
        searchExamples: () => ['mit license', 'stream'],
      },
    });
    const page = async (q: string | null) => (await fetch(`${server.url}search${q === null ? '' : `?q=${encodeURIComponent(q)}`}`)).text();
    try {
      const examples = '<a href="search?q=mit%20license">mit license</a> · <a href="search?q=stream">stream</a>';
      expect(await page(null)).toContain(examples);
      const none = await page('zzqq');
      expect(none).toContain('No documents match “zzqq”');
      expect(none).toContain(examples);
      expect(await page('%')).toContain('Nothing to search for in “%”');
      const script = await page('<script>alert(1)</script>');
      expect(script).not.toContain('<script>alert');
      expect(script).toContain('No documents match “&lt;script&gt;alert(1)&lt;/script&gt;”');

      const many = await page('many');
      expect(many).toContain('<a href="https://example.com/a">On the web</a>');
      // A file: URL is a dead link from an http page, and a javascript: one would run: both are text.
      expect(many).not.toMatch(/href="(file|javascript):/);
      expect(many).toContain('<span class="title">A local file</span>');
      expect(many).toContain('<span class="title">A script</span>');
      expect(many).toContain('70 results in 1.0 ms · top 3 shown · <a href="search?q=many&amp;limit=100">show all</a>');
    } finally {
      await server.close();
    }
  });

  it('keeps serving when a source fails, and shows the error', async () => {
    let fail = false;
    const server = await startStatusServer({
      intervalMs: 30,
      sources: {
        sample: () => {
          if (fail) throw new Error('store unavailable');
          return { counters: { x: Date.now() } };
        },
      },
    });
    try {
      fail = true;
      let doc: StatusDocument | null = null;
      for (let i = 0; i < 100 && doc?.error == null; i++) {
        await new Promise((r) => setTimeout(r, 20));
        doc = (await (await fetch(`${server.url}status.json`)).json()) as StatusDocument;
      }
      expect(doc?.error).toBe('store unavailable');
    } finally {
      await server.close();
    }
  });
});

describe.skipIf(!hasChromium)('status page in headless Chromium', () => {
  it('renders live numbers and drawn charts, and the search page renders results', async () => {
    const started = Date.now();
    const server = await startStatusServer({
      intervalMs: 250,
      sources: {
        title: 'Test system',
        sample: () => {
          const s = (Date.now() - started) / 1000;
          return {
            counters: { documentsIndexed: Math.round(s * 120), commits: Math.round(s * 900) },
            gauges: { notificationsPending: Math.round(50 + 40 * Math.sin(s)) },
            observers: { process: { runs: Math.round(s * 100), totalMs: s * 300 }, export: { runs: Math.round(s * 50), totalMs: s * 400 } },
          };
        },
        headline: [
          { key: 'counters.documentsIndexed', label: 'Documents indexed', total: true },
          { key: 'counters.commits', label: 'Commits / s' },
        ],
        charts: [
          {
            title: 'Throughput',
            unit: '/s',
            series: [{ key: 'counters.documentsIndexed', label: 'indexed' }, { key: 'counters.commits' }],
          },
          { title: 'Pending', series: [{ key: 'gauges.notificationsPending' }] },
          { title: 'Observer latency', unit: 'ms', series: [{ key: 'observers.*' }] },
        ],
        search: async (q) => ({
          total: 1,
          tookMs: 1.5,
          hits: [{ url: 'https://example.com/a', title: `Result for <${q}>`, snippet: 'a snippet', size: 3, latencyMs: 42 }],
        }),
      },
    });
    const page = await (browser as Browser).newPage();
    try {
      await page.goto(server.url);
      const indexed = page.locator('#h-counters-documentsIndexed-total');
      await page.waitForFunction(`${shown('h-counters-documentsIndexed-total')} > 0`, null, { timeout: 15_000 });
      const first = Number((await indexed.textContent())?.replace(/,/g, ''));
      // Live: the page polls every second; the number must move on its own.
      await page.waitForFunction(`${shown('h-counters-documentsIndexed-total')} > ${first}`, null, { timeout: 15_000 });
      const commitsRate = Number((await page.locator('#h-counters-commits').textContent())?.replace(/,/g, ''));
      expect(commitsRate).toBeGreaterThan(300);
      expect(commitsRate).toBeLessThan(3_000);
      expect(await page.locator('#live').textContent()).toContain('live');
      // Charts: every canvas has plotted points and non-blank pixels; legends list the observers.
      await page.waitForFunction("[...document.querySelectorAll('canvas')].every((c) => Number(c.dataset.points) >= 2)", null, {
        timeout: 15_000,
      });
      // Pixels with any opacity, per canvas: a blank canvas has none.
      const painted = (await page.evaluate(`[...document.querySelectorAll('canvas')].map((c) => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
        return n;
      })`)) as number[];
      expect(painted).toHaveLength(3);
      for (const n of painted) expect(n).toBeGreaterThan(500);
      expect(await page.locator('#legend-2').textContent()).toMatch(/export.*process/);
      expect(await page.title()).toBe('Test system — status');

      await page.click('a[href="search"]');
      await page.fill('input[name=q]', 'hello');
      await page.click('button');
      await page.waitForSelector('.hit');
      expect(await page.locator('.hit a').textContent()).toBe('Result for <hello>');
      expect(await page.locator('.hit .meta').textContent()).toContain('indexed 42 ms after crawl');
      expect(await page.locator('.hit .meta').textContent()).toContain('2 duplicates');
    } finally {
      await page.close();
      await server.close();
    }
  }, 60_000);

  it("fits a phone's width: no page that scrolls sideways", async () => {
    const server = await startStatusServer({
      intervalMs: 100,
      sources: {
        title: 'Percolator web index',
        sample: () => ({ counters: { documentsIndexed: Date.now() % 1000 }, gauges: { latencyP99Ms: 142 } }),
        headline: [{ key: 'counters.documentsIndexed', label: 'Documents indexed', total: true }],
        charts: [
          { title: 'Crawl-to-index latency (recent documents)', unit: 'ms', series: [{ key: 'gauges.latencyP99Ms', label: 'p99' }] },
        ],
        search: async () => ({
          total: 1,
          tookMs: 1,
          hits: [{ url: 'https://example.com/node_modules/call-bind-apply-helpers/LICENSE', title: 'MIT License', snippet: 'MIT' }],
        }),
      },
    });
    const page = await (browser as Browser).newPage({ viewport: { width: 390, height: 844 } });
    try {
      await page.goto(server.url);
      await page.waitForFunction("[...document.querySelectorAll('canvas')].every((c) => Number(c.dataset.points) >= 2)", null, {
        timeout: 15_000,
      });
      // A chart card was 420 px at least: on a phone the page scrolled sideways and cut the charts off.
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await page.goto(`${server.url}search?q=license`);
      await page.waitForSelector('.hit');
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    } finally {
      await page.close();
      await server.close();
    }
  }, 60_000);

  it('shows the real web index indexing live, and searches it', async () => {
    const db = await Percolator.open({ store: 'memory:', leaseMs: 2_000 });
    const metrics = new WebIndexMetrics();
    await createWebIndexTables(db);
    const worker = registerWebIndex(db.worker({ threads: 8 }), { keyMode: 'content+url+title', metrics });
    await worker.start();
    const server = await startStatusServer({ intervalMs: 250, sources: webIndexStatusSources(db, worker, metrics) });
    const page = await (browser as Browser).newPage();
    try {
      await page.goto(server.url);
      const corpus = new SyntheticCorpus({ docs: 60, seed: 2 });
      const loading = loadDocuments(db, corpus.documents(), { concurrency: 2, metrics });
      await page.waitForFunction(`${shown('h-counters-documentsIndexed-total')} > 0`, null, { timeout: 30_000 });
      await loading;
      await db.waitForQuiescence({ timeoutMs: 60_000 });
      await page.waitForFunction(`${shown('h-counters-documentsIndexed-total')} === 60`, null, { timeout: 15_000 });
      const latency = await page.locator('#h-gauges-latencyMedianMs').textContent();
      expect(latency).toMatch(/^[\d,.]+ ms$/);
      await page.goto(`${server.url}search?q=topic${corpus.clusterOfDoc(0)}`);
      await page.waitForSelector('.hit');
      expect(await page.locator('.hit').count()).toBe(1);
      expect(await page.locator('.hit .meta').textContent()).toMatch(/indexed [\d,]+ ms after crawl/);
    } finally {
      await page.close();
      await server.close();
      await worker.stop();
      await db.close();
    }
  }, 120_000);
});

describe.skipIf(!hasChromium)('percolator serve: the dashboard', () => {
  it("charts the server's own numbers at /dashboard/", async () => {
    const { startServer } = await import('../src/server/server.js');
    const { BigtableStore } = await import('../src/store/bigtable/bigtable-store.js');
    const server = await startServer({ storeUrl: 'memory:', port: 0, httpPort: 0, oraclePort: 0, log: () => undefined });
    const page = await (browser as Browser).newPage();
    try {
      const base = `http://127.0.0.1:${server.httpPort}`;
      // /dashboard redirects to /dashboard/ (the page fetches status.json relative to itself).
      await page.goto(`${base}/dashboard`);
      expect(new URL(page.url()).pathname).toBe('/dashboard/');
      await page.waitForFunction("document.getElementById('live')?.textContent?.includes('live')", null, { timeout: 15_000 });
      // Writes through the gRPC API move the rows-written total shown on the page.
      const before = Number(((await page.locator('#h-counters-rowsWritten-total').textContent()) ?? '').replace(/,/g, ''));
      const writer = await BigtableStore.open(`bigtable://127.0.0.1:${server.port}`);
      await writer.createTable('t', { families: { f: {} } });
      for (let i = 0; i < 20; i++)
        await writer.mutateRow('t', Buffer.from(`r${i}`), [
          { setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.from('v') } },
        ]);
      await writer.close();
      await page.waitForFunction(`${shown('h-counters-rowsWritten-total')} >= ${before + 20}`, null, { timeout: 15_000 });
      await page.waitForFunction("[...document.querySelectorAll('canvas')].every((c) => Number(c.dataset.points) >= 2)", null, {
        timeout: 15_000,
      });
      expect(await page.locator('canvas').count()).toBe(5);
      // The embedded store's row lookups, by what answered them (the caches --row-cache-mib sizes).
      expect(await page.getByText('Row lookups per second, by what answered them').count()).toBe(1);
      // The label says per second; the number is bare, as the demo's are (it read "requests/s 0 /s").
      expect(await page.locator('#h-counters-requests').textContent()).toMatch(/^[\d,.]+$/);
    } finally {
      await page.close();
      await server.close();
    }
  }, 60_000);

  it("fits a phone's width: the status table's numbers are on screen", async () => {
    const server = await memoryServer();
    const page = await (browser as Browser).newPage({ viewport: { width: 390, height: 844 } });
    try {
      const base = `http://127.0.0.1:${server.httpPort}`;
      await page.goto(`${base}/`);
      await page.waitForSelector('#t td.num');
      // The table was 28em wide at least: on a phone the numbers column was off screen.
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await page.goto(`${base}/dashboard/`);
      await page.waitForFunction("[...document.querySelectorAll('canvas')].every((c) => Number(c.dataset.points) >= 2)", null, {
        timeout: 15_000,
      });
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    } finally {
      await page.close();
      await server.close();
    }
  }, 60_000);

  it("logs nothing in the browser console on any page, the demo's or the server's", async () => {
    const server = await memoryServer('sekret');
    const demo = await startStatusServer({
      intervalMs: 100,
      sources: { sample: () => ({ counters: { n: Date.now() } }), search: async () => ({ total: 0, tookMs: 0, hits: [] }) },
    });
    const page = await (browser as Browser).newPage();
    const logged: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') logged.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => logged.push(`${page.url()}: ${e.message}`));
    try {
      const base = `http://127.0.0.1:${server.httpPort}`;
      for (const url of [`${base}/?token=sekret`, `${base}/dashboard/?token=sekret`, demo.url, `${demo.url}search?q=x`]) {
        await page.goto(url);
        // Each page's own requests done, and, for the live ones, a refresh drawn from status.json.
        await page.waitForLoadState('networkidle');
        if (!url.includes('search'))
          await page.waitForFunction("document.querySelector('#t td, #live.on') !== null", null, { timeout: 15_000 });
      }
      // The browser asked each server for /favicon.ico: a 404 in the console.
      expect(logged).toEqual([]);
    } finally {
      await page.close();
      await demo.close();
      await server.close();
    }
  }, 60_000);

  it('passes the bearer token it was opened with on to its data requests', async () => {
    const server = await memoryServer('sekret');
    const page = await (browser as Browser).newPage();
    try {
      const base = `http://127.0.0.1:${server.httpPort}`;
      const refused = await fetch(`${base}/dashboard/status.json`);
      expect(refused.status).toBe(401);
      // Said to whoever opened the page without its token: how to give it from a browser.
      expect(await refused.text()).toContain('add ?token=<token> to the address');
      expect((await fetch(`${base}/dashboard/status.json?token=sekret`)).status).toBe(200);
      await page.goto(`${base}/dashboard/?token=sekret`);
      await page.waitForFunction("document.getElementById('live')?.textContent?.includes('live')", null, { timeout: 15_000 });
      // The way back to the server's status page, with the token: without it that page is a 401.
      await page.click('header a:text("Status")');
      await page.waitForSelector('#t td.num');
      expect(new URL(page.url()).pathname).toBe('/');
    } finally {
      await page.close();
      await server.close();
    }
  }, 60_000);
});
