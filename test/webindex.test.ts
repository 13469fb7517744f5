/**
 * The web index against its batch recomputation: after every batch of updates — first crawl,
 * re-crawls that change content (splitting and merging clusters), re-crawls that change nothing,
 * deletions, re-additions — the state the observers built incrementally must equal the state
 * computed from scratch from the live corpus (batch.ts). Both corpora, concurrent loaders, two
 * workers in two clients, and search.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { batchIndex, batchIndexSummary } from '../src/apps/webindex/batch.js';
import { listLocalDocs, localDocuments } from '../src/apps/webindex/corpus/local.js';
import { SyntheticCorpus } from '../src/apps/webindex/corpus/synthetic.js';
import { type CrawledDoc, loadDocuments } from '../src/apps/webindex/loader.js';
import { createWebIndexTables, registerWebIndex } from '../src/apps/webindex/pipeline.js';
import { clusterObserver } from '../src/apps/webindex/cluster-observer.js';
import { exportObserver } from '../src/apps/webindex/export-observer.js';
import { linkNotifyObserver } from '../src/apps/webindex/link-notify-observer.js';
import { linkObserver } from '../src/apps/webindex/link-observer.js';
import {
  CLUSTERS,
  CLUSTER_ID,
  CLUSTER_STATE,
  DOCS,
  EXPORT_DOC,
  EXPORT_FETCHED_AT,
  EXPORT_STALE,
  EXPORT_TERMS,
  EXPORTS,
  INDEX,
  LINKS_APPLIED_LEGACY,
  LINKS_CHANGED,
  LINKS_INVERTED,
  OBSERVERS,
  PAGES,
  PARSED_KEYS,
  PARSED_LINKS,
  POSTING_SCORE,
  RANK_ANCHORS,
  RANK_COUNTED_AT,
  RANK_DIRTY,
  RANK_INLINKS,
  RAW_CONTENT,
  type ServingDoc,
  postingRow,
} from '../src/apps/webindex/schema.js';
import { MAX_PARSED } from '../src/apps/webindex/parse.js';
import { search } from '../src/apps/webindex/search.js';
import { readStats } from '../src/apps/webindex/stats.js';
import { type TestIndex, expectMatchesBatch, expectSameIndex, openTestIndex } from '../src/apps/webindex/webindex.fixture.js';
import { InProcessLockService } from '../src/notify/lock-service.js';
import { openStore } from '../src/store/open-store.js';
import { Percolator } from '../src/txn/percolator.js';
import type { Transaction } from '../src/txn/transaction.js';

const SLOW = 240_000;
let index: TestIndex | null = null;

/** The URLs search shows for `q`, at a fresh snapshot. */
async function foundUrls(ix: TestIndex, q: string): Promise<string[]> {
  const snap = await ix.db.snapshot();
  try {
    return (await search(snap, q)).hits.map((h) => h.url);
  } finally {
    snap.release();
  }
}
afterEach(async () => {
  await index?.close();
  index = null;
});

/** What the export shows for the cluster `url` is in (null: none). */
async function exportedFor(ix: TestIndex, url: string): Promise<ServingDoc | null> {
  const snap = await ix.db.snapshot();
  try {
    const id = await snap.getString(DOCS, url, CLUSTER_ID);
    const doc = id === null ? null : await snap.getString(EXPORTS, id, EXPORT_DOC);
    return doc === null ? null : (JSON.parse(doc) as ServingDoc);
  } finally {
    snap.release();
  }
}

/** Records every weak notification `tx` makes, as `table/row/column`, and still makes it. */
function recordNotifications(tx: Transaction): string[] {
  const notified: string[] = [];
  const notify = tx.notify;
  tx.notify = function (table, row, column) {
    notified.push(`${table}/${Buffer.from(row).toString()}/${column}`);
    notify.call(this, table, row, column);
  };
  return notified;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}

describe('incremental equals batch (synthetic corpus, three clustering keys)', () => {
  it(
    'after the first crawl, re-crawls, unchanged re-crawls, deletions and re-additions',
    async () => {
      const corpus = new SyntheticCorpus({ docs: 90, seed: 11 });
      const ix = (index = await openTestIndex('content+url+title'));

      await ix.crawl([...corpus.documents()]);
      const first = await expectMatchesBatch(ix, 'content+url+title');
      // The generator's clusters are real: many documents have duplicates.
      expect(Object.keys(first.clusters).length).toBeLessThan(60);
      expect(Object.values(first.results).filter((r) => r.inlinks > 0).length).toBeGreaterThan(10);

      // Re-crawl a third of the documents with new content: copies leave their clusters,
      // originals change title on even versions (their same-title members split off).
      await ix.crawl([
        ...range(0, 90)
          .filter((i) => i % 3 === 0)
          .map((i) => corpus.doc(i, 2)),
        ...range(0, 90)
          .filter((i) => i % 7 === 1)
          .map((i) => corpus.doc(i, 0)),
      ]);
      await expectMatchesBatch(ix, 'content+url+title');

      // Delete some documents, including popular link targets (low numbers) and canonicals.
      const gone = [0, 1, 2, 5, 8, 13, 21, 34, 55];
      await ix.crawl(gone.map((i) => ({ url: corpus.url(i), content: null })));
      await expectMatchesBatch(ix, 'content+url+title');

      // Bring some back at their first version (copies rejoin), re-crawl others again.
      await ix.crawl([0, 5, 21].map((i) => corpus.doc(i, 0)).concat(range(30, 45).map((i) => corpus.doc(i, 3))));
      await expectMatchesBatch(ix, 'content+url+title');

      // Every live document's current version became searchable, with a latency.
      const snap = await ix.db.snapshot();
      const stats = await readStats(snap);
      snap.release();
      expect(stats.documents).toBe(ix.live.size);
      expect(stats.indexedDocuments).toBe(ix.live.size);
      expect(stats.medianLatencyMs).toBeGreaterThanOrEqual(0);
      expect(ix.worker.metrics.parked).toBe(0);
    },
    SLOW,
  );

  it(
    're-crawling unchanged pages changes nothing downstream',
    async () => {
      const corpus = new SyntheticCorpus({ docs: 40, seed: 3 });
      const ix = (index = await openTestIndex('content+url+title'));
      await ix.crawl([...corpus.documents()]);
      const { runs, commits } = ix.worker.metrics;
      await ix.crawl([...corpus.documents(0, 20)]);
      // Only the document processor ran (once per re-crawl); it found nothing to change, so it
      // committed nothing (a run that writes nothing does not commit).
      expect(ix.worker.metrics.runs - runs).toBe(20);
      expect(ix.worker.metrics.commits - commits).toBe(0);
      await expectMatchesBatch(ix, 'content+url+title');
    },
    SLOW,
  );
});

