/**
 * `percolator load [--corpus local|synthetic] [--docs N] [--seed S] [--crawl N] [--loaders N]
 * [--store URL] [--json]`: the web index's crawler side, as its own process — writes a corpus's
 * documents into the `pages` table of the store at URL (one loader transaction a document,
 * `--loaders` at once), for workers running the web index's observers (`percolator worker --app
 * webindex`) to parse, cluster, invert and export. With `percolator serve` that is the paper's
 * deployment: a store server, any number of workers, any number of loaders, and `percolator wait`
 * and `search --store`. `--crawl N` loads the synthetic corpus as its N-th crawl finds it.
 *
 * Invariants:
 * - Nothing is written unless a worker has registered the web index's observers on this store
 *   (NOT_OBSERVED otherwise, as `notify` refuses): a document written before carries no
 *   notification and would never be indexed (docs/observers.md › *The observed-columns
 *   registry*). The store must exist (NOT_A_STORE, creating nothing).
 * - The clustering keys are a worker's policy (`--key-mode`), chosen for a corpus (`content` for
 *   the local documentation, whose files share titles; the paper's three keys for the synthetic
 *   corpus) and pinned in the store by the first worker (pin-key-mode.ts): a corpus that needs
 *   other keys than those pinned is KEY_MODE_MISMATCH, nothing written.
 * - Printed once every document committed: how many, and the key mode (--json: one object).
 */
import type { Command } from 'commander';
import { DEFAULT_STORE_URL } from '../../store/open-store.js';
import { type CorpusOptions, addCorpusOptions } from '../corpus-options.js';
import { cliCommand, shellWord } from '../invocation.js';
import { Percolator } from '../percolator-on-demand.js';
import { parseNonNegativeInteger, parsePositiveInteger, printResult } from '../parent-command.js';
import { UsageError } from '../usage-error.js';

interface LoadCommandOptions extends CorpusOptions {
  crawl: number;
  loaders: number;
  store: string;
  json?: boolean;
}

export function register(program: Command): void {
  addCorpusOptions(
    program
      .command('load')
      .description("write a corpus's documents into a store for workers running the web index (percolator worker --app webindex)"),
    'synthetic',
  )
    .option(
      '--crawl <n>',
      'synthetic: the corpus as its n-th crawl finds it (0: the first; a later one changes the pages, and titles that split and join clusters)',
      parseNonNegativeInteger('crawl'),
      0,
    )
    .option('--loaders <n>', 'loader transactions at once', parsePositiveInteger('loaders'), 16)
    .option('--store <url>', 'store URL', DEFAULT_STORE_URL)
    .option('--json', 'print {"documents","deleted","seconds","keyMode","store"}')
    .addHelpText(
      'after',
      '\nStart the workers first (percolator worker --app webindex --store URL): a document written before any worker registered the observers is not indexed (NOT_OBSERVED, nothing written).\nExit status: 0 every document committed, 1 an error (one line on stderr).',
    )
    .action(async (opts: LoadCommandOptions) => {
      if (opts.crawl > 0 && opts.corpus !== 'synthetic') throw new UsageError('--crawl goes with --corpus synthetic');
      const [{ openCorpus }, { loadDocuments }, { PAGES, RAW_CONTENT }, { checkKeyMode }, { ObservedColumns }, { NotObservedError }] =
        await Promise.all([
          import('../../apps/webindex/run.js'),
          import('../../apps/webindex/loader.js'),
          import('../../apps/webindex/schema.js'),
          import('../../apps/webindex/pin-key-mode.js'),
          import('../../notify/observed-columns.js'),
          import('./notify.js'),
        ]);
      const corpus = await openCorpus({ corpus: opts.corpus, docs: opts.docs, seed: opts.seed }, opts.crawl);
      const db = await Percolator.open({ store: opts.store, storeOptions: { level: { create: false } } });
      try {
        const observed = await new ObservedColumns(db.store).columnsOf(PAGES);
        if (!observed.includes(RAW_CONTENT)) {
          throw new NotObservedError(
            `no worker has registered the web index's observers on ${opts.store}: the documents would carry no notification and never be indexed; start one first (${cliCommand()} worker --app webindex --key-mode ${corpus.keyMode} --store ${shellWord(opts.store)}), then load`,
            { table: PAGES, column: RAW_CONTENT, observed: [...observed] },
          );
        }
        // Documents clustered by keys their corpus does not suit (a local corpus's shared titles
        // joined by the paper's three keys) would index without error and wrongly.
        await checkKeyMode(
          db,
          corpus.keyMode,
          (pinned) =>
            `the web index on ${opts.store} clusters documents by the keys ${pinned}, and this corpus needs ${corpus.keyMode}: load it into a store of its own, with its workers started with --key-mode ${corpus.keyMode}`,
        );
        const t0 = performance.now();
        const r = await loadDocuments(db, corpus.docs, { concurrency: opts.loaders });
        const seconds = Math.round(performance.now() - t0) / 1000;
        const result = { documents: r.loaded, deleted: r.deleted, seconds, keyMode: corpus.keyMode, store: opts.store };
        if (opts.json === true) printResult(result, true);
        else
          process.stdout.write(
            `loaded ${r.loaded} document${r.loaded === 1 ? '' : 's'} in ${seconds} s; the workers index them (this corpus needs their --key-mode ${corpus.keyMode}); ${cliCommand()} wait --store ${shellWord(opts.store)} waits for them\n`,
          );
      } finally {
        await db.close();
      }
    });
}
