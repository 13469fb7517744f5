/**
 * Test fixtures: a store as seen over a network that drops.
 *
 * `unreachableAt`: calls of the named methods fail with IO_ERROR (what a remote store's calls do
 * when its server is out of reach) whenever `down()` says so when they are made; everything else,
 * and those calls otherwise, pass through. `readRows` fails at its first `next`, as a stream does.
 *
 * `losingReplies`: each call of the named (write) methods asks `fate()`: 'pass' goes through;
 * 'applied' is applied and then fails with IO_ERROR (its reply lost); 'dropped' fails without
 * being applied (the request lost).
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

export type WriteFate = 'pass' | 'applied' | 'dropped';

export function losingReplies<S extends Store>(store: S, methods: readonly string[], fate: () => WriteFate): S {
  const writes = new Set(methods);
  return new Proxy(store, {
    get(target, name, receiver) {
      const v: unknown = Reflect.get(target, name, receiver);
      if (typeof v !== 'function') return v;
      const call = (v as (...a: unknown[]) => Promise<unknown>).bind(target);
      if (typeof name !== 'string' || !writes.has(name)) return call;
      return async (...args: unknown[]) => {
        const f = fate();
        if (f === 'pass') return call(...args);
        if (f === 'applied') await call(...args);
        throw new StoreError('IO_ERROR', `connection reset (test: ${f === 'applied' ? 'the reply' : 'the request'} lost)`, {});
      };
    },
  });
}