describe('randomized rounds', () => {
  it(
    'random re-crawls, deletions and re-additions at high concurrency, checked after every round',
    async () => {
      const corpus = new SyntheticCorpus({ docs: 60, seed: 99 });
      const ix = (index = await openTestIndex('content+url+title', { threads: 16 }));
      let seed = 12345;
      const rand = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed / 2147483648;
      };
      await ix.crawl([...corpus.documents()], 8);
      await expectMatchesBatch(ix, 'content+url+title');
      for (let round = 1; round <= 6; round++) {
        const batch: CrawledDoc[] = [];
        for (let i = 0; i < 60; i++) {
          const r = rand();
          if (r < 0.15) batch.push({ url: corpus.url(i), content: null });
          else if (r < 0.45) batch.push(corpus.doc(i, Math.floor(rand() * 4)));
        }
        await ix.crawl(batch, 8);
        await expectMatchesBatch(ix, 'content+url+title');
      }
      expect(ix.worker.metrics.parked).toBe(0);
    },
    SLOW,
  );
});

describe('link relay', () => {
  it(
    'notifies the cluster of a target whose link was added, counted and removed again before the relay ran',
    async () => {
      // A diff of link sets between relay runs would see "no change" here and leave the count at 1.
      const t = { url: 'https://t.example/a', content: '# Target\n\ntext', type: 'md' as const };
      const s = { url: 'https://s.example/b', content: '# Source\n\nno links yet', type: 'md' as const };
      const ix = (index = await openTestIndex('content'));
      await ix.crawl([t, s]);
      await ix.worker.stop(); // notifications now wait; observer bodies are run by hand below
      const source = Buffer.from(s.url);
      await ix.db.transaction(async (tx) => tx.set(DOCS, s.url, PARSED_LINKS, JSON.stringify([[t.url, 'to t']])));
      await ix.db.transaction((tx) => linkObserver()(tx, source));
      // t's cluster exported (as it would be for another reason) after the link committed.
      const id = await ix.db.transaction(async (tx) => (await tx.getString(DOCS, t.url, CLUSTER_ID)) as string);
      await ix.db.transaction((tx) => exportObserver()(tx, Buffer.from(id)));
      expect((await exportedFor(ix, t.url))?.inlinks).toBe(1);
      await ix.db.transaction(async (tx) => tx.delete(DOCS, s.url, PARSED_LINKS));
      await ix.db.transaction((tx) => linkObserver()(tx, source));
      await ix.worker.start();
      await ix.db.waitForQuiescence({ timeoutMs: 60_000 });
      expect((await exportedFor(ix, t.url))?.inlinks).toBe(0);
      await expectMatchesBatch(ix, 'content');
    },
    SLOW,
  );
});

describe('export', () => {
  it(
    'a cluster state rewritten as it was runs the export, which writes nothing; a changed one rewrites the document',
    async () => {
      const a = { url: 'https://a.example/x', content: '# Alpha\n\nsome text', type: 'md' as const };
      const ix = (index = await openTestIndex('content'));
      await ix.crawl([a]);
      const exportRuns = () => ix.worker.metrics.observerMs[OBSERVERS.export] ?? { runs: 0, commits: 0 };
      const read = async () => {
        const snap = await ix.db.snapshot();
        try {
          const id = (await snap.getString(DOCS, a.url, CLUSTER_ID)) as string;
          return { id, state: await snap.getString(CLUSTERS, id, CLUSTER_STATE), doc: await snap.getString(EXPORTS, id, EXPORT_DOC) };
        } finally {
          snap.release();
        }
      };
      const before = await read();
      expect(before.doc).not.toBeNull();
      const { runs, commits } = exportRuns();
      await ix.db.transaction(async (tx) => tx.set(CLUSTERS, before.id, CLUSTER_STATE, before.state as string));
      await ix.db.waitForQuiescence({ timeoutMs: 60_000 });
      expect(exportRuns().runs).toBe(runs + 1);
      expect(exportRuns().commits).toBe(commits);
      expect((await read()).doc).toBe(before.doc);

      await ix.crawl([{ ...a, content: '# Alpha, revised\n\nsome text' }]);
      const after = await read();
      expect(JSON.parse(after.doc as string).title).toBe('Alpha, revised');
      expect(JSON.parse(after.doc as string).indexedAt).toBeGreaterThanOrEqual(JSON.parse(before.doc as string).indexedAt);
      await expectMatchesBatch(ix, 'content');
    },
    SLOW,
  );
});

describe('export of a large cluster', () => {
  it(
    'counts the in-links of every member, more members than it scans at once',
    async () => {
      const copies = range(0, 19).map((i) => ({
        url: `https://c${i}.example/x`,
        content: '# Copied\n\nthe same text',
        type: 'md' as const,
      }));
      // Source k links to copies 0..k: copy i has 18 − i in-links, and the canonical is copy 0.
      const sources = range(0, 18).map((k) => ({
        url: `https://s${k}.example/`,
        content: `# Source ${k}\n\n${range(0, Math.min(k + 1, 19))
          .map((i) => `[copy](${copies[i]?.url})`)
          .join(' ')}`,
        type: 'md' as const,
      }));
      const ix = (index = await openTestIndex('content'));
      await ix.crawl([...copies, ...sources]);
      const got = await expectMatchesBatch(ix, 'content');
      expect(Object.values(got.clusters).some((c) => c.size === 19)).toBe(true);
      expect(await exportedFor(ix, copies[0]?.url as string)).toMatchObject({ url: copies[0]?.url, size: 19, inlinks: 18 });
    },
    SLOW,
  );
});

