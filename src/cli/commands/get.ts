/**
 * `percolator get TABLE ROW COLUMN [--store URL] [--json]`: the latest committed value of one
 * cell, read through Percolator (`db.get`: a read-only transaction), so a cell whose writer died
 * between its commit point and its secondaries reads as committed.
 *
 * ROW is text (its UTF-8), or `0x` and hex for any bytes: the form `scan` prints a key in, so a
 * binary key it printed can be read back (printable.ts; text that starts with `0x` is given in hex
 * too). The value prints in that form as well.
 *
 * Exit status: 0 a value was printed; 1 the cell is absent (nothing on stdout; --json prints value
 * null); 2 anything else — a bad argument, no such table or store, a store that cannot be read —
 * with one line on stderr. Scripts relied on 1 for "absent" before errors got a code of their own.
 */
import type { Command } from 'commander';
import { DEFAULT_STORE_URL, ONE_SHOT_STORE } from '../../store/open-store.js';
import { setFailureStatus } from '../exit-status.js';
import { Percolator } from '../percolator-on-demand.js';
import { bytesOfArgument, printable } from '../printable.js';
import { tableToRead } from '../table-to-read.js';

export function register(program: Command): void {
  program
    .command('get')
    .argument('<table>', 'a Percolator table')
    .argument('<row>', 'row key: text (UTF-8), or 0x and hex as scan prints it')
    .argument('<column>', 'family:qualifier')
    .description('print the latest committed value of one cell (a read-only transaction)')
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--json', 'print {"table","row","column","value"} (value null when absent)')
    .addHelpText(
      'after',
      '\nExit status: 0 the value was printed, 1 the cell is absent (nothing printed; --json: value null), 2 an error (one line on stderr).',
    )
    // Errors commander finds itself (a missing argument, an unknown option) exit 2 as well.
    .exitOverride((e) => process.exit(e.exitCode === 0 ? 0 : 2))
    .hook('preAction', () => setFailureStatus(2))
    .action(async (table: string, rowArg: string, column: string, opts: { store: string; json?: boolean }) => {
      const row = bytesOfArgument('ROW', rowArg);
      const db = await Percolator.open({ store: opts.store, storeOptions: ONE_SHOT_STORE });
      try {
        // A missing table is TABLE_NOT_FOUND listing those there are; one without the system
        // families (a raw Bigtable table, the oracle's) is db.get's NOT_A_PERCOLATOR_TABLE.
        await tableToRead(db.store, table);
        const v = await db.get(table, row, column);
        if (opts.json)
          process.stdout.write(`${JSON.stringify({ table, row: printable(row), column, value: v === null ? null : printable(v) })}\n`);
        else if (v !== null) process.stdout.write(`${printable(v)}\n`);
        if (v === null) process.exitCode = 1;
      } finally {
        await db.close();
      }
    });
}
