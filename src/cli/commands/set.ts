/**
 * `percolator set TABLE ROW COLUMN VALUE [--store URL] [--json] [--create-table]`: sets one cell
 * in one transaction, so the observers of COLUMN are notified as by a library write
 * (write-cell.ts). ROW and VALUE are read as `get` reads ROW — text (its UTF-8), or `0x` and hex
 * for any bytes — and VALUE `-` is stdin's bytes, whole (the text "-" itself is `0x2d`).
 *
 * Prints the commit timestamp (--json: `{"table","row","column","value","commitTs"}`). The store
 * and the table must exist (NOT_A_STORE, TABLE_NOT_FOUND) unless --create-table, which creates the
 * table as a Percolator table, and the store where there is none. Exit status: 0 committed, 1 an
 * error (one line on stderr), as every command but `get`.
 */
import type { Command } from 'commander';
import { DEFAULT_STORE_URL } from '../../store/open-store.js';
import { valueOfArgument, writeCell } from '../write-cell.js';

export function register(program: Command): void {
  program
    .command('set')
    .argument('<table>', 'a Percolator table')
    .argument('<row>', 'row key: text (UTF-8), or 0x and hex as scan prints it')
    .argument('<column>', 'family:qualifier')
    .argument('<value>', 'text (UTF-8), 0x and hex, or - to read the bytes from stdin')
    .description("set one cell in a transaction (notifies the column's observers); print the commit timestamp")
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--json', 'print {"table","row","column","value","commitTs"}')
    .option('--create-table', 'create the table (a Percolator table) if missing, and the store if there is none')
    .addHelpText('after', '\nExit status: 0 committed (the commit timestamp printed), 1 an error (one line on stderr).')
    .action(
      async (
        table: string,
        row: string,
        column: string,
        valueArg: string,
        opts: { store: string; json?: boolean; createTable?: boolean },
      ) => {
        await writeCell('set', table, row, column, await valueOfArgument(valueArg), opts);
      },
    );
}
