/**
 * `percolator worker --http-port P`: each worker of a deployment serves its own status page and
 * Prometheus metrics (its observers' runs and commits), beside `percolator serve`'s. The port is
 * taken before the store is opened: a port in use is LISTEN_FAILED, and nothing else is tried.
 * Needs dist/ (`npm test` builds first).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli, spawnCli, spawnServe } from './support/cli-process.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');
let dir: string;
let observers: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'worker-status-'));
  observers = join(dir, 'observers.mjs');
  writeFileSync(
    observers,
    `export default async function register(worker, db) {
  await db.createTable('docs');
  worker.observe('raw:content', 'count-words', async (tx, row) => {
    const text = (await tx.getString('docs', row, 'raw:content')) ?? '';
    tx.set('docs', row, 'derived:words', String(text.split(/\\s+/).filter(Boolean).length));
  }, { table: 'docs' });
}
`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The value of a Prometheus sample line `name value` (or `name{…} value`), or null. */
function metric(text: string, name: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? null : Number(line.slice(line.lastIndexOf(' ') + 1));
}

it("serves the worker's own metrics, which count the runs of its observers", async () => {
  const serve = spawnServe(mainJs, ['--store', 'memory:', '--http-port', '0']);
  try {
    const url = await serve.clientUrl;
    const worker = spawnCli(mainJs, ['worker', '--observers', observers, '--store', url, '--http-port', '0']);
    try {
      const said = await worker.waitForStderr((e) => e.includes('status and metrics at '), 'it says where its page is');
      const page = /status and metrics at (http:\/\/127\.0\.0\.1:\d+\/)\n/.exec(said)?.[1];
      expect(page, said).toBeDefined();
      const get = async (path: string) => (await fetch(new URL(path, page))).text();
      expect(await get('/')).toContain('<html');
      expect(JSON.parse(await get('/status.json'))).toMatchObject({ title: `percolator worker: ${observers}` });
      const set = await runCli(mainJs, ['set', 'docs', 'r1', 'raw:content', 'hello incremental world', '--store', url]);
      expect(set.stderr).toBe('');
      // Sampled once a second: the commit shows within a few samples.
      await expect.poll(async () => metric(await get('/metrics'), 'percolator_commits_total'), { timeout: 20_000, interval: 200 }).toBe(1);
      const text = await get('/metrics');
      expect(text).toContain('percolator_observer_runs_total{observer="count-words"} 1');
      // One TYPE line a metric: a worker's own counters must not take a name the per-observer series has.
      const types = text.split('\n').filter((l) => l.startsWith('# TYPE '));
      expect(new Set(types).size).toBe(types.length);
      expect(metric(text, 'percolator_observer_failures_total')).toBe(0);
      // Over bigtable:// the worker holds no row cache: the server reports it, not this page.
      expect(text).not.toMatch(/percolator_store_row/);
      const doc = JSON.parse(await get('/status.json')) as { charts: { title: string }[] };
      expect(doc.charts.map((c) => c.title).filter((t) => t.startsWith('Row lookups'))).toEqual([]);
      // Its background GC (counted as gc-sources.test.ts checks), which runs wherever its store is.
      expect(doc.charts.map((c) => c.title)).toContain('Versions collected by background GC');
      for (const family of ['passes', 'passes_failed', 'pass_seconds', 'versions_removed'])
        for (const kind of ['recent', 'full'])
          expect(text).toMatch(new RegExp(`^percolator_gc_${family}_total\\{kind="${kind}"\\} \\d`, 'm'));
      expect(text).toMatch(/^percolator_gc_backlog_cells \d+$/m);
    } finally {
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    }
    expect(worker.stderr()).toMatch(/stopped after 1 observer commits/);
  } finally {
    serve.child.kill('SIGTERM');
    await serve.exited;
  }
}, 60_000);