describe('export results of an earlier build', () => {
  const a = { url: 'https://a.example/x', content: '# Alpha\n\nsome zebra text', type: 'md' as const };
  /**
   * An index of one document as a build before `exports` left it: the result and terms in the
   * cluster's row, and a posting its terms list that the current content no longer has.
   */
  async function legacyIndex() {
    const ix = (index = await openTestIndex('content'));
    await ix.crawl([a]);
    const id = await ix.db.transaction(async (tx) => {
      const cluster = (await tx.getString(DOCS, a.url, CLUSTER_ID)) as string;
      const terms = JSON.parse((await tx.getString(EXPORTS, cluster, EXPORT_TERMS)) as string) as [string, number][];
      const doc = (await tx.getString(EXPORTS, cluster, EXPORT_DOC)) as string;
      tx.delete(EXPORTS, cluster, EXPORT_TERMS);
      tx.delete(EXPORTS, cluster, EXPORT_DOC);
      tx.set(CLUSTERS, cluster, EXPORT_TERMS, JSON.stringify([...terms, ['zzstale', 1]]));
      tx.set(CLUSTERS, cluster, EXPORT_DOC, doc);
      tx.set(INDEX, postingRow('zzstale', cluster), POSTING_SCORE, '1');
      return cluster;
    });
    const found = (q: string) => foundUrls(ix, q);
    const read = (table: string, column: string, row = id) => ix.db.getString(table, row, column);
    return { ix, id, found, read };
  }

  it(
    'are found by search where that build left them (clusters), and moved to exports by the next export, stale postings kept and ignored',
    async () => {
      const { ix, id, found, read } = await legacyIndex();
      expect(await found('zebra')).toEqual([a.url]);
      expect(await found('zzstale')).toEqual([a.url]);

      await ix.db.transaction(async (tx) =>
        tx.set(CLUSTERS, id, CLUSTER_STATE, (await tx.getString(CLUSTERS, id, CLUSTER_STATE)) as string),
      );
      await ix.db.waitForQuiescence({ timeoutMs: 60_000 });
      expect(await read(CLUSTERS, EXPORT_TERMS)).toBeNull();
      expect(await read(CLUSTERS, EXPORT_DOC)).toBeNull();
      expect(await read(EXPORTS, EXPORT_TERMS)).not.toContain('zzstale');
      expect(JSON.parse((await read(EXPORTS, EXPORT_DOC)) as string).url).toBe(a.url);
      // The term left the document: its posting stays, listed as stale (repost.ts), and unsearched.
      expect(await read(INDEX, POSTING_SCORE, postingRow('zzstale', id))).toBe('1');
      expect(JSON.parse((await read(EXPORTS, EXPORT_STALE)) as string)).toEqual([['zzstale', 1]]);
      expect(await found('zebra')).toEqual([a.url]);
      expect(await found('zzstale')).toEqual([]);
      await expectMatchesBatch(ix, 'content');
    },
    SLOW,
  );

  it(
    'of a cluster that then vanishes are removed, with every posting they list',
    async () => {
      const { ix, found, read } = await legacyIndex();
      await ix.crawl([{ url: a.url, content: null }]);
      expect(await read(CLUSTERS, EXPORT_TERMS)).toBeNull();
      expect(await read(CLUSTERS, EXPORT_DOC)).toBeNull();
      expect(await found('zebra')).toEqual([]);
      expect(await found('zzstale')).toEqual([]);
      // The batch recomputation of an empty corpus has no postings at all.
      await expectMatchesBatch(ix, 'content');
    },
    SLOW,
  );
});

describe('stale postings', () => {
  // Two pages joined by their title; the canonical is the one with more in-links (ties: URL).
  const a = { url: 'https://a.example/one', content: '# Fruit\n\napple orchard notes', type: 'md' as const };
  const b = { url: 'https://b.example/two', content: '# Fruit\n\nbanana plantation notes', type: 'md' as const };
  const linker = { url: 'https://c.example/l', content: '# Linker\n\n[tropical](https://b.example/two)', type: 'md' as const };

  it(
    'are kept when the canonical changes, never found, reused as they are when it changes back, and removed with the cluster',
    async () => {
      const ix = (index = await openTestIndex('content+url+title'));
      const found = (q: string) => foundUrls(ix, q);
      const version = (id: string, term: string) =>
        ix.db.transaction(async (tx) => (await tx.getVersion(INDEX, postingRow(term, id), POSTING_SCORE)).commitTs);
      const staleTerms = async (id: string) =>
        (JSON.parse((await ix.db.getString(EXPORTS, id, EXPORT_STALE)) ?? '[]') as [string, number][]).map(([t]) => t).sort();

      await ix.crawl([a, b]);
      const id = (await ix.db.getString(DOCS, a.url, CLUSTER_ID)) as string;
      expect(await ix.db.getString(DOCS, b.url, CLUSTER_ID)).toBe(id);
      expect(await found('apple')).toEqual([a.url]);
      expect(await found('banana')).toEqual([]);
      const applePosted = await version(id, 'apple');
      await expectMatchesBatch(ix, 'content+url+title');

      await ix.crawl([linker]); // b now has an in-link: b is the canonical
      expect(await found('banana')).toEqual([b.url]);
      expect(await found('apple')).toEqual([]);
      expect(await found('fruit tropical')).toEqual([b.url]);
      // Scored from the live list: the sum of its buckets for the query's terms.
      const live = new Map(JSON.parse((await ix.db.getString(EXPORTS, id, EXPORT_TERMS)) as string) as [string, number][]);
      const snap = await ix.db.snapshot();
      const hit = (await search(snap, 'fruit tropical')).hits[0];
      snap.release();
      expect(hit?.score).toBe((live.get('fruit') as number) + (live.get('tropical') as number));
      expect(await staleTerms(id)).toEqual(['apple', 'orchard']);
      expect(await version(id, 'apple')).toBe(applePosted);
      await expectMatchesBatch(ix, 'content+url+title');

      await ix.crawl([{ url: linker.url, content: null }]); // back to a
      expect(await found('apple')).toEqual([a.url]);
      expect(await found('banana')).toEqual([]);
      expect(await staleTerms(id)).toEqual(['banana', 'plantation', 'tropical']);
      expect(await version(id, 'apple')).toBe(applePosted); // live again without a write
      await expectMatchesBatch(ix, 'content+url+title');

      await ix.crawl([
        { url: a.url, content: null },
        { url: b.url, content: null },
      ]);
      expect(await ix.db.getString(EXPORTS, id, EXPORT_STALE)).toBeNull();
      for (const t of ['apple', 'banana', 'tropical', 'fruit'])
        expect(await ix.db.getString(INDEX, postingRow(t, id), POSTING_SCORE)).toBeNull();
      await expectMatchesBatch(ix, 'content+url+title'); // no postings at all, stale ones included
    },
    SLOW,
  );
});

describe('the index reader', () => {
  it('reports postings neither list has, listed terms without their posting, and terms in both lists', async () => {
    const ix = (index = await openTestIndex('content'));
    await ix.crawl([{ url: 'https://a.example/x', content: '# Alpha\n\nsome zebra text', type: 'md' }]);
    const id = (await ix.db.getString(DOCS, 'https://a.example/x', CLUSTER_ID)) as string;
    // A posting's key is `term \0 id`, and a term has no spaces; the reader's reports do.
    const anomalies = async () => Object.keys((await ix.state()).postings).filter((k) => k.split('\u0000')[0]?.includes(' '));
    expect(await anomalies()).toEqual([]);
    await ix.db.transaction(async (tx) => {
      tx.set(INDEX, postingRow('stray', id), POSTING_SCORE, '1');
      tx.delete(INDEX, postingRow('zebra', id), POSTING_SCORE);
      tx.set(
        EXPORTS,
        id,
        EXPORT_STALE,
        JSON.stringify([
          ['alpha', 3],
          ['gone', 1],
        ]),
      );
    });
    expect((await anomalies()).sort()).toEqual(
      [
        `live and stale alpha\u0000${id}`,
        `live term without posting zebra\u0000${id}`,
        `stale term without posting gone\u0000${id}`,
        `unlisted posting stray\u0000${id}`,
      ].sort(),
    );
  });
});

