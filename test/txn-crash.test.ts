/**
 * Transactions survive `kill -9` of the process that owns the store, under both commit
 * protocols. Two-phase: locks (prewrites) and secondary commits are deferred-durability writes
 * (made durable by the group commit that carries the primary commit), so this is where a mistake
 * in that ordering would lose a committed transaction or tear one. One-phase (the default here):
 * the whole transaction is one atomic engine batch, which a crash must not split. the child (src/check/txn-crash-child.ts) commits
 * multi-row transactions on fresh keys until it is killed at a random moment; then every
 * acknowledged transaction must read back whole, and every transaction found must be whole.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Percolator } from '../src/txn/percolator.js';
import { runUntilKilled } from './support/crash-child.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs one child generation until it has acknowledged `acks` transactions, then kills it. */
async function crashRun(dir: string, protocol: string, generation: number, acks: number): Promise<Map<string, string[]>> {
  const acked = new Map<string, string[]>();
  const script = join(import.meta.dirname, '../dist/check/txn-crash-child.js');
  const target = acks + Math.floor(Math.random() * acks);
  await runUntilKilled<{ t: string; txn: string; rows: string[] }>(script, [dir, String(generation), protocol], target, (m) =>
    acked.set(m.txn, m.rows),
  );
  return acked;
}

describe.each(['auto', 'two-phase'])('commitProtocol %s', (protocol) => {
  it('acknowledged transactions are whole after kill -9 of the store owner; none is torn', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'percolator-txn-crash-'));
    dirs.push(dir);
    const acked = new Map<string, string[]>();
    for (let g = 0; g < 3; g++) for (const [k, v] of await crashRun(dir, protocol, g, 150)) acked.set(k, v);
    // Locks of the dead children expire (lease 500 ms, TTL 1 s): the reader waits and resolves them.
    const db = await Percolator.open({ store: `file:${dir}`, lockWaitMs: 20_000 });
    try {
      const snap = await db.snapshot();
      const found = new Map<string, Set<string>>();
      for await (const r of snap.scan('crash', {}, { columns: ['c:v'] })) {
        const key = Buffer.from(r.row).toString();
        const txn = key.slice(0, key.lastIndexOf('-r'));
        expect(Buffer.from(r.columns.get('c:v') as Uint8Array).toString()).toBe(txn);
        let rows = found.get(txn);
        if (rows === undefined) found.set(txn, (rows = new Set()));
        rows.add(key);
      }
      snap.release();
      for (const [txn, rows] of acked) expect([...(found.get(txn) ?? [])].sort(), `acknowledged ${txn}`).toEqual([...rows].sort());
      // Unacknowledged transactions (in flight at the kill) are all-or-nothing too.
      for (const [txn, rows] of found) {
        const n = Number(txn.slice(txn.lastIndexOf('-t') + 2));
        expect(rows.size, `transaction ${txn}`).toBe(2 + ((n + 1) % 4));
      }
      expect(acked.size).toBeGreaterThanOrEqual(450);
    } finally {
      await db.close();
    }
  }, 120_000);
});
