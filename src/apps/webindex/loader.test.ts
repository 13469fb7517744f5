import { expect, it } from 'vitest';
import { openStore } from '../../store/open-store.js';
import { unreachableAt } from '../../store/unreachable-store.fixture.js';
import { Percolator } from '../../txn/percolator.js';
import { loadDocuments } from './loader.js';
import { createWebIndexTables } from './pipeline.js';
import { PAGES, RAW_CONTENT } from './schema.js';

/** A memory store whose next `failures.left` atomic writes fail with IO_ERROR (a remote store out of reach). */
async function flakyStore(failures: { left: number }) {
  return unreachableAt(await openStore('memory:'), ['checkAndMutateRows'], () => failures.left-- > 0);
}

const docs = [
  { url: 'https://a.example/', content: '# A' },
  { url: 'https://b.example/', content: '# B' },
];

it('writes a fetch again while its commits fail with IO_ERROR, within storeOutageMs', async () => {
  const failures = { left: 0 };
  const db = await Percolator.open({ store: await flakyStore(failures) });
  try {
    await createWebIndexTables(db);
    failures.left = 3;
    expect(await loadDocuments(db, docs, { concurrency: 1 })).toEqual({ loaded: 2, deleted: 0 });
    expect(failures.left).toBeLessThan(0); // every failure was met, and retried past
    for (const d of docs) expect(Buffer.from((await db.get(PAGES, d.url, RAW_CONTENT)) ?? '').toString()).toBe(d.content);
  } finally {
    await db.close();
  }
});

it('gives up once the outage outlasts storeOutageMs, with the store error', async () => {
  const failures = { left: 0 };
  const db = await Percolator.open({ store: await flakyStore(failures) });
  try {
    await createWebIndexTables(db);
    failures.left = 1_000;
    await expect(loadDocuments(db, docs, { concurrency: 1, storeOutageMs: 300 })).rejects.toMatchObject({ code: 'IO_ERROR' });
    failures.left = 1_000;
    await expect(loadDocuments(db, docs, { concurrency: 1, storeOutageMs: 0 })).rejects.toMatchObject({ code: 'IO_ERROR' });
  } finally {
    failures.left = 0;
    await db.close();
  }
});