describe('the index summary', () => {
  const url = 'https://a.example/x';
  const content = '# Alpha\n\nsome zebra text';
  // Each breaks one of repost.ts's invariants, as the reader's test above does together.
  const breakages: [string, (tx: Transaction, id: string) => void][] = [
    ['a posting neither list has', (tx, id) => tx.set(INDEX, postingRow('stray', id), POSTING_SCORE, '1')],
    ['a live term without its posting', (tx, id) => tx.delete(INDEX, postingRow('zebra', id), POSTING_SCORE)],
    ['a posting at another score than listed', (tx, id) => tx.set(INDEX, postingRow('zebra', id), POSTING_SCORE, '7')],
    ['a stale term without its posting', (tx, id) => tx.set(EXPORTS, id, EXPORT_STALE, JSON.stringify([['gone', 1]]))],
    ['a term in both lists', (tx, id) => tx.set(EXPORTS, id, EXPORT_STALE, JSON.stringify([['alpha', 3]]))],
    ['a live list missing a posted term', (tx, id) => tx.set(EXPORTS, id, EXPORT_TERMS, JSON.stringify([['alpha', 3]]))],
  ];

  it.each(breakages)('differs from the batch for %s, as the entries do', async (_what, breakIt) => {
    const ix = (index = await openTestIndex('content'));
    await ix.crawl([{ url, content, type: 'md' }]);
    await expectMatchesBatch(ix, 'content'); // the summary included
    const id = (await ix.db.getString(DOCS, url, CLUSTER_ID)) as string;
    await ix.db.transaction(async (tx) => breakIt(tx, id));
    const want = batchIndexSummary(ix.live.values(), 'content');
    const got = await ix.summary();
    expect(got.postings).not.toEqual(want.postings);
    expect({ ...got, postings: want.postings }).toEqual(want); // only the postings differ
    expect((await ix.state()).postings).not.toEqual(batchIndex(ix.live.values(), 'content').postings);
  });
});

describe('cluster ids', () => {
  /** Every posting row's cluster id, at a fresh snapshot. */
  async function postedIds(ix: TestIndex): Promise<Set<string>> {
    const snap = await ix.db.snapshot();
    const ids = new Set<string>();
    for await (const r of snap.scan(INDEX, {}, { columns: [POSTING_SCORE] })) {
      const key = r.row.toString();
      ids.add(key.slice(key.indexOf('\u0000') + 1));
    }
    snap.release();
    return ids;
  }

  it('outlive a join that brings a smaller key: nothing is posted again under another id', async () => {
    const { fp, t, pair } = await targetAndJoiner();
    // t's title, with a smaller fingerprint than t's: before ids were kept, the join renamed t's cluster.
    const u = range(0, 100)
      .map((i) => ({ url: 'https://u.example/c', content: `# Target title\n\nvariant ${i}`, type: 'md' as const }))
      .find((d) => fp(d) < fp(t));
    if (u === undefined) throw new Error('no variant with a smaller fingerprint');
    const ix = (index = await openTestIndex('content+url+title'));
    await ix.crawl([t, ...pair]);
    const before = await postedIds(ix);
    expect(before).toEqual(new Set([fp(t), fp(pair[0] as typeof t)]));
    await ix.crawl([u]);
    expect(await ix.db.getString(DOCS, u.url, CLUSTER_ID)).toBe(fp(t));
    expect(await ix.db.getString(CLUSTERS, fp(u), CLUSTER_STATE)).toBeNull();
    expect(await postedIds(ix)).toEqual(before);
    await expectMatchesBatch(ix, 'content+url+title');
  });

  it('of a new cluster whose smallest key a cluster holds as its id take a suffix', async () => {
    const a = { url: 'https://a.example/x', content: '# First title\n\nfirst text', type: 'md' as const };
    const b = { url: 'http://www.a.example/x/', content: '# Other title\n\nother text', type: 'md' as const }; // a's URL key
    const ix = (index = await openTestIndex('content+url+title'));
    await ix.crawl([a]);
    const id = (await ix.db.getString(DOCS, a.url, CLUSTER_ID)) as string;
    expect(id.startsWith('fp:')).toBe(true);
    await ix.crawl([b]);
    // a changes: the cluster (joined by the URL key) keeps the id of a fingerprint no member has now.
    await ix.crawl([{ ...a, content: '# Third title\n\nthird text' }]);
    for (const d of [a, b]) expect(await ix.db.getString(DOCS, d.url, CLUSTER_ID)).toBe(id);
    // c carries that fingerprint (a's first content elsewhere) and shares no key with the cluster.
    const c = { ...a, url: 'https://c.example/y' };
    await ix.crawl([c]);
    const cid = (await ix.db.getString(DOCS, c.url, CLUSTER_ID)) as string;
    expect(cid).toMatch(new RegExp(`^${id}#\\d+$`));
    expect(JSON.parse((await ix.db.getString(CLUSTERS, cid, CLUSTER_STATE)) as string)).toMatchObject({ members: [c.url] });
    expect(JSON.parse((await ix.db.getString(CLUSTERS, id, CLUSTER_STATE)) as string)).toMatchObject({ members: [b.url, a.url].sort() });
    expect(await foundUrls(ix, 'first text')).toEqual([c.url]);
    await expectMatchesBatch(ix, 'content+url+title');
  });

  it('the index reader names as the batch does, and marks two clusters it would name alike', async () => {
    const a = { url: 'https://a.example/x', content: '# Alpha\n\nsome text', type: 'md' as const };
    const ix = (index = await openTestIndex('content'));
    await ix.crawl([a]);
    const id = (await ix.db.getString(DOCS, a.url, CLUSTER_ID)) as string;
    const state = (await ix.db.getString(CLUSTERS, id, CLUSTER_STATE)) as string;
    await ix.db.transaction(async (tx) => tx.set(CLUSTERS, `${id}#1`, CLUSTER_STATE, state)); // a listed twice
    expect(Object.keys((await ix.state()).clusters).sort()).toEqual([id, `cluster ${id}#1 named ${id} again`].sort());
  });
});

describe('relay targets', () => {
  it(
    'are the clusters of the linked documents that are in one, each notified once; other targets are skipped',
    async () => {
      const t = { url: 'https://t.example/a', content: '# Target\n\ntext', type: 'md' as const };
      const d = { url: 'https://d.example/a', content: t.content, type: 'md' as const }; // t's duplicate
      const o = { url: 'https://o.example/a', content: '# Other\n\nmore text', type: 'md' as const };
      const s = { url: 'https://s.example/c', content: '# Source\n\nno links yet', type: 'md' as const };
      const absent = 'https://n.example/never-crawled';
      const ix = (index = await openTestIndex('content'));
      await ix.crawl([t, d, o, s]);
      await ix.worker.stop();
      const source = Buffer.from(s.url);
      const links = [t.url, d.url, o.url, absent].map((u) => [u, 'to it']);
      await ix.db.transaction(async (tx) => tx.set(DOCS, s.url, PARSED_LINKS, JSON.stringify(links)));
      await ix.db.transaction((tx) => linkObserver()(tx, source));
      const tx = await ix.db.begin();
      const notified = recordNotifications(tx);
      try {
        await linkNotifyObserver()(tx, source);
        await tx.commit();
      } finally {
        tx.release();
      }
      const ids = await ix.db.transaction(async (r) =>
        Promise.all([t, o].map(async (x) => (await r.getString(DOCS, x.url, CLUSTER_ID)) as string)),
      );
      expect(notified.sort()).toEqual(ids.map((id) => `${CLUSTERS}/${id}/${CLUSTER_STATE}`).sort());
      await ix.worker.start();
      await ix.db.waitForQuiescence({ timeoutMs: 60_000 });
      // The links to t and d count for their cluster's canonical (d: the smaller URL, a tie).
      expect(await exportedFor(ix, t.url)).toMatchObject({ url: d.url, inlinks: 1 });
      expect(await exportedFor(ix, o.url)).toMatchObject({ url: o.url, inlinks: 1 });
      // The relay consumed the change list.
      const snap = await ix.db.snapshot();
      expect(await snap.get(DOCS, s.url, LINKS_CHANGED)).toBeNull();
      snap.release();
    },
    SLOW,
  );
});

