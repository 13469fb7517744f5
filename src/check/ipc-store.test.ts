/**
 * The IPC store must be indistinguishable from the store it forwards to: the whole store
 * conformance suite runs against an `IpcStore` whose requests cross an in-process channel with
 * the same V8 serialization `fork(..., { serialization: 'advanced' })` uses. The multi-process
 * path itself is exercised by test/bank.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { isStoreError } from '../store/errors.js';
import { openStore } from '../store/open-store.js';
import { describeStoreConformance } from '../store/store-conformance.js';
import { IpcStore, loopbackChannels, serveStoreOverIpc } from './ipc-store.js';

describeStoreConformance('memory over ipc-store', {
  open: async (options) => {
    const store = await openStore('memory:', options);
    const [server, client] = loopbackChannels();
    serveStoreOverIpc(store, server);
    return new IpcStore(store.url, client);
  },
});

describe('IpcStore', () => {
  it('re-creates StoreErrors with their code and details, and fails pending calls when the channel closes', async () => {
    const store = await openStore('memory:');
    const [server, client] = loopbackChannels();
    const served = serveStoreOverIpc(store, server);
    const ipc = new IpcStore(store.url, client);
    await ipc.createTable('t', { families: { f: {} } });
    const e = await ipc.createTable('t', { families: { f: {} } }).catch((x: unknown) => x);
    expect(isStoreError(e, 'TABLE_EXISTS')).toBe(true);
    const results = await ipc.mutateRows('t', [
      {
        key: Buffer.from('a'),
        mutations: [{ setCell: { familyName: 'nope', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.from('v') } }],
      },
    ]);
    expect(isStoreError(results[0]?.error, 'FAMILY_NOT_FOUND')).toBe(true);
    const pending = ipc.readRow('t', Buffer.from('a'));
    server.close();
    const closed = await pending.catch((x: unknown) => x);
    expect(isStoreError(closed, 'STORE_CLOSED')).toBe(true);
    await served.idle();
    await ipc.close();
    expect(isStoreError(await ipc.listTables().catch((x: unknown) => x), 'STORE_CLOSED')).toBe(true);
    await store.close();
  });
});
