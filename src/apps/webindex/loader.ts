/**
 * The loader: transactions that write crawled documents (URL, fetch time, content) from a corpus
 * or a crawl feed. One transaction per document; several loaders may run at once, in one process
 * or many — two fetches of one URL conflict and the later commit wins, as a crawl would.
 *
 * Invariants:
 * - `raw:fetchedAt` is the wall-clock time of the transaction that wrote the fetch, so
 *   crawl-to-index latency starts when the document entered the system.
 * - A fetch that finds the page gone deletes `raw:content`; that delete is what propagates the
 *   removal through every observer.
 * - The corpus is streamed: loaders hold at most `concurrency` documents in memory.
 * - A fetch whose commit fails with IO_ERROR or COMMIT_UNDETERMINED (a remote store out of reach:
 *   a server restarting, the network dropping) is written again, with backoff, for up to
 *   `storeOutageMs`. Its first commit may have gone through: then the page is simply fetched
 *   twice, which the pipeline takes as an unchanged re-crawl.
 */
import { whileOutOfReach } from '../../store/while-out-of-reach.js';
import { isOracleError } from '../../oracle/errors.js';
import { isTxnError } from '../../txn/errors.js';
import type { Percolator } from '../../txn/percolator.js';
import type { Transaction } from '../../txn/transaction.js';
import type { WebIndexMetrics } from './metrics.js';
import { type DocType, docTypeOf } from './parse.js';
import { PAGES, RAW_CONTENT, RAW_FETCHED_AT, RAW_TYPE } from './schema.js';

/** One fetch of a URL: its content, or null when the page is gone. */
export interface CrawledDoc {
  readonly url: string;
  readonly content: string | Uint8Array | null;
  readonly type?: DocType;
}

/** Buffers the writes of one fetch in `tx`. */
export function writeFetch(tx: Transaction, doc: CrawledDoc, fetchedAt: number): void {
  tx.set(PAGES, doc.url, RAW_FETCHED_AT, String(fetchedAt));
  if (doc.content === null) {
    tx.delete(PAGES, doc.url, RAW_CONTENT);
    return;
  }
  tx.set(PAGES, doc.url, RAW_TYPE, doc.type ?? docTypeOf(doc.url));
  tx.set(PAGES, doc.url, RAW_CONTENT, doc.content);
}

export interface LoadOptions {
  /** Loader transactions in flight. Default 8. */
  readonly concurrency?: number;
  readonly metrics?: WebIndexMetrics;
  /** Awaited before each document (backpressure: e.g. wait while the pipeline is far behind). */
  readonly beforeEach?: () => Promise<void>;
  /** Wall clock (ms). */
  readonly nowMs?: () => number;
  /** How long a fetch is retried while its commits fail with IO_ERROR (default 60 000; 0: not at all). */
  readonly storeOutageMs?: number;
  /** Called after each fetch commits (e.g. to hand the page to a local worker at once: `worker.hint`). */
  readonly onCommitted?: (doc: CrawledDoc) => void;
}

export interface LoadResult {
  readonly loaded: number;
  readonly deleted: number;
}

/** Loads every document of `docs` (any iterable, streamed) with `concurrency` loader tasks. */
export async function loadDocuments(
  db: Percolator,
  docs: AsyncIterable<CrawledDoc> | Iterable<CrawledDoc>,
  options: LoadOptions = {},
): Promise<LoadResult> {
  const nowMs = options.nowMs ?? Date.now;
  const it =
    Symbol.asyncIterator in docs
      ? (docs as AsyncIterable<CrawledDoc>)[Symbol.asyncIterator]()
      : toAsync((docs as Iterable<CrawledDoc>)[Symbol.iterator]());
  let loaded = 0;
  let deleted = 0;
  let pulling: Promise<unknown> = Promise.resolve();
  // Pulls are serialized (async iterators must not be advanced concurrently); writes are not.
  const pull = (): Promise<IteratorResult<CrawledDoc>> => {
    const p = pulling.then(() => it.next());
    pulling = p.catch(() => undefined);
    return p;
  };
  const task = async (): Promise<void> => {
    for (;;) {
      await options.beforeEach?.();
      const r = await pull();
      if (r.done) return;
      const doc = r.value;
      await commitFetch(db, doc, nowMs, options.storeOutageMs ?? STORE_OUTAGE_MS);
      options.onCommitted?.(doc);
      if (doc.content === null) {
        deleted++;
        options.metrics?.onDeleted();
      } else {
        loaded++;
        options.metrics?.onLoaded();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 8) }, task));
  return { loaded, deleted };
}

const STORE_OUTAGE_MS = 60_000;

/**
 * Writes one fetch, again while the store or its oracle is out of reach (IO_ERROR,
 * COMMIT_UNDETERMINED, ORACLE_UNAVAILABLE) for up to `outageMs`. A transaction that got no
 * timestamp committed nothing: its start or its commit timestamp comes before the commit point.
 * (A server restart takes both away; one that took longer than the oracle client's 5 s wait
 * failed the load.)
 */
function commitFetch(db: Percolator, doc: CrawledDoc, nowMs: () => number, outageMs: number): Promise<void> {
  return whileOutOfReach(() => db.transaction(async (tx) => writeFetch(tx, doc, nowMs())), {
    forMs: outageMs,
    alsoRetry: (e) => isTxnError(e, 'COMMIT_UNDETERMINED') || isOracleError(e, 'ORACLE_UNAVAILABLE'),
  });
}

function toAsync<T>(it: Iterator<T>): AsyncIterator<T> {
  return { next: async () => it.next() };
}