describe('who relays link changes', () => {
  const relayRuns = (ix: TestIndex) => ix.worker.metrics.observerMs[OBSERVERS.linksRelay]?.runs ?? 0;

  it(
    'the cluster run for a parse that changes keys, the relay for a link change that does not',
    async () => {
      const t1 = { url: 'https://t.example/1', content: '# One\n\ntext', type: 'md' as const };
      const t2 = { url: 'https://t.example/2', content: '# Two\n\ntext', type: 'md' as const };
      const s = { url: 'https://s.example/s', content: `# Source\n\n[a page](${t1.url})`, type: 'md' as const };
      const ix = (index = await openTestIndex('content'));
      await ix.crawl([t1, t2, s]);
      await expectMatchesBatch(ix, 'content');
      // New documents: every processor commit wrote parsed:keys, so their cluster runs relayed.
      expect(relayRuns(ix)).toBe(0);
      // Same title and text, so the same keys: only the relay can tell t1 and t2.
      await ix.crawl([{ ...s, content: `# Source\n\n[a page](${t2.url})` }]);
      expect(relayRuns(ix)).toBe(1);
      expect([(await exportedFor(ix, t1.url))?.inlinks, (await exportedFor(ix, t2.url))?.inlinks]).toEqual([0, 1]);
      await expectMatchesBatch(ix, 'content');
    },
    SLOW,
  );

  it(
    'reads the link set where earlier builds kept it (links:applied) and moves it',
    async () => {
      const t = { url: 'https://t.example/a', content: '# Target\n\ntext', type: 'md' as const };
      const s = { url: 'https://s.example/b', content: `# Source\n\n[to t](${t.url}) and more`, type: 'md' as const };
      const ix = (index = await openTestIndex('content'));
      await ix.crawl([t, s]);
      // What an earlier build left: the set under links:applied (whose write notifies its relay).
      await ix.db.transaction(async (tx) => {
        const inverted = await tx.get(PAGES, s.url, LINKS_INVERTED);
        expect(inverted).not.toBeNull();
        tx.set(DOCS, s.url, LINKS_APPLIED_LEGACY, inverted as Uint8Array);
        tx.delete(PAGES, s.url, LINKS_INVERTED);
      });
      await ix.db.waitForQuiescence({ timeoutMs: 60_000 });
      // The link goes: its anchor row is only found through links:applied.
      await ix.crawl([{ ...s, content: '# Source\n\nto t and more' }]);
      const snap = await ix.db.snapshot();
      expect(await snap.get(DOCS, s.url, LINKS_APPLIED_LEGACY)).toBeNull();
      snap.release();
      expect((await exportedFor(ix, t.url))?.inlinks).toBe(0);
      await expectMatchesBatch(ix, 'content');
    },
    SLOW,
  );
});

describe('cluster states and link sets an earlier build wrote as objects keyed by URL (the link set in docs)', () => {
  it(
    'are read by every run that meets them; the link set is moved to pages, the state rewritten as members only by the next clustering',
    async () => {
      const t = { url: 'https://t.example/a', content: '# Target\n\nsame text', type: 'md' as const };
      const d = { url: 'https://d.example/a', content: '# Target\n\nsame text', type: 'md' as const };
      const s = { url: 'https://s.example/b', content: `# Source\n\n[to t](${t.url}) [to d](${d.url})`, type: 'md' as const };
      const ix = (index = await openTestIndex('content'));
      await ix.crawl([t, d, s]);
      // What a build before 2026-11-27 left: the state with the members' in-link counts, as an
      // object keyed by URL…
      const id = await ix.db.transaction(async (tx) => {
        const cid = (await tx.getString(DOCS, t.url, CLUSTER_ID)) as string;
        const state = JSON.parse((await tx.getString(CLUSTERS, cid, CLUSTER_STATE)) as string) as unknown;
        expect(state).toEqual({ size: 2, members: [d.url, t.url] });
        tx.set(CLUSTERS, cid, CLUSTER_STATE, JSON.stringify({ canonical: d.url, size: 2, members: { [d.url]: 1, [t.url]: 1 } }));
        // …and the link set in docs[s], where those builds kept it.
        const links = JSON.parse((await tx.getString(PAGES, s.url, LINKS_INVERTED)) as string) as [string, string][];
        expect(links).toHaveLength(2);
        expect(await tx.get(DOCS, s.url, LINKS_INVERTED)).toBeNull();
        tx.set(DOCS, s.url, LINKS_INVERTED, JSON.stringify(Object.fromEntries(links)));
        tx.delete(PAGES, s.url, LINKS_INVERTED);
        return cid;
      });
      await ix.db.waitForQuiescence({ timeoutMs: 60_000 }); // the export ran on the object form
      await expectMatchesBatch(ix, 'content');
      // The source drops its link to d: its processor diffs against the object form; the relay
      // notifies the cluster (no cluster changes), which leaves the state as it is, and the export
      // reads it again: t is now the canonical.
      await ix.crawl([{ ...s, content: `# Source\n\n[to t](${t.url})` }]);
      await expectMatchesBatch(ix, 'content');
      const read = async (table: string, row: string, column: string) => {
        const snap = await ix.db.snapshot();
        try {
          const v = await snap.getString(table, row, column);
          return v === null ? null : (JSON.parse(v) as unknown);
        } finally {
          snap.release();
        }
      };
      expect(await read(CLUSTERS, id, CLUSTER_STATE)).toEqual({ canonical: d.url, size: 2, members: { [d.url]: 1, [t.url]: 1 } });
      expect(((await read(EXPORTS, id, EXPORT_DOC)) as { url: string }).url).toBe(t.url);
      expect(await read(PAGES, s.url, LINKS_INVERTED)).toEqual([[t.url, 'to t']]);
      expect(await read(DOCS, s.url, LINKS_INVERTED)).toBeNull();
      // A third copy joins: the cluster run reads the object form and writes members only.
      const e = { url: 'https://e.example/a', content: t.content, type: 'md' as const };
      await ix.crawl([e]);
      await expectMatchesBatch(ix, 'content');
      expect(await read(CLUSTERS, id, CLUSTER_STATE)).toEqual({ size: 3, members: [d.url, e.url, t.url] });
    },
    SLOW,
  );
});

