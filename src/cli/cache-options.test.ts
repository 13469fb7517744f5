import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { addCacheOptions, withCacheOptions } from './cache-options.js';
import { UsageError } from './usage-error.js';

const MiB = 1024 * 1024;

function parse(...args: string[]): { rowCacheMib?: number; blockCacheMib?: number } {
  const command = addCacheOptions(new Command('serve').exitOverride());
  command.parse(args, { from: 'user' });
  return command.opts();
}

describe('--row-cache-mib and --block-cache-mib', () => {
  it('leave the options untouched when neither is given', () => {
    const base = { level: { create: false } };
    expect(withCacheOptions(parse(), 'file:/d', base)).toBe(base);
  });

  it('size the row cache in MiB, keeping the base level options', () => {
    const flags = parse('--row-cache-mib', '16', '--block-cache-mib', '8');
    expect(flags).toEqual({ rowCacheMib: 16, blockCacheMib: 8 });
    expect(withCacheOptions(flags, 'file:/d', { level: { create: false } })).toEqual({
      cacheBytes: 16 * MiB,
      level: { create: false, cacheSize: 8 * MiB },
    });
  });

  it('take 0 as no cache', () => {
    expect(withCacheOptions(parse('--row-cache-mib', '0'), 'memory:')).toEqual({ cacheBytes: 0 });
  });

  it('refuse a store they cannot size', () => {
    expect(() => withCacheOptions({ rowCacheMib: 1 }, 'bigtable://h:1/p/i')).toThrow(UsageError);
    expect(() => withCacheOptions({ blockCacheMib: 1 }, 'memory:')).toThrow(/only a file: store/);
  });

  it('refuse a size past the bound', () => {
    expect(() => parse('--block-cache-mib', '4096')).toThrow(/\[0, 4095\], got 4096/);
    expect(() => parse('--row-cache-mib', '2.5')).toThrow(/got 2.5/);
  });
});
