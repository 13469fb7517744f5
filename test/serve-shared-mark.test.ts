/**
 * `startServer` marks an embedded store shared (every Percolator of the process commits in two
 * phases: clients in other processes cannot see its in-memory commit locks) only while its gRPC
 * server can serve: a start that fails releases the mark, and so does `close()` once the gRPC
 * server has stopped — unless another holder (a second server on the same store) still shares it.
 * Until 2026-12-02 the mark was for good: a failed start or a closed server left the process
 * committing in two phases for the rest of its life. And a start waits for the one-phase commits
 * that chose their protocol before the mark, so that no client can read beside one.
 */
import net from 'node:net';
import { Client, Server, credentials } from '@grpc/grpc-js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startServer } from '../src/server/server.js';
import { openStore } from '../src/store/open-store.js';
import { type AtomicRowsStore, atomicRowsOf } from '../src/store/store.js';
import { Percolator } from '../src/txn/percolator.js';
import type { ProtocolPoint } from '../src/txn/transaction.js';

afterEach(() => {
  vi.restoreAllMocks();
});

const quiet = { port: 0, oraclePort: 0, httpPort: 0, log: () => undefined } as const;

async function memoryStore(): Promise<AtomicRowsStore> {
  const store = atomicRowsOf(await openStore('memory:', { gcIntervalMs: 0 }));
  if (store === null) throw new Error('embedded stores implement the atomic extension');
  return store;
}

async function busyPort(): Promise<{ port: number; close(): Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The protocol points one transaction of a fresh Percolator over `store` passes. */
async function commitPoints(store: AtomicRowsStore): Promise<ProtocolPoint[]> {
  const points: ProtocolPoint[] = [];
  const db = await Percolator.open({ store, onProtocolPoint: (p) => void points.push(p) });
  try {
    if (!(await store.listTables()).includes('t')) await db.createTable('t');
    await db.transaction(async (tx) => tx.set('t', 'r', 'c:v', 'v'));
  } finally {
    await db.close();
  }
  return points;
}

describe('the shared mark of a served store', () => {
  for (const which of ['port', 'oraclePort', 'httpPort'] as const) {
    it(`is released by a start that fails (its ${which} taken), on a store the caller passed`, async () => {
      const store = await memoryStore();
      const taken = await busyPort();
      try {
        await expect(startServer({ ...quiet, store, [which]: taken.port })).rejects.toMatchObject({ code: 'LISTEN_FAILED' });
        expect(store.shared).toBe(false);
      } finally {
        await taken.close();
        await store.close();
      }
    });
  }

  it('is held while the server runs and released once it is closed: commits take one phase again', async () => {
    const store = await memoryStore();
    try {
      expect(await commitPoints(store)).not.toContain('after-primary-prewrite');
      const server = await startServer({ ...quiet, store });
      expect(store.shared).toBe(true);
      expect(await commitPoints(store)).toContain('after-primary-prewrite'); // two phases
      await server.close();
      expect(store.shared).toBe(false);
      expect(await commitPoints(store)).not.toContain('after-primary-prewrite');
    } finally {
      await store.close();
    }
  });

  it('is released when close() cancels a call that outlived the grace period', async () => {
    const store = await memoryStore();
    try {
      const lines: string[] = [];
      const server = await startServer({ ...quiet, store, shutdownGraceMs: 50, log: (l) => void lines.push(l) });
      // An unfinished call: a client that sends its metadata and never its message. Its handler
      // never answers, so close() cancels it (forceShutdown) after the grace period.
      const client = new Client(`127.0.0.1:${server.port}`, credentials.createInsecure());
      const call = client.makeClientStreamRequest(
        '/google.bigtable.v2.Bigtable/MutateRow',
        (b: Buffer) => b,
        (b: Buffer) => b,
        () => undefined,
      );
      call.on('error', () => undefined);
      await new Promise<void>((resolve) => {
        const poll = () => (server.metrics.totals.inflight > 0 ? resolve() : setTimeout(poll, 5));
        poll();
      });
      await server.close();
      expect(lines.some((l) => l.includes('cancelling them'))).toBe(true); // the forced path
      expect(store.shared).toBe(false);
      client.close();
    } finally {
      await store.close();
    }
  });

  it('stays while another server on the same store still runs', async () => {
    const store = await memoryStore();
    try {
      const a = await startServer({ ...quiet, store, oraclePort: null });
      const b = await startServer({ ...quiet, store, oraclePort: null });
      await a.close();
      expect(store.shared).toBe(true);
      await a.close(); // idempotent: must not release b's share
      expect(store.shared).toBe(true);
      await b.close();
      expect(store.shared).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('is held for good by a holder that never releases it, whatever servers come and go', async () => {
    const store = await memoryStore();
    try {
      store.markShared();
      await (await startServer({ ...quiet, store })).close();
      expect(store.shared).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('makes the start wait, before binding, for a one-phase commit in flight at the mark', async () => {
    const store = await memoryStore();
    const order: string[] = [];
    const bind = Server.prototype.bindAsync;
    vi.spyOn(Server.prototype, 'bindAsync').mockImplementation(function (this: Server, ...args: Parameters<Server['bindAsync']>) {
      order.push('bind');
      return bind.apply(this, args);
    });
    let go!: () => void;
    const held = new Promise<void>((r) => {
      go = r;
    });
    let reached!: () => void;
    const atCommit = new Promise<void>((r) => {
      reached = r;
    });
    const db = await Percolator.open({
      store,
      onProtocolPoint: (p) => {
        order.push(p);
        if (p !== 'before-primary-commit') return;
        reached();
        return held;
      },
    });
    try {
      await db.createTable('t');
      const committed = db.transaction(async (tx) => tx.set('t', 'r', 'c:v', 'v'));
      await atCommit; // one phase chosen, its in-memory locks taken, its write not made yet
      const starting = startServer({ ...quiet, store });
      go();
      const server = await starting;
      await committed;
      await server.close();
      expect(order).toEqual(['before-primary-commit', 'after-commit', 'bind']);
    } finally {
      await db.close();
      await store.close();
    }
  });
});
