/**
 * A two-phase commit whose commit point fails — or may have taken effect: over a network the
 * primary's conditional mutation can be applied and its reply lost (a server killed after its
 * write, a connection reset). The transaction must come out whole either way: committed with
 * every secondary, or rolled back with none; never a secondary dropped under a committed primary.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { losingReplies, unreachableAt } from '../store/unreachable-store.fixture.js';
import { isTxnError } from './errors.js';
import { Percolator } from './percolator.js';
import { remoteLike } from './remote-like.fixture.js';
import { commitOrError } from './txn.fixture.js';

const str = (v: Uint8Array | null) => (v === null ? null : Buffer.from(v).toString());

let db: Percolator;
beforeEach(async () => {
  db = await Percolator.open({ store: 'memory:', leaseMs: 500 });
  await db.createTable('t');
  await db.transaction(async (tx) => {
    for (const r of ['p', 's1', 's2']) tx.set('t', r, 'c:v', 'old');
  });
});
afterEach(async () => {
  await db.close();
});

/**
 * A client of `db`'s store through a flaky network: two-phase commits (remoteLike); its commit
 * point's conditional mutation (or with `at` after-primary-commit: its first secondary commit) is
 * applied (`applied`) or not, and then fails with IO_ERROR; the store then stays out of reach
 * until `back()`.
 */
async function flakyClient(
  applied: boolean,
  outage: 'none' | 'until back',
  at: 'before-primary-commit' | 'after-primary-commit' = 'before-primary-commit',
) {
  let armed = false;
  let down = false;
  const remote = remoteLike(db.store).store;
  const lossy = losingReplies(remote, ['checkAndMutateRow'], () => {
    if (!armed) return 'pass';
    armed = false;
    if (outage === 'until back') down = true;
    return applied ? 'applied' : 'dropped';
  });
  const store = unreachableAt(lossy, ['checkAndMutateRow', 'readRow', 'readRows', 'mutateRow', 'mutateRows'], () => down);
  const client = await Percolator.open({
    store,
    oracle: db.oracle,
    commitProtocol: 'two-phase',
    leaseMs: 500,
    // Its locks never expire during a test: left behind by its own failed commit, they are
    // settled at once by its own readers (finishedHere), and by others once it is gone.
    lockTtlMs: 60_000,
    lockWaitMs: 200,
    onProtocolPoint: (point) => {
      if (point === at) armed = true;
    },
  });
  return {
    client,
    back: () => {
      down = false;
    },
  };
}

async function writeNew(client: Percolator): Promise<unknown> {
  const tx = await client.begin();
  for (const r of ['p', 's1', 's2']) tx.set('t', r, 'c:v', 'new');
  return commitOrError(tx);
}

/** What a fresh transaction of `on` reads of the three rows (resolving any lock left behind). */
async function rows(on: Percolator = db): Promise<(string | null)[]> {
  return on.transaction(async (tx) =>
    (
      await tx.getMany(
        't',
        ['p', 's1', 's2'].map((row) => ({ row, column: 'c:v' })),
      )
    ).map(str),
  );
}

async function lockCount(): Promise<number> {
  let n = 0;
  for await (const r of db.store.readRows('t', { filter: { familyNameRegexFilter: 'lock' } })) n += r.cells.length;
  return n;
}

describe('a commit point whose reply is lost', () => {
  it('applied, store reachable again: the commit is found and completed, every secondary committed', async () => {
    const { client } = await flakyClient(true, 'none');
    try {
      const outcome = await writeNew(client);
      expect(typeof outcome, String(outcome)).toBe('number');
      expect(await lockCount()).toBe(0);
      expect(await rows()).toEqual(['new', 'new', 'new']);
    } finally {
      await client.close();
    }
  });

  it('applied, store still out of reach: COMMIT_UNDETERMINED, and the locks stay for readers to roll forward', async () => {
    const { client, back } = await flakyClient(true, 'until back');
    const outcome = await writeNew(client);
    expect(isTxnError(outcome, 'COMMIT_UNDETERMINED'), String(outcome)).toBe(true);
    expect((outcome as { details: { startTs: number } }).details.startTs).toBeGreaterThan(0);
    back();
    expect(await lockCount()).toBe(2); // the secondaries': the primary's lock became its commit record
    await client.close(); // its lease given up: other processes' readers need not wait for the TTL
    expect(await rows()).toEqual(['new', 'new', 'new']);
  });

  it('not applied, store reachable again: rolled back everywhere, the store error rethrown', async () => {
    const { client } = await flakyClient(false, 'none');
    try {
      const outcome = await writeNew(client);
      expect(outcome).toMatchObject({ code: 'IO_ERROR' });
      expect(await lockCount()).toBe(0);
      expect(await rows()).toEqual(['old', 'old', 'old']);
    } finally {
      await client.close();
    }
  });

  it('not applied, store still out of reach: COMMIT_UNDETERMINED, and readers roll it back', async () => {
    const { client, back } = await flakyClient(false, 'until back');
    const outcome = await writeNew(client);
    expect(isTxnError(outcome, 'COMMIT_UNDETERMINED'), String(outcome)).toBe(true);
    back();
    expect(await lockCount()).toBe(3);
    // The client's own reads roll them back at once, its lease alive and the locks fresh: its
    // commit has ended, so what it left is abandoned (finishedHere).
    expect(await rows(client)).toEqual(['old', 'old', 'old']);
    expect(await lockCount()).toBe(0);
    await client.close();
  });
});

describe('a secondary commit that fails in the store', () => {
  it('the transaction is committed; its committer commits the row again in the background, with no reader', async () => {
    const { client } = await flakyClient(false, 'none', 'after-primary-commit');
    try {
      const outcome = await writeNew(client);
      expect(typeof outcome, String(outcome)).toBe('number');
      // Nobody reads: the lock goes because the committer sends the commit again.
      await expect.poll(lockCount, { timeout: 5_000 }).toBe(0);
      expect(await rows()).toEqual(['new', 'new', 'new']);
    } finally {
      await client.close();
    }
  });
});
