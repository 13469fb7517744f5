/**
 * `bench webindex`: the web indexer on the synthetic corpus shaped like the paper's benchmark,
 * end to end (concurrent loaders, every observer, quiescence) on a fresh store, reporting
 * throughput and crawl-to-index latency. A first version: one run, one store, no comparison yet
 * against a batch (MapReduce-style) baseline.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runWebIndex } from '../apps/webindex/run.js';

export interface WebIndexBenchOptions {
  readonly docs: number;
  readonly seed?: number;
  /** `file:` (default, a fresh temporary directory) or `memory:`. */
  readonly store?: 'file:' | 'memory:';
  readonly threads?: number;
  readonly loaders?: number;
}

export interface WebIndexBenchResult {
  readonly documents: number;
  readonly duplicatesFound: number;
  readonly linksInverted: number;
  readonly documentsPerSecond: number;
  readonly medianLatencyMs: number;
  readonly p99LatencyMs: number;
  readonly clusters: number;
  readonly postings: number;
  readonly observerCommits: number;
  readonly conflicts: number;
  readonly elapsedMs: number;
  readonly store: string;
  readonly threads: number;
}

export async function runWebIndexBench(options: WebIndexBenchOptions): Promise<WebIndexBenchResult> {
  const dir = options.store === 'memory:' ? null : await mkdtemp(join(tmpdir(), 'percolator-bench-webindex-'));
  const threads = options.threads ?? 16;
  try {
    const handle = await runWebIndex({
      corpus: 'synthetic',
      docs: options.docs,
      seed: options.seed,
      store: dir === null ? 'memory:' : `file:${dir}`,
      keep: true,
      threads,
      loaders: options.loaders,
    });
    const s = handle.summary;
    await handle.close();
    return {
      documents: s.documents,
      duplicatesFound: s.duplicatesFound,
      linksInverted: s.linksInverted,
      documentsPerSecond: s.documentsPerSecond,
      medianLatencyMs: s.medianLatencyMs,
      p99LatencyMs: s.p99LatencyMs,
      clusters: s.clusters,
      postings: s.postings,
      observerCommits: s.observerCommits,
      conflicts: s.conflicts,
      elapsedMs: s.loadAndProcessMs,
      store: dir === null ? 'memory:' : 'file:',
      threads,
    };
  } finally {
    if (dir !== null) await rm(dir, { recursive: true, force: true });
  }
}
