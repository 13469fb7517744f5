/**
 * What `percolator set` and `percolator delete` do: one transaction (`db.transaction`) that sets
 * or deletes one cell, so a write from the command line notifies the observers of its column as a
 * library write does, and reads back (`get`) as one.
 *
 * Invariants:
 * - Nothing is created before the arguments are known good: ROW and VALUE are read
 *   (printable.ts's form; `-` reads VALUE from stdin, whole, before the store is opened, so a slow
 *   producer does not hold the store's lock), then COLUMN and ROW are checked with the library's
 *   own checks and errors (INVALID_COLUMN, EMPTY_ROW_KEY), then the store is opened.
 * - The store must exist (NOT_A_STORE, nothing created), as for `get`, and the table too
 *   (TABLE_NOT_FOUND naming the tables there are: table-to-read.ts; `set`'s message adds that
 *   --create-table would create it, with the code and details unchanged) — unless `--create-table`,
 *   which creates the table as a Percolator table and, where there is no store at all, the store
 *   (in a missing or empty directory only, never among other files: level-engine.ts's
 *   `if-empty`). Whatever it creates it says on stderr, one line each: a mistyped --store then
 *   shows as a new store, not as a write that went nowhere.
 * - A table that is not a Percolator table is the commit's NOT_A_PERCOLATOR_TABLE, before
 *   anything is written.
 * - Printed only once committed: the commit timestamp, or with --json
 *   `{"table","row","column","value","commitTs"}` (row and value in printable form; value null
 *   for a delete, as `get --json` then prints it).
 */
import { isStoreError, StoreError } from '../store/errors.js';
import { ONE_SHOT_STORE, type OpenStoreOptions } from '../store/open-store.js';
import { emptyRowKey } from '../store/validate.js';
import { encodeUserColumn } from '../txn/layout.js';
import type { Transaction } from '../txn/transaction.js';
import { Percolator } from './percolator-on-demand.js';
import { bytesOfArgument, printable } from './printable.js';
import { tableToRead } from './table-to-read.js';

export interface WriteCellOptions {
  readonly store: string;
  readonly json?: boolean;
  readonly createTable?: boolean;
}

/** VALUE as `set` reads it: `-` is stdin's bytes, anything else as `get` reads ROW. */
export async function valueOfArgument(raw: string): Promise<Uint8Array> {
  if (raw !== '-') return bytesOfArgument('VALUE', raw);
  const chunks: Buffer[] = [];
  // Buffers, not strings: no encoding is set on stdin, so binary input arrives byte for byte.
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Sets (value) or deletes (null) the cell; prints the commit. */
export async function writeCell(
  command: 'set' | 'delete',
  table: string,
  rowArg: string,
  column: string,
  value: Uint8Array | null,
  opts: WriteCellOptions,
): Promise<void> {
  const row = bytesOfArgument('ROW', rowArg);
  // The library's checks, which tx.set makes too, made here before anything can be created.
  encodeUserColumn(column);
  if (row.byteLength === 0) throw emptyRowKey(table);
  const db = await openDb(command, opts);
  try {
    try {
      await tableToRead(db.store, table);
    } catch (e) {
      if (!isStoreError(e, 'TABLE_NOT_FOUND')) throw e;
      if (opts.createTable !== true) throw command === 'set' ? withHint(e, 'set --create-table creates it') : e;
      await db.createTable(table);
      process.stderr.write(`percolator ${command}: created table ${table}\n`);
    }
    let committed: Transaction | undefined;
    await db.transaction(async (tx) => {
      if (value === null) tx.delete(table, row, column);
      else tx.set(table, row, column, value);
      committed = tx;
    });
    const commitTs = committed?.commitTs ?? null;
    if (opts.json) {
      const printed = value === null ? null : printable(value);
      process.stdout.write(`${JSON.stringify({ table, row: printable(row), column, value: printed, commitTs })}\n`);
    } else process.stdout.write(`${commitTs}\n`);
  } finally {
    await db.close();
  }
}

/**
 * The store as `get` opens it (it must exist); with --create-table, one made where there is none.
 * Opened first without creating, so that the store is created only where there was none — not
 * beside one that fails to open for another reason — and the line saying so is true.
 */
async function openDb(command: string, opts: WriteCellOptions): Promise<Percolator> {
  try {
    return await Percolator.open({ store: opts.store, storeOptions: ONE_SHOT_STORE });
  } catch (e) {
    if (!(isStoreError(e, 'NOT_A_STORE') && e.details.absent === true)) throw e;
    if (opts.createTable !== true) throw command === 'set' ? withHint(e, 'set --create-table creates the store and the table') : e;
    const creating: OpenStoreOptions = { ...ONE_SHOT_STORE, level: { ...ONE_SHOT_STORE.level, create: 'if-empty' } };
    const db = await Percolator.open({ store: opts.store, storeOptions: creating });
    process.stderr.write(`percolator ${command}: created a store at ${String(e.details.dir)}\n`);
    return db;
  }
}

/** The error with what to do appended: same code and details, so scripts match it as before. */
function withHint(e: StoreError, hint: string): StoreError {
  return new StoreError(e.code, `${e.message}; ${hint}`, { ...e.details }, { cause: e });
}
