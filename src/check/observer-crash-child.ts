/**
 * Child of test/observer-crash.test.ts: runs loaders AND observers on a `file:` store it owns, so
 * a `kill -9` of this process is a crash of the store under observer commits, which resolve
 * before they are durable (Transaction.deferDurability) and clear their notifications with
 * deferred writes.
 *
 * Usage: `node dist/check/observer-crash-child.js DIR GENERATION` with an IPC channel. Loaders set
 * `t[r<k>] src:v` (k < 200) to `g<G>-n<N>` in durable transactions and report each with
 * `{ t: 'ack', row, value }`; the observers copy `src:v` to `dst:v`, and `dst:v` to `fin:v` (a
 * chain: a copy's commit notifies the next observer), and the second copy also weakly notifies
 * `w<k> ping:v`, whose observer copies `r<k> fin:v` to `w<k> wk:v`. On this unshared store the
 * commits are one-phase, so the weak notification and every run's notification clearing are side
 * writes of the commits themselves: a crash must keep or lose each together with its commit.
 */
import type { Transaction } from '../txn/transaction.js';
import { Percolator } from '../txn/percolator.js';
import type { Worker } from '../notify/worker.js';

export const ROWS = 200;

/** The row `r<k>`'s weakly notified partner, `w<k>`. */
export const partnerOf = (row: string): string => `w${row.slice(1)}`;
/** The inverse of partnerOf: `w<k>` → `r<k>`. */
const sourceOf = (partner: string): string => `r${partner.slice(1)}`;

/** The copying observers (the parent registers the same ones to finish the work). */
export function registerCopiers(worker: Worker): Worker {
  const copy = (from: string, to: string) => async (tx: Transaction, row: Uint8Array) => {
    tx.set('t', row, to, (await tx.get('t', row, from)) ?? '');
  };
  const copyFin = copy('dst:v', 'fin:v');
  return worker
    .observe('src:v', 'copy-dst', copy('src:v', 'dst:v'))
    .observe('dst:v', 'copy-fin', async (tx, row) => {
      await copyFin(tx, row);
      tx.notify('t', partnerOf(Buffer.from(row).toString()), 'ping:v');
    })
    .observe('ping:v', 'copy-weak', async (tx, row) => {
      tx.set('t', row, 'wk:v', (await tx.get('t', sourceOf(Buffer.from(row).toString()), 'fin:v')) ?? '');
    });
}

async function main(): Promise<void> {
  const [dir, gen] = process.argv.slice(2);
  if (dir === undefined || gen === undefined) throw new Error('usage: observer-crash-child DIR GENERATION');
  // No mmap ballast: it only makes table reads cheaper over a long run, and building it cost each
  // generation ~1 s of CPU before its first write.
  const db = await Percolator.open({
    store: `file:${dir}`,
    leaseMs: 500,
    lockTtlMs: 1_000,
    storeOptions: { level: { mmapBallast: false } },
  });
  await db.createTable('t');
  await registerCopiers(db.worker({ threads: 8 })).start();
  let n = 0;
  const loop = async (): Promise<void> => {
    for (;;) {
      const row = `r${Math.floor(Math.random() * ROWS)}`;
      const value = `g${gen}-n${n++}`;
      await db.transaction(async (tx) => tx.set('t', row, 'src:v', value));
      process.send?.({ t: 'ack', row, value });
      // Let the observers keep up a little (their commits are what the crash must not lose).
      await new Promise((r) => setImmediate(r));
    }
  };
  await Promise.all(Array.from({ length: 4 }, loop));
}

if (process.argv[1]?.endsWith('observer-crash-child.js') === true) {
  main().catch((e: unknown) => {
    process.stderr.write(`observer-crash-child: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
