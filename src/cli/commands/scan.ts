/** `percolator scan TABLE [--prefix P] [--limit N] [--store URL] [--json]`: prints rows of a table. */
import type { Command } from 'commander';
import { prefixEnd } from '../../store/key-layout.js';
import { DEFAULT_STORE_URL, ONE_SHOT_STORE, openStore } from '../../store/open-store.js';
import type { RowSet } from '../../store/types.js';
import { parsePositiveInteger } from '../parent-command.js';
import { printable } from '../printable.js';

export function register(program: Command): void {
  program
    .command('scan')
    .argument('<table>', 'table name')
    .description('print the rows of a table (every cell, every version)')
    .option('--prefix <p>', 'only rows whose key starts with this')
    .option('--limit <n>', 'at most this many rows', parsePositiveInteger('limit'))
    .option('--raw', 'show every column, system columns included (the default for store tables)')
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--json', 'one JSON object per row')
    .action(async (table: string, opts: { prefix?: string; limit?: number; store: string; json?: boolean }) => {
      const store = await openStore(opts.store, { ...ONE_SHOT_STORE, gcIntervalMs: 0 });
      try {
        let rows: RowSet | undefined;
        if (opts.prefix) {
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
            process.stdout.write(`${JSON.stringify({ key: printable(row.key), cells })}\n`);
          } else {
            process.stdout.write(`${printable(row.key)}\n`);
            for (const c of row.cells)
              process.stdout.write(`  ${c.family}:${printable(c.qualifier)} @${c.timestamp} = ${printable(c.value).slice(0, 120)}\n`);
          }
        }
      } finally {
        await store.close();
      }
    });
}
