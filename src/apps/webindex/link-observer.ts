/**
 * Link inversion: attaches the anchor text of every outgoing link of a document to its target,
 * as one `anchors[target \0 source]` row per link, so no two pages' link transactions ever write
 * a common cell however popular the target.
 *
 * It runs inside the document processor's transaction (`invertLinks`, called by
 * process-observer.ts with the links it just parsed): a separate observer on `parsed:links` cost
 * one more transaction per document — its begin, ack, notify cell, commit of the `docs` row —
 * for no gain, since the processor writes the `docs` row anyway. `linkObserver()` is the same
 * step as a standalone observer body over `parsed:links` (kept for tests that drive the
 * interleavings by hand; not registered by the pipeline).
 *
 * Invariants:
 * - `pages[u] links:inverted` is exactly the set of links whose anchor rows exist; each run applies
 *   the difference between it and the document's current links, so every link is inverted once.
 *   It is kept in `pages`, which only the processor writes after the crawl, not in the busy `docs`
 *   row: only the processor reads it, and in `docs` its ~500 bytes were rewritten with every one
 *   of the row's ~5 writes a document and took a third of the row in every cache. (Builds before
 *   2026-11-27's twelfth session kept it in `docs[u] links:inverted`, and builds before 2026-11-26
 *   in `docs[u] links:applied`: each is read when the newer place has none, and deleted when the
 *   set is next written.)
 * - Every target whose anchor row was written or deleted is appended to `links:changed`, the
 *   change list the link relay (link-notify-observer.ts) consumes. It is a list of changes, not a
 *   diff of states, so a link added and removed again before the relay runs is still relayed.
 * - Some transaction whose snapshot follows this commit relays the change list: the cluster run
 *   of the document when this transaction writes `parsed:keys` (its strong notification starts
 *   that run after this commit, and every such run relays before it writes anything else:
 *   cluster-observer.ts), else the relay, woken by a weak notification of `links:dirty` written
 *   here. Before, the relay observed the link set itself and ran after every link change, nearly
 *   always to find the cluster run had left it nothing: one transaction a document for nothing.
 */
import type { Transaction } from '../../txn/transaction.js';
import {
  ANCHORS,
  ANCHOR_TEXT,
  DOCS,
  LINKS_APPLIED_LEGACY,
  LINKS_CHANGED,
  LINKS_DIRTY,
  LINKS_INVERTED,
  PAGES,
  PARSED_LINKS,
  anchorRow,
} from './schema.js';
import { parseJson } from './util.js';

/** The document's stored link state, as the caller read it at its snapshot. */
export interface StoredLinks {
  /** `pages[u] links:inverted`. */
  readonly inverted: Uint8Array | null;
  /** `docs[u] links:inverted`, where builds before 2026-11-27 (twelfth session) kept it. */
  readonly inDocs: Uint8Array | null;
  /** `docs[u] links:applied`, where builds before 2026-11-26 kept it. */
  readonly legacy: Uint8Array | null;
  /** `docs[u] links:changed`. */
  readonly pending: Uint8Array | null;
}

/** The `docs` columns StoredLinks is read from, in its order (`links:inverted` itself is read from `pages`). */
export const STORED_LINK_COLUMNS = [LINKS_INVERTED, LINKS_APPLIED_LEGACY, LINKS_CHANGED] as const;

/** StoredLinks from `pages[u] links:inverted` and the `docs` values read in STORED_LINK_COLUMNS' order. */
export function storedLinks(inverted: Uint8Array | null, docsValues: readonly (Uint8Array | null)[]): StoredLinks {
  return { inverted, inDocs: docsValues[0] ?? null, legacy: docsValues[1] ?? null, pending: docsValues[2] ?? null };
}

/**
 * A stored `links:inverted` (or its legacy column) as target → anchor text. Written as `[[target,
 * anchor], …]`; stores written before 2026-11-27 hold an object keyed by target URL, which V8 parses
 * (and `Object.fromEntries` built) into a hidden class per distinct key set (schema.ts,
 * clusterStateJson, says why that costs).
 */
function invertedLinks(v: Uint8Array | null): Map<string, string> {
  const parsed = parseJson<[string, string][] | Record<string, string>>(v, []);
  return new Map(Array.isArray(parsed) ? parsed : Object.entries(parsed));
}

/**
 * Applies the difference between `links` (the document's links now) and the links inverted so
 * far (`stored`). `clusterRunFollows`: this transaction writes the document's `parsed:keys`, so its
 * cluster run relays the change list; otherwise the relay is notified. Returns how many anchor
 * rows it wrote or deleted.
 */
export function invertLinks(
  tx: Transaction,
  row: Uint8Array,
  source: string,
  links: Iterable<readonly [string, string]>,
  stored: StoredLinks,
  clusterRunFollows: boolean,
): number {
  const now = new Map(links);
  const before = invertedLinks(stored.inverted ?? stored.inDocs ?? stored.legacy);
  let changed: Set<string> | null = null;
  const touch = (target: string) => (changed ??= new Set(parseJson<string[]>(stored.pending, []))).add(target);
  for (const [target, anchor] of now) {
    if (before.get(target) === anchor) continue;
    tx.set(ANCHORS, anchorRow(target, source), ANCHOR_TEXT, anchor);
    touch(target);
  }
  for (const target of before.keys()) {
    if (now.has(target)) continue;
    tx.delete(ANCHORS, anchorRow(target, source), ANCHOR_TEXT);
    touch(target);
  }
  if (changed === null) return 0;
  const set: Set<string> = changed;
  if (now.size === 0) {
    if (stored.inverted !== null) tx.delete(PAGES, row, LINKS_INVERTED);
  } else {
    tx.set(PAGES, row, LINKS_INVERTED, JSON.stringify([...now]));
  }
  if (stored.inDocs !== null) tx.delete(DOCS, row, LINKS_INVERTED);
  if (stored.legacy !== null) tx.delete(DOCS, row, LINKS_APPLIED_LEGACY);
  tx.set(DOCS, row, LINKS_CHANGED, JSON.stringify([...set].sort()));
  if (!clusterRunFollows) tx.notify(DOCS, row, LINKS_DIRTY);
  return set.size;
}

/** The inversion as an observer body over `docs parsed:links` (see the header); the relay is notified. */
export function linkObserver() {
  return async (tx: Transaction, row: Uint8Array): Promise<void> => {
    const [[linksValue, ...stored], inverted] = await Promise.all([
      tx.getMany(
        DOCS,
        [PARSED_LINKS, ...STORED_LINK_COLUMNS].map((column) => ({ row, column })),
      ),
      tx.get(PAGES, row, LINKS_INVERTED),
    ]);
    invertLinks(
      tx,
      row,
      Buffer.from(row).toString('utf8'),
      parseJson<[string, string][]>(linksValue ?? null, []),
      storedLinks(inverted, stored),
      false,
    );
  };
}
