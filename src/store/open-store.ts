/**
 * Opens a store by URL:
 *   memory:            in-process, not durable (tests, benchmarks of the layers above)
 *   file:DIR           embedded and durable (LevelDB under DIR); the default for the CLI
 *   bigtable://…       the Cloud Bigtable v2 API (`percolator serve`, the emulator, Cloud Bigtable)
 * Throws INVALID_STORE_URL for anything else.
 *
 * Each backend, and the engine store the first two share, is loaded when a URL of its scheme is
 * opened: a process that names a store (a CLI command's --store default) loads none it does not use.
 */
import type { LevelEngineOptions } from './embedded/level-engine.js';
import type { EngineStoreOptions } from './engine-store.js';
import { StoreError } from './errors.js';
import type { Store } from './store.js';
import { validateStoreOptions } from './store-options.js';

export const DEFAULT_STORE_URL = 'file:./percolator-data';

/**
 * For a process that opens a store to do one short thing (the CLI's get, scan, search, wait): no
 * mmap ballast, which costs ~0.5 s and only pays off over many table reads; and a `file:` store
 * that must already exist (NOT_A_STORE otherwise), so a mistyped directory gets no database.
 */
export const ONE_SHOT_STORE: OpenStoreOptions = { level: { mmapBallast: false, create: false } };

export interface OpenStoreOptions extends EngineStoreOptions {
  /** LevelDB tuning for `file:` stores (memory budgets, file sizes); ignored by other backends. */
  readonly level?: LevelEngineOptions;
}

/** The directory of a `file:` URL (`file:DIR`, `file:///abs`); null for any other URL or an empty one. */
export function fileStoreDir(url: string): string | null {
  if (typeof url !== 'string' || !url.startsWith('file:')) return null;
  const dir = url.slice('file:'.length).replace(/^\/\/(?=\/)/, '');
  return dir.length === 0 ? null : dir;
}

export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  if (typeof url !== 'string') throw new StoreError('INVALID_STORE_URL', 'a store URL must be a string');
  validateStoreOptions(options, url);
  if (url === 'memory:' || url.startsWith('memory:')) {
    const [{ EngineStore }, { MemoryEngine }] = await Promise.all([import('./engine-store.js'), import('./memory/memory-engine.js')]);
    return EngineStore.open(new MemoryEngine(), url, options);
  }
  if (url.startsWith('file:')) {
    const dir = fileStoreDir(url);
    if (dir === null) throw new StoreError('INVALID_STORE_URL', `file: URL needs a directory, e.g. file:./data (got ${url})`, { url });
    // Loaded on demand: the native LevelDB binding costs start-up time in processes that never
    // open a file: store (workers over a served store, the crash checkers' children).
    const [{ EngineStore }, { openLevelEngine }] = await Promise.all([import('./engine-store.js'), import('./embedded/level-engine.js')]);
    const engine = await openLevelEngine(dir, options.level);
    try {
      return await EngineStore.open(engine, url, options);
    } catch (e) {
      await engine.close().catch(() => undefined);
      throw e;
    }
  }
  if (url.startsWith('bigtable://')) {
    // Loaded on demand: the Google client is heavy and only this backend needs it.
    const { BigtableStore } = await import('./bigtable/bigtable-store.js');
    return BigtableStore.open(url, options);
  }
  throw new StoreError('INVALID_STORE_URL', `unknown store URL ${JSON.stringify(url)}: use memory:, file:DIR or bigtable://HOST:PORT`, {
    url,
  });
}
