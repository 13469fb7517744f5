/**
 * One-phase commit (TiKV's "1PC", here for a store only this process can reach): every buffered
 * row goes straight from "not written" to "committed at commitTs" in ONE atomic conditional write
 * across rows (`AtomicRowsStore.checkAndMutateRows`), instead of a prewrite and a commit per row.
 *
 * The veto of each row is exactly prewrite's condition — a lock at any timestamp or a write at or
 * after S on any of its cells — so write-write conflicts are decided as in two-phase commit, and
 * the write carries what the commit would leave behind: long values in `data` at S, write records
 * at commitTs (short values inline), notify cells of observed columns at commitTs.
 *
 * What the locks of two-phase commit do for readers is done by the caller's in-memory locks
 * (mem-locks.ts), taken before commitTs was obtained and released after this resolves. Nothing of
 * the transaction is ever stored half-done, so nothing needs rolling back or forward after a
 * crash: the store's atomic, durable write is the commit point.
 *
 * Side writes (weak notifications, notification clearing: notify cells, which no veto looks at)
 * go into the same atomic write: into the entry of a row the transaction writes, or as entries
 * that never veto. So they land if and only if the commit does — a weak notification is never
 * left behind by an aborted transaction, and the write costs no separate row rewrite.
 *
 * Returns: when every row is committed (durable, unless the caller deferred it: then visible, and
 *   durable with the store's next group commit).
 * Throws: KEY_LOCKED (another transaction's lock; `details.lock`/`lockTs` let the caller resolve
 *   it), WRITE_CONFLICT (a commit at or after S), TOO_MANY_MUTATIONS (a row's write, with the side
 *   writes merged into it, over the store's limit); nothing was written then. Store errors pass
 *   through (nothing was acknowledged; the transaction is not committed).
 * Idempotent: not needed — it writes all or nothing, and a caller retries with a new start ts.
 */
import type { AtomicRowsStore } from '../../store/store.js';
import { bytesKey, compareBytes } from '../../store/bytes.js';
import type { Cell, Mutation, RowVeto } from '../../store/types.js';
import { TxnError, describeRow } from '../errors.js';
import { DATA, LOCK, WRITE, valueRefFor } from '../layout.js';
import { committedCellMutations } from './commit.js';
import { conflictError } from './prewrite.js';
import type { BufferedCell, BufferedRow, SideWrite } from './types.js';

export function onePhaseMutations(row: BufferedRow, startTs: number, commitTs: number): Mutation[] {
  const only = row.cells.length === 1 ? (row.cells[0] as BufferedCell) : null;
  if (only !== null) {
    const ref = valueRefFor(only.kind, only.value);
    if (ref.mode !== 'data') return committedCellMutations(only.q, only.kind, ref, startTs, commitTs, only.notify);
  }
  const out: Mutation[] = [];
  for (const c of row.cells) {
    const ref = valueRefFor(c.kind, c.value);
    if (ref.mode === 'data' && c.value !== null) {
      out.push({ setCell: { familyName: DATA, columnQualifier: c.q, timestampMicros: startTs, value: c.value } });
    }
    committedCellMutations(c.q, c.kind, ref, startTs, commitTs, c.notify, out);
  }
  return out;
}

const VETO_FAMILIES = [LOCK, WRITE];

/**
 * Prewrite's condition (prewriteConflictFilter) as an in-process test: a lock, or a write at or
 * after S, on a cell the row writes. A class, not a closure: one object a row.
 */
class ConflictVeto implements RowVeto {
  readonly families = VETO_FAMILIES;

  constructor(
    private readonly cells: readonly BufferedCell[],
    private readonly startTs: number,
  ) {}

  test(cells: readonly Cell[]): boolean {
    // Indexed: in heap profiles this for-of allocated an iterator result a cell (its rows are arrays of several kinds).
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i] as Cell;
      if (c.family === WRITE ? c.timestamp < this.startTs : c.family !== LOCK) continue;
      for (const b of this.cells) if (compareBytes(b.q, c.qualifier) === 0) return true;
    }
    return false;
  }
}

export async function commitOnePhase(
  store: AtomicRowsStore,
  rows: readonly BufferedRow[],
  startTs: number,
  commitTs: number,
  durability: 'durable' | 'deferred' = 'durable',
  side: readonly SideWrite[] = [],
): Promise<void> {
  const entries: { table: string; key: Uint8Array; veto?: RowVeto; mutations: Mutation[] }[] = rows.map((r) => ({
    table: r.table,
    key: r.row,
    veto: new ConflictVeto(r.cells, startTs),
    mutations: onePhaseMutations(r, startTs, commitTs),
  }));
  if (side.length > 0) {
    // Vetoing entries first: checkAndMutateRows reports a veto by index into `rows`.
    const byRow = new Map(entries.map((e) => [`${e.table}\u0000${bytesKey(e.key)}`, e]));
    for (const s of side) {
      const k = `${s.table}\u0000${bytesKey(s.row)}`;
      let e = byRow.get(k);
      if (e === undefined) {
        byRow.set(k, (e = { table: s.table, key: s.row, mutations: [] }));
        entries.push(e);
      }
      for (const m of s.mutations) e.mutations.push(m);
    }
  }
  // The rows passed checkRowLimits; their side writes may still tip one over the store's limit.
  const limit = store.limits.maxMutationsPerRow;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i] as (typeof entries)[number];
    if (e.mutations.length <= limit) continue;
    const cells = i < rows.length ? (rows[i] as BufferedRow).cells.length : 0;
    throw new TxnError(
      'TOO_MANY_MUTATIONS',
      `row ${describeRow(e.table, e.key)}: its one-phase commit takes ${e.mutations.length} mutations in one row mutation, over the store's limit of ${limit}`,
      { table: e.table, row: e.key, cells, limit, onePhase: e.mutations.length },
    );
  }
  const vetoed = await store.checkAndMutateRows(entries, { durability });
  if (vetoed < 0) return;
  const row = rows[vetoed] as BufferedRow;
  // Nothing of ours is in the store, so "our own locks are in place" cannot be the answer.
  throw (
    (await conflictError(store, row, startTs)) ??
    new TxnError('KEY_LOCKED', `one-phase commit of ${row.table} row vetoed`, { table: row.table, row: row.row, startTs })
  );
}
