/** Leases: the rows a killed process leaves are removed by the next one to register, and only those. */
import { describe, expect, it } from 'vitest';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import type { CheckAndMutateRequest } from '../store/types.js';
import { Liveness, SWEEP_AFTER_MS, WORKERS_TABLE, ensureWorkersTable } from './liveness.js';

const NOW = 1_800_000_000_000;

/** What a process that registered and was then killed leaves: its row, expiring at `expiresAt`. */
async function leftLease(store: Store, id: string, expiresAt: number): Promise<void> {
  const value = Buffer.alloc(8);
  value.writeDoubleBE(expiresAt);
  await store.mutateRow(WORKERS_TABLE, Buffer.from(id), [
    { setCell: { familyName: 'l', columnQualifier: Buffer.from('expires'), timestampMicros: 0, value } },
  ]);
}

async function leaseRows(store: Store): Promise<string[]> {
  const ids: string[] = [];
  for await (const row of store.readRows(WORKERS_TABLE, {})) ids.push(Buffer.from(row.key).toString());
  return ids.sort();
}

describe('Liveness', () => {
  it('removes, when a process registers, the lease rows expired longer than SWEEP_AFTER_MS, and keeps the others', async () => {
    const store = await openStore('memory:');
    await ensureWorkersTable(store);
    await leftLease(store, 'killed-long-ago', NOW - SWEEP_AFTER_MS - 1);
    await leftLease(store, 'killed-just-now', NOW - 1_000);
    await leftLease(store, 'alive', NOW + 5_000);
    const live = new Liveness(store, { nowMs: () => NOW });
    const id = await live.register();
    expect(await leaseRows(store)).toEqual(['alive', 'killed-just-now', id].sort());
    // A missing row reads as a lease that expired: the sweep changed no one's answer.
    expect(await live.isAlive('killed-long-ago')).toBe(false);
    expect(await live.isAlive('alive')).toBe(true);
    await live.close();
    await store.close();
  });

  it('keeps a row renewed after the sweep read it (the delete is conditioned on the value read)', async () => {
    const inner = await openStore('memory:');
    await ensureWorkersTable(inner);
    await leftLease(inner, 'paused', NOW - SWEEP_AFTER_MS - 1);
    // The owner wakes up from a long pause and renews between the sweep's read and its delete.
    const store = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === 'checkAndMutateRow')
          return async (table: string, key: Uint8Array, request: CheckAndMutateRequest) => {
            await leftLease(inner, Buffer.from(key).toString(), NOW + 5_000);
            return target.checkAndMutateRow(table, key, request);
          };
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const live = new Liveness(store, { nowMs: () => NOW });
    expect(await live.sweepExpired()).toBe(0);
    expect(await leaseRows(inner)).toEqual(['paused']);
    expect(await live.isAlive('paused')).toBe(true);
    await inner.close();
  });
});
