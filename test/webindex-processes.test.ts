/**
 * The web index in the paper's deployment, every part a process of its own: `percolator serve`
 * (the store, oracle and lock service), two `percolator worker --app webindex` (its observers),
 * `percolator load` (the crawler side, two of them at once over the same pages), then `wait` and
 * `search --store`, and a second crawl (`load --crawl 1`) that changes every page.
 * The index the workers build must equal the batch recomputation of the corpus (batch.ts), as the
 * one-process pipeline's does; a load before any worker registered the observers is refused
 * (NOT_OBSERVED) and writes nothing, as are a worker and a load whose clustering keys differ from
 * those the first worker pinned (KEY_MODE_MISMATCH); the worker's options are checked before
 * anything opens.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { batchIndex, readIndexState, type CorpusDoc } from '../src/apps/webindex/batch.js';
import { SyntheticCorpus } from '../src/apps/webindex/corpus/synthetic.js';
import { PAGES } from '../src/apps/webindex/schema.js';
import { expectSameIndex } from '../src/apps/webindex/webindex.fixture.js';
import { Percolator } from '../src/txn/percolator.js';
import { type CliProcess, runCli, spawnCli, spawnServe } from './support/cli-process.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');
const DOCS = 48;
const SEED = 7;

it('serve, two workers and two loaders as processes build the index the batch computes', async () => {
  const serve = spawnServe(mainJs, ['--store', 'memory:', '--http-port', '0']);
  const workers: CliProcess[] = [];
  try {
    const url = await serve.clientUrl;
    const load = (...args: string[]) => runCli(mainJs, ['load', '--store', url, '--seed', String(SEED), ...args], { timeoutMs: 120_000 });

    const early = await load('--docs', '5');
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/^percolator: NOT_OBSERVED: no worker has registered the web index's observers on /);
    expect(early.stderr).toContain('worker --app webindex --key-mode content+url+title --store');

    // The first with the web index's own default over bigtable:// (DEFAULT_REMOTE_THREADS), not a module's 4.
    for (const threads of [[], ['--threads', '4']]) {
      const w = spawnCli(mainJs, ['worker', '--app', 'webindex', '--store', url, ...threads, '--full-gc-interval', '0']);
      workers.push(w);
      const runs = threads.length === 0 ? 64 : 4;
      await w.waitForStderr(
        (e) => e.includes(`running observers of the web index (clustering keys content+url+title) on ${url} with ${runs} threads`),
        'it runs',
      );
    }
    // The first worker pinned its clustering keys: a worker given others, and a corpus that needs
    // others, are refused before they index or load anything (the page count below).
    const other = await runCli(mainJs, ['worker', '--app', 'webindex', '--key-mode', 'content', '--store', url], { timeoutMs: 60_000 });
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(
      /^percolator: KEY_MODE_MISMATCH: this web index clusters documents by the keys content\+url\+title, not content: /,
    );
    const local = await load('--corpus', 'local', '--docs', '3');
    expect(local.code).toBe(1);
    expect(local.stderr).toMatch(/^percolator: KEY_MODE_MISMATCH: .* and this corpus needs content: /);
    // Two crawlers of the same corpus at once: every page fetched twice, the fetches racing (the
    // corpus's content depends on its size, so both must load the same one for the final content
    // not to depend on which fetch committed last).
    const crawls = await Promise.all([load('--docs', String(DOCS), '--json'), load('--docs', String(DOCS), '--json')]);
    for (const c of crawls) {
      expect(c.stderr).toBe('');
      expect(JSON.parse(c.stdout)).toMatchObject({ documents: DOCS, deleted: 0, keyMode: 'content+url+title', store: url });
    }
    const synthetic = new SyntheticCorpus({ docs: DOCS, seed: SEED });
    const db = await Percolator.open({ store: url });
    try {
      // The first crawl; then a second, which changes every page and splits and joins clusters.
      for (const crawl of [0, 1]) {
        if (crawl > 0) expect((await load('--docs', String(DOCS), '--crawl', String(crawl))).stderr).toBe('');
        expect(await runCli(mainJs, ['wait', '--store', url, '--timeout', '120'], { timeoutMs: 130_000 })).toMatchObject({
          code: 0,
          stdout: 'quiescent\n',
        });
        const snap = await db.snapshot();
        try {
          const corpus = [...synthetic.documents(0, DOCS, crawl)] as CorpusDoc[];
          expectSameIndex(await readIndexState(snap), batchIndex(corpus, 'content+url+title'));
          let pages = 0;
          for await (const _ of snap.scan(PAGES, {})) pages++;
          expect(pages).toBe(DOCS);
        } finally {
          snap.release();
        }
      }
    } finally {
      await db.close();
    }
    const searched = await runCli(mainJs, ['search', `topic${synthetic.clusterOfDoc(0)}`, '--store', url, '--json']);
    expect(searched.stderr).toBe('');
    expect((JSON.parse(searched.stdout) as { total: number }).total).toBeGreaterThan(0);
  } finally {
    for (const w of workers) w.child.kill('SIGTERM');
    for (const w of workers) {
      await w.exited;
      expect(w.stderr()).toMatch(/ 0 failures/);
    }
    serve.child.kill('SIGTERM');
    await serve.exited;
  }
}, 240_000);

it('the worker takes a module or the web index, --key-mode only with the web index, load --crawl only a synthetic corpus: before opening anything', async () => {
  const cases: [string[], RegExp][] = [
    [['worker'], /give --observers FILE or --app webindex/],
    [['worker', '--app', 'webindex', '--observers', 'x.mjs'], /option '--app <name>' cannot be used with option '--observers <file>'/],
    [['worker', '--observers', 'x.mjs', '--key-mode', 'content'], /--key-mode goes with --app webindex/],
    [['worker', '--app', 'search'], /argument 'search' is invalid/],
    [['worker', '--app', 'webindex', '--key-mode', 'title'], /argument 'title' is invalid/],
    [['load', '--corpus', 'local', '--crawl', '1'], /--crawl goes with --corpus synthetic/],
  ];
  for (const [args, message] of cases) {
    const r = await runCli(mainJs, [...args, '--store', 'file:/nonexistent/never-created']);
    expect(r.code, args.join(' ')).toBe(1);
    expect(r.stderr, args.join(' ')).toMatch(message);
  }
});
