/**
 * One in-process oracle per store object. Every Percolator opened over the same `Store` without
 * an oracle of its own draws from it: two oracles over one mark (each reserving its own range
 * above it) hand out interleaved timestamps, and snapshot isolation breaks — a transaction can
 * start below a commit that finished before it began, and two increments can both commit on the
 * same value. The oracle closes when the last Percolator holding it releases it; one opened after
 * that waits for the close (the final mark) before reading the mark.
 *
 * Concurrency contract: acquire/release pairs per Percolator; one JS thread.
 */
import { StoreMarkStore } from '../oracle/mark-store.js';
import { Oracle } from '../oracle/oracle.js';
import type { Store } from '../store/store.js';

interface Shared {
  readonly oracle: Promise<Oracle>;
  users: number;
}

const byStore = new WeakMap<Store, Shared>();
const closing = new WeakMap<Store, Promise<void>>();

/** The store's oracle, opened by the first caller. Throws what `Oracle.open` throws (nothing is held then). */
export async function acquireOracle(store: Store): Promise<Oracle> {
  let s = byStore.get(store);
  if (s === undefined) {
    const before = closing.get(store);
    const oracle = (before ?? Promise.resolve()).then(() => Oracle.open({ markStore: new StoreMarkStore(store) }));
    const made: Shared = { oracle, users: 0 };
    byStore.set(store, (s = made));
    // A failed open is not kept: the next caller tries again.
    oracle.catch(() => {
      if (byStore.get(store) === made) byStore.delete(store);
    });
  }
  s.users++;
  try {
    return await s.oracle;
  } catch (e) {
    s.users--;
    throw e;
  }
}

/** Gives back one `acquireOracle`; the last one closes the oracle. */
export async function releaseOracle(store: Store): Promise<void> {
  const s = byStore.get(store);
  if (s === undefined || --s.users > 0) return;
  byStore.delete(store);
  const done = s.oracle.then((o) => o.close());
  closing.set(
    store,
    done.catch(() => undefined),
  );
  await done;
}
