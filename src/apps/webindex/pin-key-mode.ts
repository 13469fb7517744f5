/**
 * The clustering keys are the workers' policy, not the documents': two workers of one index given
 * different `--key-mode`s would each cluster by their own keys, and the index would match neither
 * batch computation, silently. So the first worker to register pins its mode in the store
 * (ckeys[KEY_MODE_ROW], schema.ts), and every later worker, `demo --keep` and `load` is checked
 * against it: a different mode is KEY_MODE_MISMATCH, and nothing is indexed or loaded.
 *
 * Invariants:
 * - At most one mode is ever pinned in a store: pinning reads and writes the cell in one
 *   transaction, so of two first workers with different modes one commits and the other's retry
 *   reads it (snapshot isolation's write-write conflict), then fails.
 * - A store indexed by a build before this check holds no pin: its first worker since pins its own.
 */
import type { Percolator } from '../../txn/percolator.js';
import type { Snapshot } from '../../txn/transaction.js';
import type { KeyMode } from './key-mode.js';
import { CKEYS, KEY_MODE, KEY_MODE_ROW } from './schema.js';

/** A worker, a re-crawl or a load whose key mode differs from the one the index was built with. */
export class KeyModeMismatchError extends Error {
  readonly code = 'KEY_MODE_MISMATCH';

  constructor(
    /** The mode the store's index was built with. */
    readonly pinned: string,
    /** The mode this worker was given, or this corpus needs. */
    readonly requested: KeyMode,
    message: string,
  ) {
    super(message);
    this.name = 'KeyModeMismatchError';
  }
}

/**
 * Pins `keyMode` as the index's, or checks it against the one pinned. Returns once pinned or
 * found equal. Throws KeyModeMismatchError (nothing written) for another mode, its message ending
 * with `remedy(pinned)` (what the caller's user does next). Idempotent.
 */
export async function pinKeyMode(db: Percolator, keyMode: KeyMode, remedy: (pinned: string) => string): Promise<void> {
  await db.transaction(async (tx) => {
    const pinned = await tx.getString(CKEYS, KEY_MODE_ROW, KEY_MODE);
    if (pinned === null) tx.set(CKEYS, KEY_MODE_ROW, KEY_MODE, keyMode);
    else if (pinned !== keyMode) {
      throw new KeyModeMismatchError(
        pinned,
        keyMode,
        `this web index clusters documents by the keys ${pinned}, not ${keyMode}: ${remedy(pinned)}`,
      );
    }
  });
}

/** The mode pinned in the store read by `snap`, or null (no worker has registered yet). */
export function pinnedKeyMode(snap: Snapshot): Promise<string | null> {
  return snap.getString(CKEYS, KEY_MODE_ROW, KEY_MODE);
}

/**
 * Checks `keyMode` against the mode pinned in the store, pinning nothing (a load: the workers'
 * mode decides). Returns when none is pinned or it is `keyMode`. Throws KeyModeMismatchError, its
 * message `message(pinned)`, for another. Reads only.
 */
export async function checkKeyMode(db: Percolator, keyMode: KeyMode, message: (pinned: string) => string): Promise<void> {
  const snap = await db.snapshot();
  const pinned = await pinnedKeyMode(snap).finally(() => snap.release());
  if (pinned !== null && pinned !== keyMode) throw new KeyModeMismatchError(pinned, keyMode, message(pinned));
}
