/**
 * Child of test/txn-crash.test.ts: runs multi-row Percolator transactions on a `file:` store it
 * owns, so a `kill -9` of this process is a crash of the store itself (unlike `check bank`, whose
 * workers reach the supervisor's store over IPC).
 *
 * Usage: `node dist/check/txn-crash-child.js DIR GENERATION [auto|two-phase]` with an IPC channel
 * (the commit protocol: one atomic write per transaction, or locks and deferred secondaries). Each
 * transaction writes rows `g<G>-t<N>-r<k>` (k < 2..5, fresh keys) with the value `t<N>`; after
 * `db.transaction` resolves it sends `{ t: 'ack', txn, rows }`. The parent kills it at a random
 * moment and checks atomicity and durability: every acknowledged transaction's rows all read
 * back, and every transaction is all-or-nothing.
 */
import { Percolator } from '../txn/percolator.js';

async function main(): Promise<void> {
  const [dir, gen, protocol = 'auto'] = process.argv.slice(2);
  if (dir === undefined || gen === undefined || (protocol !== 'auto' && protocol !== 'two-phase')) {
    throw new Error('usage: txn-crash-child DIR GENERATION [auto|two-phase]');
  }
  // A short lease, so the checker's reader soon treats this process's locks as abandoned.
  const db = await Percolator.open({ store: `file:${dir}`, leaseMs: 500, lockTtlMs: 1_000, commitProtocol: protocol });
  await db.createTable('crash');
  let n = 0;
  const loop = async (): Promise<void> => {
    for (;;) {
      const id = `g${gen}-t${n++}`;
      const rows = Array.from({ length: 2 + (n % 4) }, (_, k) => `${id}-r${k}`);
      await db.transaction(async (tx) => {
        for (const r of rows) tx.set('crash', r, 'c:v', id);
      });
      process.send?.({ t: 'ack', txn: id, rows });
    }
  };
  await Promise.all(Array.from({ length: 8 }, loop));
}

main().catch((e: unknown) => {
  process.stderr.write(`txn-crash-child: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
