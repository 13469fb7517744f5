/** Shared harness of the web index tests: an index on a memory store, and state comparison. */
import { expect } from 'vitest';
import {
  type CorpusDoc,
  type IndexState,
  type IndexSummary,
  batchIndex,
  batchIndexSummary,
  differingKeys,
  readIndexState,
  readIndexSummary,
} from './batch.js';
import type { CrawledDoc } from './loader.js';
import { loadDocuments } from './loader.js';
import { WebIndexMetrics } from './metrics.js';
import type { KeyMode } from './parse.js';
import { createWebIndexTables, registerWebIndex } from './pipeline.js';
import type { Worker } from '../../notify/worker.js';
import type { Store } from '../../store/store.js';
import { Percolator } from '../../txn/percolator.js';

export interface TestIndex {
  readonly db: Percolator;
  readonly worker: Worker;
  readonly metrics: WebIndexMetrics;
  /** The live corpus as the test believes it to be (url → latest fetch). */
  readonly live: Map<string, CorpusDoc>;
  /** Loads fetches (null content = deletion) and waits until the index is quiescent. */
  crawl(docs: readonly CrawledDoc[], concurrency?: number): Promise<void>;
  state(): Promise<IndexState>;
  /** The state with each cluster's postings as a digest (what `bench soak` compares). */
  summary(): Promise<IndexSummary>;
  close(): Promise<void>;
}

export async function openTestIndex(keyMode: KeyMode, options: { store?: Store; threads?: number } = {}): Promise<TestIndex> {
  const db = await Percolator.open({ store: options.store ?? 'memory:', leaseMs: 2_000 });
  await createWebIndexTables(db);
  const metrics = new WebIndexMetrics();
  const worker = registerWebIndex(db.worker({ threads: options.threads ?? 8, maxFailures: 100 }), { keyMode, metrics });
  await worker.start();
  const live = new Map<string, CorpusDoc>();
  return {
    db,
    worker,
    metrics,
    live,
    async crawl(docs, concurrency = 4) {
      await loadDocuments(db, docs, { concurrency, metrics });
      for (const d of docs) {
        if (d.content === null) live.delete(d.url);
        else live.set(d.url, { url: d.url, content: d.content, type: d.type });
      }
      await db.waitForQuiescence({ timeoutMs: 120_000 });
    },
    async state() {
      const snap = await db.snapshot();
      return await readIndexState(snap).finally(() => snap.release());
    },
    async summary() {
      const snap = await db.snapshot();
      return await readIndexSummary(snap).finally(() => snap.release());
    },
    async close() {
      await worker.stop();
      await db.close();
    },
  };
}

/**
 * Field by field, so a failure shows which part of the index diverged — and its first differing
 * entries, which a deep-equality message of large objects elides.
 */
export function expectSameIndex(got: IndexState, want: IndexState): void {
  const fields = [
    ['keys', 'parsed keys'],
    ['anchors', 'inverted links'],
    ['clusters', 'clusters'],
    ['docClusters', 'document → cluster'],
    ['results', 'search results'],
    ['postings', 'postings'],
  ] as const;
  for (const [field, what] of fields) expect(got[field], `${what}${firstDifferences(got[field], want[field])}`).toEqual(want[field]);
}

function firstDifferences(got: Record<string, unknown>, want: Record<string, unknown>, max = 3): string {
  const out = differingKeys(got, want)
    .slice(0, max)
    .map((k) => `${JSON.stringify(k)}: got ${JSON.stringify(got[k])}, want ${JSON.stringify(want[k])}`);
  return out.length === 0 ? '' : ` (${out.join('; ')})`;
}

/** The index equals the batch's, entry by entry and as the soak's summary (which must agree). */
export async function expectMatchesBatch(index: TestIndex, keyMode: KeyMode): Promise<IndexState> {
  const want = batchIndex(index.live.values(), keyMode);
  expectSameIndex(await index.state(), want);
  expect(await index.summary()).toEqual(batchIndexSummary(index.live.values(), keyMode));
  return want;
}
