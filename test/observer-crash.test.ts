/**
 * Observer work survives `kill -9` of the process that owns the store. Observer commits resolve
 * before they are durable and notification clearings are deferred writes; the store's log is
 * sequential, so a crash keeps a prefix of it, and an observer commit lost in a crash must take
 * the clearing of its notification with it. After the crashes, a worker run to quiescence must
 * bring every derived cell in line with its source: `dst:v` = `fin:v` = `src:v` on every row (and
 * `wk:v` of its weakly notified partner row = `fin:v`), and
 * every acknowledged source write is there (or a later one of the same row).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ROWS, partnerOf, registerCopiers } from '../src/check/observer-crash-child.js';
import { Percolator } from '../src/txn/percolator.js';
import { runUntilKilled } from './support/crash-child.js';

const dir = mkdtempSync(join(tmpdir(), 'percolator-observer-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs one child generation until it has acknowledged `acks` writes, then kills it. */
async function crashRun(generation: number, acks: number, acked: Map<string, string[]>): Promise<void> {
  const script = join(import.meta.dirname, '../dist/check/observer-crash-child.js');
  const target = acks + Math.floor(Math.random() * acks);
  await runUntilKilled<{ t: string; row: string; value: string }>(script, [dir, String(generation)], target, (m) => {
    const list = acked.get(m.row) ?? [];
    list.push(m.value);
    acked.set(m.row, list);
  });
}

it('after kill -9 of the store owner, observers finish every change: derived cells equal their source', async () => {
  const acked = new Map<string, string[]>(); // per row, acknowledged values in order
  for (let g = 0; g < 6; g++) await crashRun(g, 400, acked);
  // No mmap ballast (~1 s to build): this process reads the store once.
  const db = await Percolator.open({ store: `file:${dir}`, lockWaitMs: 20_000, storeOptions: { level: { mmapBallast: false } } });
  try {
    const worker = registerCopiers(db.worker({ threads: 4 }));
    await worker.start();
    await db.waitForQuiescence({ timeoutMs: 60_000 });
    await worker.stop();
    const snap = await db.snapshot();
    let rowsWithSource = 0;
    for (let k = 0; k < ROWS; k++) {
      const row = `r${k}`;
      const [src, dst, fin] = (
        await snap.getMany(
          't',
          ['src:v', 'dst:v', 'fin:v'].map((column) => ({ row, column })),
        )
      ).map((v) => (v === null ? null : Buffer.from(v).toString()));
      expect([dst, fin], `row ${row}`).toEqual([src, src]);
      // The weakly notified partner row followed too (its notification came with fin's commit).
      const wk = await snap.get('t', partnerOf(row), 'wk:v');
      expect(wk === null ? null : Buffer.from(wk).toString(), `row ${partnerOf(row)}`).toBe(fin);
      const values = acked.get(row);
      if (values === undefined) continue;
      rowsWithSource++;
      // The newest acknowledged value of the row, or one written after it (unacknowledged).
      const last = values[values.length - 1] as string;
      const order = (v: string) => {
        const [g, n] = v.slice(1).split('-n').map(Number) as [number, number];
        return g * 1e9 + n;
      };
      expect(src, `row ${row}`).not.toBeNull();
      expect(order(src as string), `row ${row}: ${src} is older than the acknowledged ${last}`).toBeGreaterThanOrEqual(order(last));
    }
    expect(rowsWithSource).toBeGreaterThan(ROWS / 2);
    snap.release();
  } finally {
    await db.close();
  }
}, 120_000);
