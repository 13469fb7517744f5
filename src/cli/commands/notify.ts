/**
 * `percolator notify TABLE COLUMN [--row ROW | --prefix P] [--store URL] [--json]`: a weak
 * notification (`tx.notify`) of COLUMN for every row of TABLE that holds a committed value of it
 * at one snapshot — or only ROW (if it holds one), or the rows under P (both read as `get` reads ROW: text, or `0x`
 * and hex) — so that COLUMN's observers process data written before they were registered, which
 * carries no notification and which no worker would ever look at (docs/observers.md › *The
 * observed-columns registry*).
 *
 * Invariants:
 * - Nothing is opened before the arguments are known good (INVALID_COLUMN, EMPTY_ROW_KEY, a bad
 *   0x form, --row with --prefix); the store and the table must exist (NOT_A_STORE creating
 *   nothing, TABLE_NOT_FOUND naming the tables there are) and be a Percolator table
 *   (NOT_A_PERCOLATOR_TABLE), as for `get`.
 * - Nothing is written unless the registry names an observer of COLUMN for TABLE (NOT_OBSERVED,
 *   with the table's observed columns): no worker runs one, and `wait`, which counts observed
 *   columns' notifications only, would say quiescent at once with nothing processed — the very
 *   surprise this command is for, and what a mistyped COLUMN would give. (The library's
 *   `tx.notify` does not check: a program may notify before it starts its workers.)
 * - The rows are streamed from one snapshot and notified in transactions of at most BATCH_ROWS
 *   rows as the scan goes: memory holds a batch, not the table. Each committed batch stays
 *   committed if a later one fails; running the command again is safe, as observers of weakly
 *   notified columns must be idempotent anyway and a row's weak notifications collapse into one.
 * - Printed once every batch committed: the number of rows notified (--json: `{"table","column","rows"}`);
 *   when none was, why: the row, or every row chosen, holds no committed value of COLUMN.
 */
import type { Command } from 'commander';
import { DEFAULT_STORE_URL, ONE_SHOT_STORE } from '../../store/open-store.js';
import { emptyRowKey } from '../../store/validate.js';
import { encodeUserColumn } from '../../txn/layout.js';
import { missingFamilies, notAPercolatorTable } from '../../txn/table-check.js';
import { Percolator } from '../percolator-on-demand.js';
import { bytesOfArgument, printable } from '../printable.js';
import { tableToRead } from '../table-to-read.js';
import { UsageError } from '../usage-error.js';

/** Rows per transaction: a commit of bounded size (the docs' example takes 100 too). */
const BATCH_ROWS = 100;

interface NotifyOptions {
  row?: Uint8Array;
  prefix?: Uint8Array;
  store: string;
  json?: boolean;
}

/** COLUMN has no registered observer for TABLE: no worker would process its notifications. */
export class NotObservedError extends Error {
  readonly code = 'NOT_OBSERVED';

  constructor(
    message: string,
    readonly details: { readonly table: string; readonly column: string; readonly observed: readonly string[] },
  ) {
    super(message);
    this.name = 'NotObservedError';
  }
}

export function register(program: Command): void {
  program
    .command('notify')
    .argument('<table>', 'a Percolator table')
    .argument('<column>', 'family:qualifier, a column with an observer')
    .description(
      "notify a column's observers (weakly) of the rows holding a value of it, to process data written before them; print the count",
    )
    .option('--row <row>', 'only this row: text (UTF-8), or 0x and hex as scan prints a key', (raw: string) =>
      bytesOfArgument('--row', raw),
    )
    .option('--prefix <p>', 'only rows whose key starts with this: text (UTF-8), or 0x and hex as scan prints a key', (raw: string) => {
      const prefix = bytesOfArgument('--prefix', raw);
      return prefix.length > 0 ? prefix : undefined; // '' or 0x: the whole table, as for scan
    })
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--json', 'print {"table","column","rows"}')
    .addHelpText(
      'after',
      `\nRows are notified ${BATCH_ROWS} to a transaction. A column no worker has registered an observer of is NOT_OBSERVED: start a worker with it first.\nExit status: 0 every row notified (their number printed), 1 an error (one line on stderr).`,
    )
    .action(async (table: string, column: string, opts: NotifyOptions) => {
      // The library's checks, which tx.notify makes too, made before the store is opened.
      encodeUserColumn(column);
      if (opts.row !== undefined && opts.prefix !== undefined) throw new UsageError('give --row or --prefix, not both');
      if (opts.row?.byteLength === 0) throw emptyRowKey(table);
      // No background GC: the processes that stay up collect; this one holds a snapshot throughout.
      const db = await Percolator.open({ store: opts.store, storeOptions: ONE_SHOT_STORE, gcIntervalMs: 0 });
      try {
        const missing = missingFamilies(await tableToRead(db.store, table));
        if (missing.length > 0) throw notAPercolatorTable(table, missing);
        const { ObservedColumns } = await import('../../notify/observed-columns.js');
        const observed = await new ObservedColumns(db.store).columnsOf(table);
        if (!observed.includes(column)) throw notObserved(table, column, observed);
        const rows = await notifyRows(db, table, column, opts);
        if (opts.json) process.stdout.write(`${JSON.stringify({ table, column, rows })}\n`);
        else process.stdout.write(`notified ${rows} row${rows === 1 ? '' : 's'}${rows === 0 ? noneWhy(table, column, opts) : ''}\n`);
      } finally {
        await db.close();
      }
    });
}

function notObserved(table: string, column: string, observed: readonly string[]): NotObservedError {
  const listing = observed.length === 0 ? 'no column of it has one' : `its observed columns: ${observed.join(', ')}`;
  return new NotObservedError(
    `no observer of ${column} is registered for table ${table} (${listing}): no worker would process the notifications, and wait would not count them; start a worker running one (percolator worker --observers FILE; its start registers it), then notify`,
    { table, column, observed: [...observed] },
  );
}

/** Why nothing was notified: the rows were there to choose from, but none held a value of COLUMN. */
function noneWhy(table: string, column: string, opts: NotifyOptions): string {
  if (opts.row !== undefined) return `: row ${printable(opts.row)} of ${table} holds no committed value of ${column}`;
  const under = opts.prefix === undefined ? '' : ` under ${printable(opts.prefix)}`;
  return `: no row of ${table}${under} holds a committed value of ${column}`;
}

/** Notifies the selected rows holding a value of `column` at one snapshot; returns how many. */
async function notifyRows(db: Percolator, table: string, column: string, opts: NotifyOptions): Promise<number> {
  // One row: the keys from ROW up to ROW followed by a zero byte, the first key after it.
  const range =
    opts.row !== undefined
      ? { start: opts.row, end: Buffer.concat([opts.row, Buffer.alloc(1)]) }
      : opts.prefix !== undefined
        ? { prefix: opts.prefix }
        : {};
  let notified = 0;
  let batch: Uint8Array[] = [];
  const commit = async (): Promise<void> => {
    const rows = batch;
    await db.transaction(async (tx) => {
      for (const row of rows) tx.notify(table, row, column);
    });
    notified += rows.length;
    batch = [];
  };
  const snap = await db.snapshot();
  try {
    for await (const r of snap.scan(table, range, { columns: [column] })) {
      batch.push(r.row);
      if (batch.length === BATCH_ROWS) await commit();
    }
    if (batch.length > 0) await commit();
  } finally {
    snap.release();
  }
  return notified;
}