it("a worker on an embedded store shows its row caches, with the server's metric names", async () => {
  const store = `file:${join(dir, 'embedded')}`;
  // A worker opens a store, never creates one; a first run records its observer (the registry
  // contract: docs/observers.md), so that the change written next, while no worker holds the
  // store, carries a notification for the second run.
  expect((await runCli(mainJs, ['set', 'other', 'r0', 'f:q', 'x', '--store', store, '--create-table'])).code).toBe(0);
  const first = spawnCli(mainJs, ['worker', '--observers', observers, '--store', store]);
  await first.waitForStderr((e) => e.includes('running observers'), 'the first run starts');
  first.child.kill('SIGTERM');
  expect(await first.exited).toBe(0);
  expect((await runCli(mainJs, ['set', 'docs', 'r1', 'raw:content', 'hello cached world', '--store', store])).code).toBe(0);
  const args = ['worker', '--observers', observers, '--store', store, '--http-port', '0', '--row-cache-mib', '3'];
  const worker = spawnCli(mainJs, args);
  try {
    const said = await worker.waitForStderr((e) => e.includes('status and metrics at '), 'it says where its page is');
    const page = /status and metrics at (http:\/\/127\.0\.0\.1:\d+\/)\n/.exec(said)?.[1] as string;
    const get = async (path: string) => (await fetch(new URL(path, page))).text();
    await expect.poll(async () => metric(await get('/metrics'), 'percolator_commits_total'), { timeout: 20_000, interval: 200 }).toBe(1);
    const text = await get('/metrics');
    expect(metric(text, 'percolator_store_row_cache_budget_bytes')).toBe(3 * 2 ** 20);
    expect(text).toMatch(/^percolator_store_row_cache_rows \d+$/m);
    // Every lookup counted by what answered it; the run's reads of a row already looked up, from
    // the decoded tier.
    const decoded = /^percolator_store_row_lookups_total\{answered="decoded"\} (\d+)$/m.exec(text)?.[1];
    expect(Number(decoded)).toBeGreaterThan(0);
    for (const answered of ['encoded', 'absent', 'engine'])
      expect(text).toMatch(new RegExp(`^percolator_store_row_lookups_total\\{answered="${answered}"\\} \\d+$`, 'm'));
    const doc = JSON.parse(await get('/status.json')) as { charts: { title: string }[] };
    expect(doc.charts.map((c) => c.title)).toContain('Row lookups per second, by what answered them (embedded store)');
  } finally {
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  }
}, 60_000);

it('a port in use is LISTEN_FAILED, before the store is opened', async () => {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  try {
    const port = (taken.address() as AddressInfo).port;
    // A store that does not exist: NOT_A_STORE, had the worker opened it first.
    const r = await runCli(mainJs, [
      'worker',
      '--observers',
      observers,
      '--store',
      `file:${join(dir, 'none')}`,
      '--http-port',
      String(port),
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(`^percolator: LISTEN_FAILED: cannot listen on 127\\.0\\.0\\.1:${port} \\(HTTP\\): .*EADDRINUSE[^\\n]*\\n$`),
    );
  } finally {
    await new Promise<void>((r) => taken.close(() => r()));
  }
});

it('a web index worker serves the web index page: documents indexed, crawl-to-index latency, search', async () => {
  const serve = spawnServe(mainJs, ['--store', 'memory:', '--http-port', '0']);
  try {
    const url = await serve.clientUrl;
    const worker = spawnCli(mainJs, ['worker', '--app', 'webindex', '--store', url, '--http-port', '0', '--full-gc-interval', '0']);
    try {
      const said = await worker.waitForStderr((e) => e.includes('status and metrics at '), 'it says where its page is');
      const page = /status and metrics at (http:\/\/127\.0\.0\.1:\d+\/)\n/.exec(said)?.[1] as string;
      const get = async (path: string) => (await fetch(new URL(path, page))).text();
      const load = await runCli(mainJs, ['load', '--docs', '12', '--seed', '3', '--store', url], { timeoutMs: 60_000 });
      expect(load.stderr).toBe('');
      expect((await runCli(mainJs, ['wait', '--store', url, '--timeout', '60'], { timeoutMs: 70_000 })).stdout).toBe('quiescent\n');
      await expect
        .poll(async () => metric(await get('/metrics'), 'percolator_documents_indexed_total'), { timeout: 20_000, interval: 200 })
        .toBe(12);
      const text = await get('/metrics');
      expect(metric(text, 'percolator_latency_median_ms')).toBeGreaterThan(0);
      expect(metric(text, 'percolator_latency_p99_ms')).toBeGreaterThanOrEqual(metric(text, 'percolator_latency_median_ms') as number);
      const found = JSON.parse(await get('/api/search?q=topic0')) as { hits: unknown[] };
      expect(found.hits.length).toBeGreaterThan(0);
    } finally {
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
    }
  } finally {
    serve.child.kill('SIGTERM');
    await serve.exited;
  }
}, 120_000);
