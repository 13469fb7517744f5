/**
 * The embedded `file:DIR` backend against the shared Store conformance suite. Each `open` gets a
 * fresh temporary directory; `reopen` closes the store and opens the same directory again with
 * the same options, so the suite's persistence tests run.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openStore } from '../open-store.js';
import type { Store, StoreOptions } from '../store.js';
import { describeStoreConformance } from '../store-conformance.js';

const dirs: string[] = [];
const opened = new WeakMap<Store, { dir: string; options: StoreOptions | undefined }>();

async function openIn(dir: string, options: StoreOptions | undefined): Promise<Store> {
  const store = await openStore(`file:${dir}`, options);
  opened.set(store, { dir, options });
  return store;
}

describeStoreConformance('file:DIR (embedded)', {
  async open(options) {
    const dir = await mkdtemp(join(tmpdir(), 'percolator-conformance-'));
    dirs.push(dir);
    return openIn(dir, options);
  },
  async reopen(previous) {
    const info = opened.get(previous);
    if (info === undefined) throw new Error('reopen: store was not opened by this factory');
    await previous.close();
    return openIn(info.dir, info.options);
  },
});

// Runs after the suite's own afterAll, which closes every store it opened.
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
