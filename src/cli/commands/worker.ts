/**
 * `percolator worker --observers FILE [--store URL] [--threads N]`: loads a user module that
 * registers observers and runs them until SIGTERM/SIGINT, then stops gracefully (running observer
 * transactions finish; queued work stays notified for the next worker).
 *
 * The module exports (default or named `register`) a function `(worker, db) => void | Promise<void>`
 * that calls `worker.observe(column, name, fn)`; it may also create tables through `db`.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import type { Worker } from '../../notify/worker.js';
import { DEFAULT_STORE_URL } from '../../store/open-store.js';
import { Percolator } from '../../txn/percolator.js';
import { parsePositiveNumber } from '../parent-command.js';

export type RegisterObservers = (worker: Worker, db: Percolator) => void | Promise<void>;

export async function loadObservers(file: string): Promise<RegisterObservers> {
  const mod = (await import(pathToFileURL(resolve(file)).href)) as { default?: unknown; register?: unknown };
  const fn = typeof mod.register === 'function' ? mod.register : mod.default;
  if (typeof fn !== 'function') {
    throw Object.assign(new Error(`${file} must export a function (default or named "register") that registers observers`), {
      code: 'INVALID_OBSERVERS_MODULE',
    });
  }
  return fn as RegisterObservers;
}

export function register(program: Command): void {
  program
    .command('worker')
    .description('run the observers of a module until SIGTERM')
    .requiredOption('--observers <file>', 'module exporting (worker, db) => { worker.observe(...) }')
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--threads <n>', 'concurrent observer runs', parsePositiveNumber('threads'), 4)
    .action(async (opts: { observers: string; store: string; threads: number }) => {
      const registerObservers = await loadObservers(opts.observers);
      const db = await Percolator.open({ store: opts.store });
      const worker = db.worker({ threads: opts.threads });
      await registerObservers(worker, db);
      await worker.start();
      process.stderr.write(`percolator worker: running observers of ${opts.observers} on ${opts.store} with ${opts.threads} threads\n`);
      await new Promise<void>((done) => {
        const stop = () => done();
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
      await worker.stop();
      await db.close();
      const m = worker.metrics;
      process.stderr.write(
        `percolator worker: stopped after ${m.commits} observer commits (${m.skipped} skipped, ${m.failures} failures, ${m.parked} parked, ${m.restarts} loops restarted)\n`,
      );
    });
}
