/**
 * Test fixture: a store as seen over a network that drops. Calls of the named methods fail with
 * IO_ERROR (what a remote store's calls do when its server is out of reach) whenever `down()` says
 * so when they are made; everything else, and those calls otherwise, pass through. `readRows`
 * fails at its first `next`, as a stream does.
 */
import { StoreError } from './errors.js';
import type { Store } from './store.js';

export function unreachableAt<S extends Store>(store: S, methods: readonly string[], down: () => boolean): S {
  const failing = new Set(methods);
  const unreachable = () => new StoreError('IO_ERROR', 'store out of reach (test)', {});
  return new Proxy(store, {
    get(target, name, receiver) {
      const v: unknown = Reflect.get(target, name, receiver);
      if (typeof v !== 'function') return v;
      const call = (v as (...a: unknown[]) => unknown).bind(target);
      if (typeof name !== 'string' || !failing.has(name)) return call;
      return (...args: unknown[]) => {
        if (!down()) return call(...args);
        if (name !== 'readRows') return Promise.reject(unreachable());
        return { [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(unreachable()) }) };
      };
    },
  });
}
