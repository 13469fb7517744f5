/**
 * The incremental web indexer (Percolator §1, §2.4): loader → document processor → duplicate
 * clustering and link inversion → export to a searchable index. See docs/webindex.md.
 */
export { batchIndex, readIndexState, type CorpusDoc, type IndexState } from './batch.js';
export { SyntheticCorpus, type SyntheticOptions } from './corpus/synthetic.js';
export { listLocalDocs, localDocuments, localUrl } from './corpus/local.js';
export { loadDocuments, writeFetch, type CrawledDoc, type LoadOptions, type LoadResult } from './loader.js';
export { WebIndexMetrics, percentile } from './metrics.js';
export { clusterKeys, docTypeOf, parseDocument, type DocType, type KeyMode, type ParsedDoc } from './parse.js';
export { createWebIndexTables, registerWebIndex, type WebIndexOptions } from './pipeline.js';
export { runWebIndex, openCorpus, type CorpusName, type Progress, type RunHandle, type RunOptions, type RunSummary } from './run.js';
export * as schema from './schema.js';
export { search, type SearchHit, type SearchResult } from './search.js';
export { readStats, type IndexStats } from './stats.js';
export { termsOf, tokenize } from './terms.js';
export { webIndexStatusSources } from './status.js';
