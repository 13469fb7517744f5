/**
 * `percolator delete TABLE ROW COLUMN [--store URL] [--json]`: deletes one cell in one
 * transaction (`tx.delete`), so the observers of COLUMN are notified as by a library delete
 * (write-cell.ts). ROW is read as `get` reads it. A cell that holds nothing is deleted all the
 * same — a delete record commits and observers run — as the library's delete does.
 *
 * Prints the commit timestamp (--json: `{"table","row","column","value":null,"commitTs"}`). The
 * store and the table must exist (NOT_A_STORE, TABLE_NOT_FOUND): there is nothing to create for a
 * deletion. Exit status: 0 committed, 1 an error (one line on stderr).
 */
import type { Command } from 'commander';
import { DEFAULT_STORE_URL } from '../../store/open-store.js';
import { writeCell } from '../write-cell.js';

export function register(program: Command): void {
  program
    .command('delete')
    .argument('<table>', 'a Percolator table')
    .argument('<row>', 'row key: text (UTF-8), or 0x and hex as scan prints it')
    .argument('<column>', 'family:qualifier')
    .description("delete one cell in a transaction (notifies the column's observers); print the commit timestamp")
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--json', 'print {"table","row","column","value":null,"commitTs"}')
    .addHelpText('after', '\nExit status: 0 committed (the commit timestamp printed), 1 an error (one line on stderr).')
    .action(async (table: string, row: string, column: string, opts: { store: string; json?: boolean }) => {
      await writeCell('delete', table, row, column, null, opts);
    });
}
