/**
 * `Percolator.open` for the commands, loading the transaction layer — and all it loads: the store
 * backends' common code, the oracle client, the lock service's gRPC client — when a command opens
 * a Percolator, not when the command's file is loaded: `get --help` or a usage error needs none of
 * it. The type `Percolator` is the class's, for what `open` returns.
 */
import type { Percolator as PercolatorClass, PercolatorOptions } from '../txn/percolator.js';

export type Percolator = PercolatorClass;

export const Percolator = {
  async open(options?: PercolatorOptions): Promise<Percolator> {
    const { Percolator } = await import('../txn/percolator.js');
    return Percolator.open(options);
  },
};
