import { describe, expect, it } from 'vitest';
import { sampleServer } from './dashboard.js';
import type { ServerStatus } from './server.js';

function status(storeCache: ServerStatus['storeCache']): ServerStatus {
  return {
    server: { uptimeSeconds: 1, store: 'memory:', grpc: '127.0.0.1:1', oracle: null, shuttingDown: false, storeWriteFailure: null },
    grpc: { requests: 5, errors: 1, cancelled: 0, inflight: 2, requestsPerSecond: 0 },
    rows: { read: 3, written: 4, readPerSecond: 0, writtenPerSecond: 0 },
    oracle: null,
    locks: { held: 0 },
    storeCache,
  };
}

describe('the serve dashboard sample', () => {
  it('charts the row lookups by what answered them, and zeros for a store without caches', () => {
    const lookups = { total: 10, decoded: 6, encoded: 2, absent: 1, engine: 1 };
    const s = sampleServer(status({ decoded: { budgetBytes: 1, bytes: 0, rows: 0 }, encoded: { budgetBytes: 0 }, lookups }));
    expect(s.counters).toMatchObject({ lookupsDecoded: 6, lookupsEncoded: 2, lookupsAbsent: 1, lookupsEngine: 1, requests: 5 });
    expect(sampleServer(status(null)).counters).toMatchObject({ lookupsDecoded: 0, lookupsEngine: 0 });
  });
});
