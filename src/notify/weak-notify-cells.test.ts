/**
 * Weak notify cells collapse: a column's weak notifications replace one another under its weak
 * qualifier (layout.ts `weakNotifyQualifier`), beside its strong notify cells, which they never
 * erase; clearing takes both; cells written the old way (`w` under the column's own qualifier)
 * still read as weak and clear.
 */
import { describe, expect, it } from 'vitest';
import { Percolator } from '../txn/percolator.js';
import { NOTIFY, clearNotifications, encodeColumn, weakNotifyQualifier } from '../txn/layout.js';
import { notificationsOf } from './scanner.js';

const ROW = Buffer.from('r');
const FILTER = { familyNameRegexFilter: NOTIFY } as const;

/** Runs `fn` on a fresh memory store with a Percolator table `t`. */
async function withTable(fn: (db: Percolator) => Promise<void>): Promise<void> {
  const db = await Percolator.open({ store: 'memory:' });
  try {
    await db.createTable('t');
    await fn(db);
  } finally {
    await db.close();
  }
}

async function notifyCells(db: Percolator) {
  return (await db.store.readRow('t', ROW, FILTER))?.cells ?? [];
}

describe('weak notify cells', () => {
  it('collapse into one per column, beside a pending strong one, and clear with it', () =>
    withTable(async (db) => {
      // A pending strong notification of c:v at 1000 (what a committed write of an observed column leaves).
      await db.store.mutateRow('t', ROW, [
        { setCell: { familyName: NOTIFY, columnQualifier: encodeColumn('c:v'), timestampMicros: 1000, value: Buffer.from('s') } },
      ]);
      for (let i = 0; i < 20; i++) {
        const tx = await db.begin();
        try {
          tx.notify('t', ROW, 'c:v');
          tx.notify('t', ROW, 'c:other');
          await tx.commit();
        } finally {
          tx.release();
        }
      }
      const cells = await notifyCells(db);
      const newest = Math.max(...cells.map((c) => c.timestamp));
      // One weak cell per column (the newest), and the strong one untouched.
      expect(cells.map((c) => [Buffer.from(c.qualifier).toString('latin1'), c.timestamp])).toEqual([
        [Buffer.from(weakNotifyQualifier('c:other')).toString('latin1'), newest],
        [Buffer.from(weakNotifyQualifier('c:v')).toString('latin1'), newest],
        ['c:v', 1000],
      ]);
      expect(newest).toBeGreaterThan(1000);
      expect(notificationsOf(cells)).toEqual([
        { column: 'c:other', maxTs: newest, weak: true, strong: false },
        { column: 'c:v', maxTs: newest, weak: true, strong: true },
      ]);
      // Clearing below the weak cell takes the strong one only; up to it, everything of the column.
      await db.store.mutateRow('t', ROW, clearNotifications('c:v', 1000));
      expect(notificationsOf(await notifyCells(db))).toEqual([
        { column: 'c:other', maxTs: newest, weak: true, strong: false },
        { column: 'c:v', maxTs: newest, weak: true, strong: false },
      ]);
      await db.store.mutateRow('t', ROW, clearNotifications('c:v', newest));
      expect(notificationsOf(await notifyCells(db)).map((n) => n.column)).toEqual(['c:other']);
      expect(await db.pendingNotifications()).toBe(0); // nothing observes these columns
    }));

  it('read and clear weak cells written under the column’s own qualifier (earlier builds)', () =>
    withTable(async (db) => {
      await db.store.mutateRow('t', ROW, [
        { setCell: { familyName: NOTIFY, columnQualifier: encodeColumn('c:v'), timestampMicros: 500, value: Buffer.from('w') } },
        { setCell: { familyName: NOTIFY, columnQualifier: encodeColumn('c:v'), timestampMicros: 700, value: Buffer.from('w') } },
      ]);
      expect(notificationsOf(await notifyCells(db))).toEqual([{ column: 'c:v', maxTs: 700, weak: true, strong: false }]);
      await db.store.mutateRow('t', ROW, clearNotifications('c:v', 700));
      expect(await notifyCells(db)).toEqual([]);
    }));
});
