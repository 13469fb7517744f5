/**
 * `--row-cache-mib` and `--block-cache-mib`: the memory of an embedded store's caches, for the
 * commands that keep one open for hours (`serve`, `worker`). Without them an operator could not
 * size a long-running process: the store's defaults (a 128 MiB decoded-row cache with a 32 MiB
 * encoded tier, a 64 MiB LevelDB block cache) were fixed, whatever the machine or the store.
 *
 * Invariants:
 * - A flag that cannot take effect is refused (INVALID_ARGUMENT), never ignored: both need an
 *   embedded store (`file:`, `memory:`), and the block cache is LevelDB's (`file:` only). A
 *   worker over `bigtable://` caches nothing of its own; the server it talks to does.
 * - Neither flag given: the store's own defaults, exactly as before the flags existed.
 * - The encoded tier keeps its default share of the row cache, a quarter (engine-store.ts).
 */
import type { Command } from 'commander';
import type { OpenStoreOptions } from '../store/open-store.js';
import { given, numberOf } from './parent-command.js';
import { UsageError } from './usage-error.js';

const MiB = 1024 * 1024;
/** The store's defaults, for the help text (engine-store.ts, level-engine.ts). */
const DEFAULT_ROW_CACHE_MIB = 128;
const DEFAULT_BLOCK_CACHE_MIB = 64;
/** A bound that keeps a typo (a byte count given as MiB) from asking for terabytes. */
const MAX_ROW_CACHE_MIB = 1024 * 1024;
/** classic-level reads LevelDB's cache size as a uint32 of bytes: 4 GiB would wrap to 0. */
const MAX_BLOCK_CACHE_MIB = 4095;

export interface CacheFlags {
  rowCacheMib?: number;
  blockCacheMib?: number;
}

function parseMib(name: string, max: number) {
  return (raw: string): number => {
    const n = numberOf(raw, 'integer');
    if (!Number.isInteger(n) || n < 0 || n > max)
      throw new UsageError(`--${name} must be an integer of MiB in [0, ${max}], got ${given(raw)}`);
    return n;
  };
}

/** Adds both flags to `command` (a long-running command that opens a store). */
export function addCacheOptions(command: Command): Command {
  return command
    .option(
      '--row-cache-mib <n>',
      `embedded store: decoded rows cached on the heap, a quarter more kept encoded (0: none; default ${DEFAULT_ROW_CACHE_MIB})`,
      parseMib('row-cache-mib', MAX_ROW_CACHE_MIB),
    )
    .option(
      '--block-cache-mib <n>',
      `file: store: LevelDB's cache of uncompressed table blocks (default ${DEFAULT_BLOCK_CACHE_MIB})`,
      parseMib('block-cache-mib', MAX_BLOCK_CACHE_MIB),
    );
}

/**
 * The store options the flags ask for on `storeUrl`, merged into `base` (whose `level` options
 * are kept). Throws UsageError for a flag the store cannot honour.
 */
export function withCacheOptions(flags: CacheFlags, storeUrl: string, base: OpenStoreOptions = {}): OpenStoreOptions {
  const { rowCacheMib, blockCacheMib } = flags;
  if (rowCacheMib === undefined && blockCacheMib === undefined) return base;
  const embedded = storeUrl.startsWith('file:') || storeUrl.startsWith('memory:');
  for (const [name, value] of [
    ['row-cache-mib', rowCacheMib],
    ['block-cache-mib', blockCacheMib],
  ] as const) {
    if (value !== undefined && !embedded)
      throw new UsageError(`--${name} sizes an embedded store's cache (file:, memory:); ${storeUrl} is not one: size the server's`);
  }
  if (blockCacheMib !== undefined && !storeUrl.startsWith('file:'))
    throw new UsageError(`--block-cache-mib sizes LevelDB's cache, which only a file: store has (got ${storeUrl})`);
  return {
    ...base,
    ...(rowCacheMib === undefined ? {} : { cacheBytes: rowCacheMib * MiB }),
    ...(blockCacheMib === undefined ? {} : { level: { ...base.level, cacheSize: blockCacheMib * MiB } }),
  };
}
