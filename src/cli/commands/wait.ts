/** `percolator wait [--store URL] [--timeout S]`: returns when the system is quiescent. */
import type { Command } from 'commander';
import { DEFAULT_STORE_URL, ONE_SHOT_STORE } from '../../store/open-store.js';
import { Percolator } from '../../txn/percolator.js';
import { parsePositiveNumber } from '../parent-command.js';

export function register(program: Command): void {
  program
    .command('wait')
    .description('wait until no notification is pending and no timestamp was issued during a full pass')
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--timeout <s>', 'give up after this many seconds', parsePositiveNumber('timeout'), 60)
    .action(async (opts: { store: string; timeout: number }) => {
      const db = await Percolator.open({ store: opts.store, storeOptions: ONE_SHOT_STORE });
      try {
        await db.waitForQuiescence({ timeoutMs: opts.timeout * 1000 });
        process.stdout.write('quiescent\n');
      } finally {
        await db.close();
      }
    });
}
