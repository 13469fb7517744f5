/**
 * `percolator verify [--store file:DIR] [--json]`: reads every table file of an embedded store
 * whole and checks every block's checksum, with the MANIFEST and the logs — what an open did
 * before opens became incremental (docs/durability.md › *Incremental verification*): an open now
 * reads only tables it has no record of and a rotating share of the rest, so damage at rest to a
 * known table waits for its turn. This is the scrub a user runs when they want to know now (after
 * a disk error, before a backup, on a schedule).
 *
 * Invariants: only a `file:` store (INVALID_ARGUMENT otherwise: the other backends keep no files
 * here); never creates one (NOT_A_STORE); a store another process holds is STORE_LOCKED (its files
 * change under a reader); damage is DATA_CORRUPTED naming the files, exit 1, as every open reports
 * it. A store that passes has every table recorded as known good as of now.
 * Printed: `verified DIR: N tables (B bytes), every block's checksum right (S s)`, or with --json
 * `{"store","tables","tableBytes","seconds"}`.
 */
import type { Command } from 'commander';
import { DEFAULT_STORE_URL, fileStoreDir } from '../../store/open-store.js';
import { UsageError } from '../usage-error.js';

export function register(program: Command): void {
  program
    .command('verify')
    .description("read every table file of a file: store whole and check every block's checksum (opens check only new tables)")
    .option('--store <url>', 'a file: store URL', DEFAULT_STORE_URL)
    .option('--json', 'print {"store","tables","tableBytes","seconds"}')
    .addHelpText('after', '\nExit status: 0 every checksum right, 1 damage found (DATA_CORRUPTED, naming the files) or another error.')
    .action(async (opts: { store: string; json?: boolean }) => {
      const dir = fileStoreDir(opts.store);
      if (dir === null) throw new UsageError(`verify reads the files of a file: store (got ${opts.store})`);
      const { openLevelEngine } = await import('../../store/embedded/level-engine.js');
      const started = performance.now();
      const engine = await openLevelEngine(dir, { verify: 'full', create: false, mmapBallast: false });
      const { tablesVerified: tables, tableBytesVerified: tableBytes } = engine.stats();
      await engine.close();
      const seconds = Math.round(performance.now() - started) / 1000;
      if (opts.json) process.stdout.write(`${JSON.stringify({ store: opts.store, tables, tableBytes, seconds })}\n`);
      else
        process.stdout.write(
          `verified ${dir}: ${tables} table${tables === 1 ? '' : 's'} (${tableBytes} bytes), every block's checksum right (${seconds} s)\n`,
        );
    });
}
