/** The pipeline cut short (`until`): each stage runs what it names and nothing after it. */
import { describe, expect, it } from 'vitest';
import { runWebIndex } from './run.js';
import { registerWebIndex } from './pipeline.js';
import { Percolator } from '../../txn/percolator.js';

async function summaryUntil(until: 'process' | 'cluster' | 'export') {
  const handle = await runWebIndex({ corpus: 'synthetic', docs: 120, seed: 3, store: 'memory:', threads: 8, until });
  try {
    return handle.summary;
  } finally {
    await handle.close();
  }
}

describe('registerWebIndex until', () => {
  it('stops after the stage it names: parsed, then clustered, then searchable', async () => {
    const [processed, clustered, whole] = [await summaryUntil('process'), await summaryUntil('cluster'), await summaryUntil('export')];
    for (const s of [processed, clustered, whole]) {
      expect(s.anomalies).toEqual([]);
      expect(s.loaded).toBe(120);
      // The processor inverts the links in its own transaction: every stage has them.
      expect(s.linksInverted).toBe(whole.linksInverted);
    }
    expect(whole.linksInverted).toBeGreaterThan(0);
    // One processor commit a document, then clustering's, then the export's.
    expect(processed.observerCommits).toBe(120);
    expect(clustered.observerCommits).toBeGreaterThan(processed.observerCommits);
    expect(whole.observerCommits).toBeGreaterThan(clustered.observerCommits);
    expect(Object.keys(processed.observerRuns)).toEqual(['webindex.process']);
    expect(Object.keys(clustered.observerRuns)).not.toContain('webindex.export');
    // Clusters only from the cluster stage on, postings and searchable documents only from the export.
    expect(processed.clusters).toBe(0);
    expect(clustered.clusters).toBe(whole.clusters);
    expect(whole.clusters).toBeGreaterThan(0);
    for (const s of [processed, clustered]) {
      expect(s.postings).toBe(0);
      expect(s.indexedDocuments).toBe(0);
    }
    expect(whole.postings).toBeGreaterThan(0);
    expect(whole.indexedDocuments).toBe(120);
  }, 60_000);

  it('rejects a stage it does not know, with a stable code', async () => {
    const db = await Percolator.open({ store: 'memory:' });
    try {
      const bad = { until: 'index' } as unknown as Parameters<typeof registerWebIndex>[1];
      expect(() => registerWebIndex(db.worker({ threads: 1 }), bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    } finally {
      await db.close();
    }
  });
});