describe('link relay and joins', () => {
  it(
    "counts a link inverted while its target was joining (the relay found it in no cluster; the join's export counts it)",
    async () => {
      const t = { url: 'https://t.example/a', content: '# Target\n\ntext', type: 'md' as const };
      const s = { url: 'https://s.example/b', content: `# Source\n\n[to t](${t.url})`, type: 'md' as const };
      const ix = (index = await openTestIndex('content'));
      await ix.worker.stop(); // everything below is driven by hand, in a chosen order
      await loadDocuments(ix.db, [t, s]);
      for (const d of [t, s]) ix.live.set(d.url, d);
      const { processObserver } = await import('../src/apps/webindex/process-observer.js');
      const proc = processObserver({ keyMode: 'content' });
      await ix.db.transaction((tx) => proc(tx, Buffer.from(t.url)));
      // The target's join reads (no in-links yet) but has not committed...
      const join = await ix.db.begin();
      await clusterObserver()(join, Buffer.from(t.url), PARSED_KEYS);
      // ...when the source is parsed (which inverts its link) and its link relayed.
      await ix.db.transaction((tx) => proc(tx, Buffer.from(s.url)));
      await ix.db.transaction((tx) => linkNotifyObserver()(tx, Buffer.from(s.url)));
      const before = await ix.db.snapshot();
      expect(await before.get(DOCS, t.url, CLUSTER_ID)).toBeNull(); // not a member when relayed
      before.release();
      await join.commit();
      join.release();
      await ix.worker.start();
      await ix.db.waitForQuiescence({ timeoutMs: 60_000 });
      expect((await exportedFor(ix, t.url))?.inlinks).toBe(1);
      await expectMatchesBatch(ix, 'content');
    },
    SLOW,
  );
});

describe('cluster runs of one process', () => {
  it(
    'that reach one cluster through keys they do not share wait for each other instead of conflicting at commit',
    async () => {
      // c shares a's normalized URL, d its title; c and d share no key.
      const a = { url: 'https://a.example/x', content: '# Shared title\n\nthe original body', type: 'md' as const };
      const c = { url: 'https://www.a.example/x/', content: '# Another title\n\na mirror with other text', type: 'md' as const };
      const d = { url: 'https://d.example/y', content: '# Shared title\n\na third text', type: 'md' as const };
      const ix = (index = await openTestIndex('content+url+title'));
      await ix.crawl([a]);
      await ix.worker.stop(); // c and d are clustered by hand, concurrently
      await loadDocuments(ix.db, [c, d]);
      for (const doc of [c, d]) ix.live.set(doc.url, doc);
      const { processObserver } = await import('../src/apps/webindex/process-observer.js');
      const proc = processObserver({ keyMode: 'content+url+title' });
      for (const doc of [c, d]) await ix.db.transaction((tx) => proc(tx, Buffer.from(doc.url)));
      const cluster = clusterObserver(); // one process: one gate
      const [txC, txD] = [await ix.db.begin(), await ix.db.begin()];
      const runC = cluster(txC, Buffer.from(c.url), PARSED_KEYS).then(() => 'c' as const);
      const runD = cluster(txD, Buffer.from(d.url), PARSED_KEYS).then(() => 'd' as const);
      // Both would write the state of a's cluster: the second to get there waits for the first.
      const first = await Promise.race([runC, runD]);
      await (first === 'c' ? txC : txD).commit();
      await expect(first === 'c' ? runD : runC).rejects.toMatchObject({ code: 'WRITE_CONFLICT', details: { retryNow: true } });
      for (const tx of [txC, txD]) tx.release();
      const again = first === 'c' ? d : c;
      await ix.db.transaction((tx) => cluster(tx, Buffer.from(again.url), PARSED_KEYS));
      await ix.worker.start();
      await ix.db.waitForQuiescence({ timeoutMs: 60_000 });
      const snap = await ix.db.snapshot();
      const id = (await snap.getString(DOCS, a.url, CLUSTER_ID)) as string;
      expect(await snap.getString(DOCS, c.url, CLUSTER_ID)).toBe(id);
      expect(await snap.getString(DOCS, d.url, CLUSTER_ID)).toBe(id);
      snap.release();
      await expectMatchesBatch(ix, 'content+url+title');
    },
    SLOW,
  );
});

/**
 * A page t alone in its cluster, a pair (one content at two URLs: a cluster of two) and a joiner u:
 * the pair's content at t's URL written another way, so u shares t's URL key and the pair's
 * fingerprint. u's join merges the two clusters, and the merged cluster keeps the pair's id (more
 * of its members had it, cluster-ids.ts): t moves to another cluster. `fp` is a page's
 * fingerprint key, the id of a cluster that started with it.
 */
async function targetAndJoiner() {
  const { clusterKeys, parseDocument } = await import('../src/apps/webindex/parse.js');
  const fp = (d: { url: string; content: string }) =>
    clusterKeys(d.url, parseDocument(d.url, 'md', d.content), 'content+url+title')[0] as string;
  const t = { url: 'https://t.example/a', content: '# Target title\n\nthe target', type: 'md' as const };
  const pairContent = '# Pair title\n\nthe pair';
  const pair = ['https://v.example/1', 'https://v.example/2'].map((url) => ({ url, content: pairContent, type: 'md' as const }));
  const u = { url: 'http://www.t.example/a/', content: pairContent, type: 'md' as const };
  return { fp, t, pair, u };
}

describe('export runs of one process', () => {
  it(
    "that would both record a member's latency wait for each other instead of conflicting at commit",
    async () => {
      const { processObserver } = await import('../src/apps/webindex/process-observer.js');
      const { fp, t, pair, u } = await targetAndJoiner();
      const ix = (index = await openTestIndex('content+url+title'));
      await ix.worker.stop(); // by hand: t is clustered, then moved by u's join before any export ran
      const proc = processObserver({ keyMode: 'content+url+title' });
      const cluster = clusterObserver();
      const step = async (doc: typeof t) => {
        await loadDocuments(ix.db, [doc]);
        ix.live.set(doc.url, doc);
        await ix.db.transaction((tx) => proc(tx, Buffer.from(doc.url)));
        await ix.db.transaction((tx) => cluster(tx, Buffer.from(doc.url), PARSED_KEYS));
      };
      for (const d of [...pair, t]) await step(d);
      const old = await ix.db.begin(); // t alone in its cluster, its latency not recorded
      await step(u);
      const merged = await ix.db.begin(); // t in the pair's cluster, its latency still not recorded
      expect(await merged.getString(DOCS, t.url, CLUSTER_ID)).toBe(fp(u));
      const exported = exportObserver(); // one process: one gate
      await exported(old, Buffer.from(fp(t))); // records t's latency (not committed yet)
      const second = exported(merged, Buffer.from(fp(u))); // would record it too: waits
      await old.commit();
      old.release();
      // Without the gate it would have done all its work and conflicted on export:fetchedAt at commit.
      await expect(second).rejects.toMatchObject({ code: 'WRITE_CONFLICT', details: { retryNow: true } });
      merged.abort();
      merged.release();
      await ix.db.transaction((tx) => exported(tx, Buffer.from(fp(u)))); // the retry: only u's latency is left to record
      const snap = await ix.db.snapshot();
      for (const d of [...pair, t, u]) expect(await snap.getString(DOCS, d.url, EXPORT_FETCHED_AT)).not.toBeNull();
      snap.release();
      await ix.worker.start();
      await ix.db.waitForQuiescence({ timeoutMs: 60_000 });
      await expectMatchesBatch(ix, 'content+url+title');
    },
    SLOW,
  );
});

