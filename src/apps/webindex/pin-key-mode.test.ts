import { expect, it } from 'vitest';
import { Percolator } from '../../txn/percolator.js';
import { KeyModeMismatchError, checkKeyMode, pinKeyMode, pinnedKeyMode } from './pin-key-mode.js';
import { createWebIndexTables } from './pipeline.js';
import { runWebIndex } from './run.js';

const remedy = (pinned: string) => `use ${pinned}`;

async function pinnedIn(db: Percolator): Promise<string | null> {
  const snap = await db.snapshot();
  try {
    return await pinnedKeyMode(snap);
  } finally {
    snap.release();
  }
}

it('pins the first mode, takes it again, and refuses another without writing', async () => {
  const db = await Percolator.open({ store: 'memory:' });
  try {
    await createWebIndexTables(db);
    expect(await pinnedIn(db)).toBeNull();
    await pinKeyMode(db, 'content', remedy);
    await pinKeyMode(db, 'content', remedy);
    const refused = await pinKeyMode(db, 'content+url+title', remedy).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(KeyModeMismatchError);
    expect(refused).toMatchObject({ code: 'KEY_MODE_MISMATCH', pinned: 'content', requested: 'content+url+title' });
    expect((refused as Error).message).toBe('this web index clusters documents by the keys content, not content+url+title: use content');
    expect(await pinnedIn(db)).toBe('content');
  } finally {
    await db.close();
  }
});

it('of two first workers with different modes, one pins and the other is refused', async () => {
  for (let round = 0; round < 20; round++) {
    const db = await Percolator.open({ store: 'memory:' });
    try {
      await createWebIndexTables(db);
      const modes = round % 2 === 0 ? (['content', 'content+url+title'] as const) : (['content+url+title', 'content'] as const);
      const results = await Promise.allSettled(modes.map((m) => pinKeyMode(db, m, remedy)));
      const won = modes.filter((_, i) => results[i]?.status === 'fulfilled');
      expect(won).toHaveLength(1);
      const lost = results.find((r) => r.status === 'rejected');
      expect(lost?.status === 'rejected' ? lost.reason : null).toMatchObject({ code: 'KEY_MODE_MISMATCH', pinned: won[0] });
      expect(await pinnedIn(db)).toBe(won[0]);
    } finally {
      await db.close();
    }
  }
});

it('a re-crawl into a store another corpus indexed is refused before it loads anything', async () => {
  const db = await Percolator.open({ store: 'memory:' });
  try {
    await createWebIndexTables(db);
    await pinKeyMode(db, 'content', remedy);
    // The synthetic corpus needs the paper's three keys.
    await expect(runWebIndex({ store: db.store, corpus: 'synthetic', docs: 5, seed: 1, keep: true })).rejects.toMatchObject({
      code: 'KEY_MODE_MISMATCH',
      pinned: 'content',
      requested: 'content+url+title',
    });
    let pages = 0;
    for await (const _ of db.store.readRows('pages', {})) pages++;
    expect(pages).toBe(0);
  } finally {
    await db.close();
  }
});

it('a check takes an unpinned store or the pinned mode without pinning, and refuses another', async () => {
  const db = await Percolator.open({ store: 'memory:' });
  try {
    await createWebIndexTables(db);
    const message = (pinned: string) => `pinned ${pinned}`;
    await checkKeyMode(db, 'content', message);
    expect(await pinnedIn(db)).toBeNull();
    await pinKeyMode(db, 'content', remedy);
    await checkKeyMode(db, 'content', message);
    await expect(checkKeyMode(db, 'content+url+title', message)).rejects.toMatchObject({
      code: 'KEY_MODE_MISMATCH',
      pinned: 'content',
      requested: 'content+url+title',
      message: 'pinned content',
    });
    expect(await pinnedIn(db)).toBe('content');
  } finally {
    await db.close();
  }
});
