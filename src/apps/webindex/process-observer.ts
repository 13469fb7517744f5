/**
 * The document processor (observes `pages raw:content`): parses the crawled bytes into title and
 * text (kept in `pages`, read only by the export) and links and clustering keys (in `docs`, where
 * the other observers pick them up).
 *
 * Invariants:
 * - It writes a parsed column only when its value changes, so a re-crawl that brings the same
 *   content triggers nothing downstream (the paper's point: work proportional to change).
 * - `parsed:keys` include the fingerprint of title and text, so any change to what the index
 *   shows of this document changes its keys, and re-clustering (and re-export) follows.
 * - `parsed:fetchedAt` changes together with `parsed:keys`: it names the fetch whose content the
 *   keys describe, which is what crawl-to-index latency is measured from.
 * - A deleted `raw:content` deletes every parsed column, which removes the document's links and
 *   cluster membership downstream.
 * - Link inversion happens in this transaction (link-observer.ts `invertLinks`): the document's
 *   links are diffed against `pages[u] links:inverted` and its anchor rows written, in the same commit as
 *   the parse. The change is relayed by the cluster run this commit starts when it writes
 *   `parsed:keys` (new or changed content, or the document's deletion), else by the relay.
 */
import type { Transaction } from '../../txn/transaction.js';
import type { WebIndexMetrics } from './metrics.js';
import { type DocType, type KeyMode, clusterKeys, contentText, docTypeOf, parseDocument } from './parse.js';
import { STORED_LINK_COLUMNS, invertLinks, storedLinks } from './link-observer.js';
import {
  DOCS,
  LINKS_INVERTED,
  PAGES,
  PARSED_FETCHED_AT,
  PARSED_KEYS,
  PARSED_TEXT,
  PARSED_TITLE,
  RAW_CONTENT,
  RAW_FETCHED_AT,
  RAW_TYPE,
} from './schema.js';
import { utf8 } from './util.js';

export interface ProcessOptions {
  readonly keyMode: KeyMode;
  readonly metrics?: WebIndexMetrics;
}

export function processObserver(options: ProcessOptions) {
  return async (tx: Transaction, row: Uint8Array): Promise<void> => {
    const url = utf8(row) as string;
    const [[content, fetchedAt, type, oldTitle, inverted], [oldKeys, ...links]] = await Promise.all([
      tx.getMany(
        PAGES,
        [RAW_CONTENT, RAW_FETCHED_AT, RAW_TYPE, PARSED_TITLE, LINKS_INVERTED].map((column) => ({ row, column })),
      ),
      tx.getMany(
        DOCS,
        [PARSED_KEYS, ...STORED_LINK_COLUMNS].map((column) => ({ row, column })),
      ),
    ]);
    if (content === null) {
      if (oldKeys !== null) for (const c of [PARSED_KEYS, PARSED_FETCHED_AT]) tx.delete(DOCS, row, c);
      if (oldTitle !== null) for (const c of [PARSED_TITLE, PARSED_TEXT]) tx.delete(PAGES, row, c);
      invertLinks(tx, row, url, [], storedLinks(inverted ?? null, links), oldKeys !== null);
      options.metrics?.onProcessed();
      return;
    }
    const doc = parseDocument(url, (utf8(type) as DocType | null) ?? docTypeOf(url), contentText(content));
    const keys = JSON.stringify(clusterKeys(url, doc, options.keyMode));
    const unchanged = keys === utf8(oldKeys);
    if (!unchanged) {
      tx.set(DOCS, row, PARSED_KEYS, keys);
      tx.set(DOCS, row, PARSED_FETCHED_AT, utf8(fetchedAt) ?? '0');
      tx.set(PAGES, row, PARSED_TITLE, doc.title);
      tx.set(PAGES, row, PARSED_TEXT, doc.text);
    }
    invertLinks(tx, row, url, doc.links, storedLinks(inverted ?? null, links), !unchanged);
    options.metrics?.onProcessed(url, Number(utf8(fetchedAt) ?? 0), unchanged);
  };
}