describe('in-link counts', () => {
  it(
    'of a link relayed while another process moves its target to another cluster are the export of the cluster it joins',
    async () => {
      const { processObserver } = await import('../src/apps/webindex/process-observer.js');
      const { fp, t, pair, u } = await targetAndJoiner();
      const s = { url: 'https://s.example/b', content: '# Source\n\nno links yet', type: 'md' as const };
      const ix = (index = await openTestIndex('content+url+title'));
      await ix.crawl([t, s, ...pair]);
      await ix.worker.stop(); // by hand from here: s's link relayed by one process while another moves t
      const oldId = fp(t);
      const s1 = { ...s, content: `# Source\n\n[to t](${t.url})` };
      await loadDocuments(ix.db, [s1, u]);
      for (const doc of [s1, u]) ix.live.set(doc.url, doc);
      const proc = processObserver({ keyMode: 'content+url+title' });
      for (const doc of [s1, u]) await ix.db.transaction((tx) => proc(tx, Buffer.from(doc.url)));
      const [processA, processB] = [clusterObserver(), clusterObserver()]; // two gates
      const [relay, move] = [await ix.db.begin(), await ix.db.begin()];
      const notified = recordNotifications(relay);
      await processA(relay, Buffer.from(s1.url), PARSED_KEYS); // s's cluster run relays its link...
      expect(notified).toContain(`${CLUSTERS}/${oldId}/${CLUSTER_STATE}`); // ...to t's cluster at its snapshot
      await processB(move, Buffer.from(u.url), PARSED_KEYS); // u joins: t moves to the pair's cluster
      await move.commit();
      move.release();
      await relay.commit(); // no conflict: nothing here orders the two
      relay.release();
      const merged = fp(u);
      await ix.db.transaction(async (tx) => expect(await tx.getString(DOCS, t.url, CLUSTER_ID)).toBe(merged));
      // The merged cluster's export (the move's c:state write asked for it) started after the link
      // committed, so it counts it: t, with the only in-link, is the canonical.
      await ix.db.transaction((tx) => exportObserver()(tx, Buffer.from(merged)));
      expect(await exportedFor(ix, t.url)).toMatchObject({ url: t.url, inlinks: 1 });
      await ix.worker.start();
      await ix.db.waitForQuiescence({ timeoutMs: 60_000 });
      await expectMatchesBatch(ix, 'content+url+title');
    },
    SLOW,
  );

  it(
    'an earlier build kept per document are deleted by its next cluster run, and its recount requests notify the cluster',
    async () => {
      const t = { url: 'https://t.example/a', content: '# Target\n\ntext', type: 'md' as const };
      const s = { url: 'https://s.example/b', content: `# Source\n\n[to t](${t.url})`, type: 'md' as const };
      const ix = (index = await openTestIndex('content'));
      await ix.crawl([t]);
      await ix.worker.stop();
      await loadDocuments(ix.db, [s]);
      ix.live.set(s.url, s);
      const { processObserver } = await import('../src/apps/webindex/process-observer.js');
      await ix.db.transaction((tx) => processObserver({ keyMode: 'content' })(tx, Buffer.from(s.url)));
      // What such a build did next: its relay consumed s's change list and asked t to recount;
      // t kept a count.
      await ix.db.transaction(async (tx) => {
        tx.delete(DOCS, s.url, LINKS_CHANGED);
        tx.notify(DOCS, t.url, RANK_DIRTY);
        tx.set(DOCS, t.url, RANK_INLINKS, '7');
        tx.set(DOCS, t.url, RANK_ANCHORS, '[["stale",1]]');
        tx.set(DOCS, t.url, RANK_COUNTED_AT, '1');
      });
      await ix.worker.start();
      await ix.db.waitForQuiescence({ timeoutMs: 60_000 });
      // Only t's recount request can have re-exported its cluster with s's link.
      expect(await exportedFor(ix, t.url)).toMatchObject({ url: t.url, inlinks: 1 });
      const snap = await ix.db.snapshot();
      for (const c of [RANK_INLINKS, RANK_ANCHORS, RANK_COUNTED_AT]) expect(await snap.get(DOCS, t.url, c)).toBeNull();
      snap.release();
      await expectMatchesBatch(ix, 'content');
    },
    SLOW,
  );
});

describe('incremental equals batch (local corpus: node_modules documentation, fingerprint clustering)', () => {
  it(
    'after the first crawl, edits, deletions and re-additions',
    async () => {
      const root = join(process.cwd(), 'node_modules');
      const files = await listLocalDocs(root, 70);
      const docs: CrawledDoc[] = [];
      for await (const d of localDocuments(root, files)) docs.push(d);
      expect(docs.length).toBe(70);
      const ix = (index = await openTestIndex('content'));
      await ix.crawl(docs);
      await expectMatchesBatch(ix, 'content');

      const text = (d: CrawledDoc) => Buffer.from(d.content as Uint8Array).toString('utf8');
      // Edit some documents: new text (re-fingerprinted), a new link to another document.
      const edited = docs
        .filter((_, i) => i % 5 === 0)
        .map((d, i) => ({
          url: d.url,
          content: `${text(d)}\n\nEdited. See [a sibling](${(docs[(i * 7) % docs.length] as CrawledDoc).url}).\n`,
          type: 'md' as const,
        }));
      // Make two documents exact duplicates of a third (a new cluster of three).
      const original = docs[3] as CrawledDoc;
      const dups = [docs[40], docs[41]].map((d) => ({ url: (d as CrawledDoc).url, content: original.content, type: 'text' as const }));
      await ix.crawl([...edited, ...dups]);
      await expectMatchesBatch(ix, 'content');

      await ix.crawl(docs.filter((_, i) => i % 4 === 1).map((d) => ({ url: d.url, content: null })));
      await expectMatchesBatch(ix, 'content');

      await ix.crawl(docs.filter((_, i) => i % 8 === 1));
      await expectMatchesBatch(ix, 'content');
    },
    SLOW,
  );
});

