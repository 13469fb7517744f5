/**
 * Child of test/webindex-crash.test.ts: the whole web index — loaders and every observer — on a
 * `file:` store this process owns, so a `kill -9` of it is a crash of the store in the middle of
 * the pipeline (loader commits durable, observer commits acknowledged before they are durable,
 * notification clearings deferred, in-process advisory locks and the worker's lease gone). On a
 * `bigtable://` store (`percolator serve`) it is a crash of one client: its commits take two
 * phases there, so it leaves locks of transactions cut anywhere in them for others to resolve.
 *
 * Usage: `node dist/check/webindex-crash-child.js STORE SEED DOCS KEYMODE GENERATION [ONLY]` with
 * an IPC channel (STORE: `file:DIR` or `bigtable://HOST:PORT`; KEYMODE: the clustering keys,
 * parse.ts). It crawls `crawlPlan(SEED, DOCS, GENERATION)` (each document at a version of the
 * synthetic corpus, or deleted) — with ONLY (comma-separated document numbers, possibly none) just
 * those documents, and then it is the final generation. It reports each fetch as it starts,
 * `{ t: 'start', i }`, and once committed (durable), `{ t: 'ack', i }`; then it waits for
 * quiescence and reports `{ t: 'quiet' }`. A final generation then closes the store and exits 0;
 * any other waits to be killed.
 */
import { SyntheticCorpus } from '../apps/webindex/corpus/synthetic.js';
import type { CrawledDoc } from '../apps/webindex/loader.js';
import { loadDocuments } from '../apps/webindex/loader.js';
import type { KeyMode } from '../apps/webindex/parse.js';
import { createWebIndexTables, registerWebIndex } from '../apps/webindex/pipeline.js';
import { PAGES } from '../apps/webindex/schema.js';
import { Percolator } from '../txn/percolator.js';

/** One fetch of a crawl plan: document number `i` of the corpus. */
export interface PlannedFetch {
  readonly i: number;
  readonly doc: CrawledDoc;
}

/**
 * What generation `generation` crawls: every document of a `docs`-document synthetic corpus once,
 * in a shuffled order, at a random version (0–3: later versions change title and content) or
 * deleted.
 */
export function crawlPlan(seed: number, docs: number, generation: number): PlannedFetch[] {
  const corpus = new SyntheticCorpus({ docs, seed });
  let s = (seed * 7919 + generation * 104_729) % 2_147_483_647 || 1;
  const rand = () => (s = (s * 48_271) % 2_147_483_647) / 2_147_483_647;
  const order = Array.from({ length: docs }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return order.map((i) => ({ i, doc: rand() < 0.12 ? { url: corpus.url(i), content: null } : corpus.doc(i, Math.floor(rand() * 4)) }));
}

async function main(): Promise<void> {
  const [store, seed, docs, keyMode, generation, only] = process.argv.slice(2);
  if (store === undefined || seed === undefined || docs === undefined || keyMode === undefined || generation === undefined)
    throw new Error('usage: webindex-crash-child STORE SEED DOCS KEYMODE GENERATION [ONLY]');
  const isFinal = only !== undefined;
  const wanted = new Set(
    (only ?? '')
      .split(',')
      .filter((x) => x !== '')
      .map(Number),
  );
  const plan = crawlPlan(Number(seed), Number(docs), Number(generation)).filter((f) => !isFinal || wanted.has(f.i));
  const numberOf = new Map(plan.map((f) => [f.doc.url, f.i]));
  // The loader writes each document as soon as it pulls it: announced here, before its commit.
  function* fetches(): Generator<CrawledDoc> {
    for (const f of plan) {
      process.send?.({ t: 'start', i: f.i });
      yield f.doc;
    }
  }
  // Short lease and lock TTL: the next generation takes over from the killed one quickly. No mmap
  // ballast (a `file:` store's): it only makes table reads cheaper over a long run, and building
  // it cost each generation ~1 s of CPU before its first fetch.
  const db = await Percolator.open({ store, leaseMs: 500, lockTtlMs: 1_000, storeOptions: { level: { mmapBallast: false } } });
  await createWebIndexTables(db);
  // Default advisory row locks (30 s): over a server, the rows a killed generation held are taken
  // over as soon as its lease has lapsed (lock-service.ts, tryLockOrReclaim), not after their TTL.
  // One line a message: a server restart makes every loop log its error (the worker's default prints stacks).
  const log = (message: string, e?: unknown) => process.stderr.write(`${message}${e instanceof Error ? `: ${e.message}` : ''}\n`);
  const worker = registerWebIndex(db.worker({ threads: 8, maxFailures: 100, log }), {
    keyMode: keyMode as KeyMode,
  });
  await worker.start();
  await loadDocuments(db, fetches(), {
    concurrency: 4,
    onCommitted: (d) => {
      worker.hint(PAGES, d.url);
      process.send?.({ t: 'ack', i: numberOf.get(d.url) });
    },
  });
  await db.waitForQuiescence({ timeoutMs: 120_000 });
  process.send?.({ t: 'quiet' });
  if (!isFinal) {
    setInterval(() => undefined, 60_000); // alive, worker running, until the parent kills it
    return;
  }
  await worker.stop();
  await db.close();
  process.disconnect?.();
}

if (process.argv[1]?.endsWith('webindex-crash-child.js') === true) {
  main().catch((e: unknown) => {
    process.stderr.write(`webindex-crash-child: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
