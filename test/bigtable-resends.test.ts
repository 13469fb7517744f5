/**
 * Which single-row calls of a `bigtable://` store are sent again when a connection reset cuts
 * them mid-flight (src/store/bigtable/bigtable-store.ts `resending`), and — the other half, which
 * matters more — which are not. A call whose second send would change the outcome must surface
 * the failure to its caller: an increment or a conditional write that is not marked `resendable`
 * may have been applied with its reply lost, and sending it again would apply it twice or answer
 * from the state its first send left. Each case cuts exactly one call (test/support/resetting-proxy.ts
 * `cutAt`), with its reply lost (applied) or its request lost (not applied), and checks what the
 * call returned and what the server holds, read over a connection that is never cut.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type PercolatorServer, startServer } from '../src/server/server.js';
import { isStoreError } from '../src/store/errors.js';
import { openStore } from '../src/store/open-store.js';
import type { Store } from '../src/store/store.js';
import type { Mutation } from '../src/store/types.js';
import { type ResettingProxy, resettingProxy } from './support/resetting-proxy.js';

let server: PercolatorServer;
let proxy: ResettingProxy;
/** Straight to the server: setup and checks, never cut. */
let direct: Store;
/** Through the proxy: the calls under test. */
let cut: Store;

const b = (s: string): Uint8Array => Buffer.from(s);
const set = (value: string, ts: number): Mutation => ({
  setCell: { familyName: 'f', columnQualifier: b('q'), timestampMicros: ts, value: b(value) },
});

beforeEach(async () => {
  server = await startServer({ storeUrl: 'memory:', port: 0, httpPort: null, oraclePort: null, log: () => undefined });
  proxy = await resettingProxy(0, server.port);
  direct = await openStore(`bigtable://127.0.0.1:${server.port}`);
  await direct.createTable('t', { families: { f: {} } });
  cut = await openStore(`bigtable://127.0.0.1:${proxy.port}`);
  // The table's schema (GetTable) is fetched and cached now, so the cut below meets the call under test.
  await cut.readRow('t', b('warm-up'));
});
afterEach(async () => {
  await cut.close();
  await direct.close();
  await proxy.close();
  await server.close();
});

/** Every version of t/ROW f:q, newest first, as strings. */
async function versions(row: string): Promise<string[]> {
  const r = await direct.readRow('t', b(row));
  return (r?.cells ?? []).filter((c) => c.family === 'f').map((c) => Buffer.from(c.value).toString());
}

/** Runs `call` with the next bytes of `side` cut; resolves to its outcome once the cut has happened. */
async function cutOnce<T>(side: 'reply' | 'request', call: () => Promise<T>): Promise<PromiseSettledResult<T>> {
  const done = proxy.cutAt(side);
  const [outcome] = await Promise.allSettled([call(), done]);
  expect(proxy.armedCuts).toBe(1);
  return outcome;
}

describe.each(['reply', 'request'] as const)('a call cut mid-flight, its %s lost', (side) => {
  it('mutateRow with a timestamp of its own is sent again: it resolves, and the cell is there once', async () => {
    const outcome = await cutOnce(side, () => cut.mutateRow('t', b('r'), [set('v', 5_000)]));
    expect(outcome.status).toBe('fulfilled');
    expect(await versions('r')).toEqual(['v']);
  });

  it('checkAndMutateRow marked resendable is sent again: it resolves with an outcome', async () => {
    const outcome = await cutOnce(side, () =>
      cut.checkAndMutateRow('t', b('r'), {
        predicateFilter: { familyNameRegexFilter: 'f' },
        falseMutations: [set('v', 5_000)],
        resendable: true,
      }),
    );
    expect(outcome.status).toBe('fulfilled');
    // Lost reply: the second send finds the cell the first wrote (true); lost request: the only send writes it (false).
    expect(outcome.status === 'fulfilled' && outcome.value).toBe(side === 'reply');
    expect(await versions('r')).toEqual(['v']);
  });
});

describe('calls that must not be sent twice fail with IO_ERROR when cut', () => {
  it('readModifyWriteRow with its reply lost: the increment applied once, not again', async () => {
    await direct.readModifyWriteRow('t', b('n'), [{ familyName: 'f', columnQualifier: b('q'), incrementAmount: 1n }]);
    const outcome = await cutOnce('reply', () =>
      cut.readModifyWriteRow('t', b('n'), [{ familyName: 'f', columnQualifier: b('q'), incrementAmount: 1n }]),
    );
    expect(outcome.status).toBe('rejected');
    expect(outcome.status === 'rejected' && isStoreError(outcome.reason) && outcome.reason.code).toBe('IO_ERROR');
    const r = await direct.readRow('t', b('n'));
    const cell = r?.cells.find((c) => c.family === 'f');
    expect(cell && Buffer.from(cell.value).readBigInt64BE()).toBe(2n);
  });

  it('checkAndMutateRow not marked resendable, its reply lost: the write applied once, the failure the caller’s', async () => {
    const outcome = await cutOnce('reply', () =>
      cut.checkAndMutateRow('t', b('r'), { predicateFilter: { familyNameRegexFilter: 'f' }, falseMutations: [set('v', 5_000)] }),
    );
    // Sent again, it would have found the cell its first send wrote and answered true: a wrong outcome.
    expect(outcome.status).toBe('rejected');
    expect(outcome.status === 'rejected' && isStoreError(outcome.reason) && outcome.reason.code).toBe('IO_ERROR');
    expect(await versions('r')).toEqual(['v']);
  });

  it('mutateRow with server-assigned timestamps, its reply lost: one version, not two', async () => {
    const outcome = await cutOnce('reply', () => cut.mutateRow('t', b('s'), [set('v', -1)]));
    expect(outcome.status).toBe('rejected');
    expect(outcome.status === 'rejected' && isStoreError(outcome.reason) && outcome.reason.code).toBe('IO_ERROR');
    expect(await versions('s')).toEqual(['v']);
  });
});
