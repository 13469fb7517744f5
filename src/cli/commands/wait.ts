/**
 * `percolator wait [--store URL] [--timeout S] [--tables T1,T2]`: returns when the system (or the
 * named Percolator tables) is quiescent.
 *
 * A name in --tables the store does not have is TABLE_NOT_FOUND listing the tables it has, as for
 * `get` and `scan` (table-to-read.ts); one the store has that is not a Percolator table stays the
 * library's NOT_A_PERCOLATOR_TABLE.
 */
import type { Command } from 'commander';
import { DEFAULT_STORE_URL, ONE_SHOT_STORE } from '../../store/open-store.js';
import { TxnError, isTxnError } from '../../txn/errors.js';
import { Percolator } from '../percolator-on-demand.js';
import { parseTimerSeconds } from '../parent-command.js';
import { tableToRead } from '../table-to-read.js';
import { UsageError } from '../usage-error.js';

export function register(program: Command): void {
  program
    .command('wait')
    .description('wait until no notification is pending and no timestamp was issued during two full passes in a row')
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--timeout <s>', 'give up after this many seconds', parseTimerSeconds('timeout'), 60)
    .option('--tables <names>', "wait for these Percolator tables' notifications only (comma-separated; default: every table)", tableList)
    .action(async (opts: { store: string; timeout: number; tables?: string[] }) => {
      const db = await Percolator.open({ store: opts.store, storeOptions: ONE_SHOT_STORE });
      try {
        // A missing table is TABLE_NOT_FOUND listing those there are (the library's names none).
        for (const table of opts.tables ?? []) await tableToRead(db.store, table);
        await db
          .waitForQuiescence({ timeoutMs: opts.timeout * 1000, ...(opts.tables === undefined ? {} : { tables: opts.tables }) })
          .catch((e: unknown) => {
            if (!isTxnError(e, 'QUIESCENCE_TIMEOUT') || e.details.pending === null) throw e;
            // What is pending is in the library's message; what a user at a prompt does next is ours.
            throw new TxnError(
              'QUIESCENCE_TIMEOUT',
              `${e.message}. ${timeoutAdvice(e.details, opts.timeout)}`,
              { ...e.details },
              { cause: e },
            );
          });
        process.stdout.write('quiescent\n');
      } finally {
        await db.close();
      }
    });
}

/**
 * What to do after a QUIESCENCE_TIMEOUT, from whether the backlog shrank while the wait went on
 * (the library's `pendingAtStart` beside `pending`; its message gives both counts). A backlog
 * that did not shrink may still have been worked on (new writes arriving as fast): the advice
 * names both ways, most likely first.
 */
export function timeoutAdvice(details: Readonly<Record<string, unknown>>, timeoutS: number): string {
  const { pending, pendingAtStart } = details;
  const longer = `wait again, or longer (--timeout S, ${timeoutS} s now)`;
  const startWorker = 'start one (percolator worker --observers FILE --store URL)';
  if (typeof pending !== 'number' || typeof pendingAtStart !== 'number')
    return `A worker may still be working through them: ${longer}; if none runs for these columns, ${startWorker}`;
  if (pending < pendingAtStart) return `The backlog shrank while the wait went on: a worker is working through it; ${longer}`;
  return `The backlog did not shrink while the wait went on: if no worker runs for these columns, ${startWorker}; if one does, ${longer}`;
}

/** `a,b` → ['a', 'b']; an empty name is a usage error (a table named '' cannot exist). */
function tableList(value: string): string[] {
  const names = value.split(',').map((n) => n.trim());
  if (names.some((n) => n === '')) throw new UsageError(`--tables needs comma-separated table names, not ${JSON.stringify(value)}`);
  return names;
}
