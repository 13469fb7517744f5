/**
 * `percolator scan TABLE [--prefix P] [--limit N] [--raw] [--store URL] [--json]`: prints the rows
 * of a table; with --prefix, those whose key starts with P — text (its UTF-8), or `0x` and hex for
 * any bytes, as `get` reads ROW (printable.ts), so a key printed in hex can be scanned from too.
 *
 * A Percolator table (one with the system families, as `get` checks) shows by default what a
 * reader sees: each row's committed user values at one snapshot, read through the transaction
 * layer (a live writer's lock is waited for, a dead one's resolved, as `get` does). `--raw` shows
 * what the store holds instead: every cell of every family — the system ones (lock, write, data,
 * notify) are all a Percolator table has — every version. A plain store table is shown raw either
 * way: it has no committed values apart from its cells.
 *
 * Text: the row key, then one indented line per column (`family:qualifier = value`) or, raw, per
 * cell (`family:qualifier @timestamp = value`); values longer than 120 UTF-16 units are cut, on a
 * code point boundary. --json: one object per row, `{"key","columns":{"family:qualifier":value}}`
 * or, raw, `{"key","cells":[{"family","qualifier","timestamp","value"}]}`.
 *
 * Every key, qualifier, column name and value prints in printable.ts's form: its text when that is
 * clean and does not start with `0x`, else `0x` and hex — so one is never taken for the other, a
 * name holding a newline cannot forge an output line, and `get` takes a printed key back as it is.
 *
 * Lines are written with backpressure (write-line.ts): a slow reader holds the scan up rather than
 * the whole table piling up in stdout's buffer; a reader that is gone ends the scan quietly.
 */
import type { Command } from 'commander';
import { prefixEnd } from '../../store/key-layout.js';
import { DEFAULT_STORE_URL, ONE_SHOT_STORE, openStore } from '../../store/open-store.js';
import type { Store } from '../../store/store.js';
import type { RowSet } from '../../store/types.js';
import { PERCOLATOR_TABLE_SPEC, isReservedColumn } from '../../txn/layout.js';
import { Percolator } from '../percolator-on-demand.js';
import { TxnError, isTxnError } from '../../txn/errors.js';
import { parsePositiveInteger } from '../parent-command.js';
import { bytesOfArgument, printable, printableCut } from '../printable.js';
import { tableToRead } from '../table-to-read.js';
import { writeLine } from '../write-line.js';

interface ScanOptions {
  prefix?: Uint8Array;
  limit?: number;
  raw?: boolean;
  store: string;
  json?: boolean;
}

/** Resolves false once nobody reads the output: the scan stops there. */
const out = (line: string): Promise<boolean> => writeLine(process.stdout, line);

/** Values in the text listing are cut: a row stays a few lines however large its cells. */
const VALUE_CHARS = 120;

/** A column name as printed: the UTF-8 of the name is its qualifier in the table (layout.ts). */
const printableColumn = (name: string): string => printable(Buffer.from(name, 'utf8'));

export function register(program: Command): void {
  program
    .command('scan')
    .argument('<table>', 'table name')
    .description("print a table's rows: a Percolator table's committed values (a snapshot), or with --raw every stored cell")
    .option('--prefix <p>', 'only rows whose key starts with this: text (UTF-8), or 0x and hex as scan prints a key', (raw: string) => {
      const prefix = bytesOfArgument('--prefix', raw);
      return prefix.length > 0 ? prefix : undefined; // '' or 0x: the whole table
    })
    .option('--limit <n>', 'at most this many rows', parsePositiveInteger('limit'))
    .option('--raw', "every stored cell, every version, a Percolator table's system columns included (always so for plain store tables)")
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--json', 'one JSON object per row')
    .action(async (table: string, opts: ScanOptions) => {
      const store = await openStore(opts.store, { ...ONE_SHOT_STORE, gcIntervalMs: 0 });
      try {
        const families = (await tableToRead(store, table)).families;
        const percolatorTable = Object.keys(PERCOLATOR_TABLE_SPEC.families).every((f) => Object.hasOwn(families, f));
        if (percolatorTable && opts.raw !== true) await scanCommitted(store, table, opts);
        else await scanRaw(store, table, opts);
      } finally {
        await store.close();
      }
    });
}

/** Committed user values at one snapshot (reserved columns — observers' acks — are the system's, left out). */
async function scanCommitted(store: Store, table: string, opts: ScanOptions): Promise<void> {
  const db = await Percolator.open({ store, gcIntervalMs: 0 }).catch((e: unknown) => {
    // No oracle to take a snapshot from (Google's emulator or Cloud Bigtable without ?oracle=):
    // the stored cells need none.
    if (isTxnError(e, 'INVALID_CONFIG'))
      throw new TxnError('INVALID_CONFIG', `${e.message}; or scan --raw, which reads the stored cells without an oracle`, e.details);
    throw e;
  });
  try {
    const snap = await db.snapshot();
    try {
      const range = opts.prefix !== undefined ? { prefix: opts.prefix } : {};
      for await (const row of snap.scan(table, range, opts.limit === undefined ? {} : { limit: opts.limit })) {
        const columns = [...row.columns].filter(([name]) => !isReservedColumn(name));
        if (opts.json) {
          const printed = Object.fromEntries(columns.map(([name, v]) => [printableColumn(name), printable(v)]));
          if (!(await out(JSON.stringify({ key: printable(row.row), columns: printed })))) return;
        } else {
          if (!(await out(printable(row.row)))) return;
          for (const [name, v] of columns) if (!(await out(`  ${printableColumn(name)} = ${printableCut(v, VALUE_CHARS)}`))) return;
        }
      }
    } finally {
      snap.release();
    }
  } finally {
    await db.close();
  }
}

async function scanRaw(store: Store, table: string, opts: ScanOptions): Promise<void> {
  let rows: RowSet | undefined;
  if (opts.prefix !== undefined) {
    const p = Buffer.from(opts.prefix);
    rows = { rowRanges: [{ startKeyClosed: p, endKeyOpen: prefixEnd(p) }] };
  }
  for await (const row of store.readRows(table, { rows, rowsLimit: opts.limit })) {
    if (opts.json) {
      const cells = row.cells.map((c) => ({
        family: c.family,
        qualifier: printable(c.qualifier),
        timestamp: c.timestamp,
        value: printable(c.value),
      }));
      if (!(await out(JSON.stringify({ key: printable(row.key), cells })))) return;
    } else {
      if (!(await out(printable(row.key)))) return;
      for (const c of row.cells) {
        if (!(await out(`  ${c.family}:${printable(c.qualifier)} @${c.timestamp} = ${printableCut(c.value, VALUE_CHARS)}`))) return;
      }
    }
  }
}
