/**
 * Transactions survive `kill -9` of the process that owns the store, under both commit
 * protocols. Two-phase: locks (prewrites) and secondary commits are deferred-durability writes
 * (made durable by the group commit that carries the primary commit), so this is where a mistake
 * in that ordering would lose a committed transaction or tear one. One-phase (the default here):
 * the whole transaction is one atomic engine batch, which a crash must not split. the child (src/check/txn-crash-child.ts) commits
 * multi-row transactions on fresh keys until it is killed at a random moment; then every
 * acknowledged transaction must read back whole, and every transaction found must be whole.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Percolator } from '../src/txn/percolator.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs one child generation until it has acknowledged `acks` transactions, then kills it. */
async function crashRun(dir: string, protocol: string, generation: number, acks: number): Promise<Map<string, string[]>> {
  const acked = new Map<string, string[]>();
  const child: ChildProcess = fork(join(import.meta.dirname, '../dist/check/txn-crash-child.js'), [dir, String(generation), protocol], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const target = acks + Math.floor(Math.random() * acks);
  await new Promise<void>((resolve, reject) => {
    child.on('message', (m: { t: string; txn: string; rows: string[] }) => {
      if (m.t !== 'ack') return;
      acked.set(m.txn, m.rows);
      if (acked.size === target) {
        child.kill('SIGKILL');
        resolve();
      }
    });
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child exited early: code ${code} signal ${signal}`));
    });
  });
  await new Promise<void>((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()),
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