describe('concurrency', () => {
  it(
    'concurrent loaders in two clients writing overlapping URLs: the index matches the winning fetches',
    async () => {
      const corpus = new SyntheticCorpus({ docs: 60, seed: 21 });
      const store = await openStore('memory:');
      const ix = (index = await openTestIndex('content+url+title', { store }));
      const other = await Percolator.open({ store, oracle: ix.db.oracle, leaseMs: 2_000 });
      try {
        // Three loader sets at once, two of them in a second client, overlapping on 20–49.
        await Promise.all([
          loadDocuments(ix.db, corpus.documents(0, 50, 0), { concurrency: 4 }),
          loadDocuments(other, corpus.documents(20, 60, 1), { concurrency: 4 }),
          loadDocuments(
            other,
            range(30, 40).map((i) => corpus.doc(i, 2)),
            { concurrency: 2 },
          ),
        ]);
        await ix.db.waitForQuiescence({ timeoutMs: 120_000 });
        // Which fetch of a URL won is up to the race; the index must reflect exactly the winners.
        const snap = await ix.db.snapshot();
        const winners: { url: string; content: Uint8Array; type: 'md' }[] = [];
        for await (const r of snap.scan(PAGES, {}, { columns: [RAW_CONTENT] })) {
          const c = r.columns.get(RAW_CONTENT);
          if (c !== undefined) winners.push({ url: Buffer.from(r.row).toString('utf8'), content: c, type: 'md' });
        }
        snap.release();
        expect(winners.length).toBe(60);
        expectSameIndex(await ix.state(), batchIndex(winners, 'content+url+title'));
      } finally {
        await other.close();
      }
    },
    SLOW,
  );

  it(
    'two workers in two clients share the work and still build the batch result',
    async () => {
      const corpus = new SyntheticCorpus({ docs: 60, seed: 8 });
      const store = await openStore('memory:');
      const lockService = new InProcessLockService();
      const a = await Percolator.open({ store, lockService, leaseMs: 2_000 });
      const b = await Percolator.open({ store, lockService, oracle: a.oracle, leaseMs: 2_000 });
      await createWebIndexTables(a);
      const wa = registerWebIndex(a.worker({ threads: 4, maxFailures: 100 }), { keyMode: 'content+url+title' });
      const wb = registerWebIndex(b.worker({ threads: 4, maxFailures: 100 }), { keyMode: 'content+url+title' });
      try {
        await wa.start();
        await wb.start();
        // Each client's loader hands its pages to its own worker (as `percolator run` does), so
        // both workers get work whoever's scanners are faster; the chains then cross (ranks and
        // exports of shared clusters) while both run.
        await loadDocuments(a, corpus.documents(), { concurrency: 4, onCommitted: (d) => wa.hint(PAGES, d.url) });
        await a.waitForQuiescence({ timeoutMs: 120_000 });
        await loadDocuments(
          b,
          range(0, 60)
            .filter((i) => i % 2 === 0)
            .map((i) => corpus.doc(i, 1)),
          { concurrency: 4, onCommitted: (d) => wb.hint(PAGES, d.url) },
        );
        await a.waitForQuiescence({ timeoutMs: 120_000 });
        expect(wa.metrics.commits).toBeGreaterThan(0);
        expect(wb.metrics.commits).toBeGreaterThan(0);
        const live = range(0, 60).map((i) => corpus.doc(i, i % 2 === 0 ? 1 : 0) as { url: string; content: string });
        const { readIndexState } = await import('../src/apps/webindex/batch.js');
        const snap = await a.snapshot();
        const got = await readIndexState(snap);
        snap.release();
        expectSameIndex(got, batchIndex(live, 'content+url+title'));
      } finally {
        await wa.stop();
        await wb.stop();
        await b.close();
        await a.close();
        await store.close();
      }
    },
    SLOW,
  );
});

describe('search', () => {
  it(
    'returns the canonical of each matching cluster, ANDs terms, and reports crawl-to-index latency',
    async () => {
      const corpus = new SyntheticCorpus({ docs: 50, seed: 4 });
      const ix = (index = await openTestIndex('content+url+title'));
      await ix.crawl([...corpus.documents()]);
      const want = batchIndex(ix.live.values(), 'content+url+title');
      const snap = await ix.db.snapshot();
      try {
        // Every synthetic document carries the token topic<cluster>: one cluster matches.
        const c = corpus.clusterOfDoc(10);
        const r = await search(snap, `topic${c}`);
        expect(r.total).toBe(1);
        const hit = r.hits[0];
        expect(hit).toBeDefined();
        const wantId = want.docClusters[hit?.url ?? ''] ?? ''; // the batch names clusters its own way
        expect(hit?.url).toBe(want.results[wantId]?.url);
        expect(hit?.size).toBe(want.clusters[wantId]?.size);
        expect(hit?.size).toBe(range(0, 50).filter((i) => corpus.clusterOfDoc(i) === c).length);
        expect(hit?.latencyMs).toBeGreaterThanOrEqual(0);
        // AND: two clusters' topics never co-occur in one document.
        expect((await search(snap, `topic${c} topic${corpus.clusterOfDoc(40)}`)).total).toBe(0);
        // A title word finds its cluster, ranked first by the title weight.
        const title = corpus.title(10).split(' ')[0] as string;
        const byTitle = await search(snap, `${title} topic${c}`);
        expect(byTitle.hits.map((h) => h.clusterId)).toEqual([hit?.clusterId]);
        expect((await search(snap, 'zzzznotaword')).hits).toEqual([]);
        expect((await search(snap, 'the and of')).terms).toEqual([]);
      } finally {
        snap.release();
      }
    },
    SLOW,
  );
});

describe('a page longer than the parser reads (MAX_PARSED characters)', () => {
  it(
    'is indexed from its first MAX_PARSED characters, incrementally as in the batch',
    async () => {
      const ix = (index = await openTestIndex('content'));
      const base = 'https://big.example/';
      // '€' is 3 bytes of UTF-8: the stored page is over 4 × MAX_PARSED bytes, so the processor
      // decodes a prefix of it (contentText), which must parse as the whole string does.
      const filler = '€ '.repeat(Math.ceil(MAX_PARSED / 2) + 1_500_000);
      expect(Buffer.byteLength(filler)).toBeGreaterThan(4 * MAX_PARSED);
      const page = `# Big page\n\n[early](${base}early.md) words\n\n${filler}\n\n[late](${base}late.md) words\n`;
      await ix.crawl([
        { url: `${base}big.md`, content: page },
        { url: `${base}early.md`, content: '# Early\n\nearly target' },
        { url: `${base}late.md`, content: '# Late\n\nlate target' },
      ]);
      await expectMatchesBatch(ix, 'content');
      expect((await exportedFor(ix, `${base}early.md`))?.inlinks).toBe(1);
      expect((await exportedFor(ix, `${base}late.md`))?.inlinks).toBe(0); // its link is past the cap
      expect((await exportedFor(ix, `${base}big.md`))?.title).toBe('Big page');
    },
    SLOW,
  );
});
