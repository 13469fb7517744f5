/**
 * Test fixture: an embedded store seen as a remote one. A proxy hides the embedded extension
 * (atomicRowsOf gives null), so the transaction layer and GC take the paths they take on
 * bigtable:// (filtered async reads, two-phase commits) against the same data; it counts point reads.
 */
import type { Store } from '../store/store.js';

const HIDDEN = new Set<PropertyKey>(['checkAndMutateRows', 'markShared', 'readRowSync', 'readCellsSync', 'readDerivedSync']);

export function remoteLike(inner: Store): { store: Store; reads: () => number } {
  let reads = 0;
  const store = new Proxy(inner, {
    get(target, p) {
      if (HIDDEN.has(p)) return undefined;
      const v: unknown = Reflect.get(target, p);
      if (p === 'readRow') {
        return (...args: Parameters<Store['readRow']>) => {
          reads++;
          return target.readRow(...args);
        };
      }
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store, reads: () => reads };
}
