/**
 * `percolator search "query" [--data DIR | --store URL] [--json] [--limit N]`: queries the web
 * index's serving index (the AND of the query's terms) at one snapshot and prints each result with
 * its crawl-to-index latency. The data directory must hold an index built by `percolator demo`
 * (the embedded store allows one process at a time: with `demo --serve` running, use its search
 * page instead). `--store` reaches it at a URL instead — `bigtable://HOST:PORT` while `percolator
 * serve --data DIR` holds the directory, as that server's STORE_LOCKED hint says.
 *
 * Its NO_INDEX hint must never lead to a loss: over a store holding tables of someone else the demo
 * would refuse (NOT_A_WEB_INDEX) or, forced, remove them, so there it names a new directory.
 */
import { type Command, Option } from 'commander';
import { foreignTables } from '../../apps/webindex/clean-start.js';
import { search } from '../../apps/webindex/search.js';
import { INDEX } from '../../apps/webindex/schema.js';
import { isStoreError } from '../../store/errors.js';
import { DEFAULT_STORE_URL, ONE_SHOT_STORE } from '../../store/open-store.js';
import { Percolator } from '../percolator-on-demand.js';
import { cliCommand, shellWord } from '../invocation.js';
import { parsePositiveInteger, printResult } from '../parent-command.js';

function noIndex(message: string, data: string, tables: readonly string[] = []): Error {
  return Object.assign(new Error(message), { code: 'NO_INDEX', data, tables });
}

export function register(program: Command): void {
  program
    .command('search')
    .description('search the web index built by `percolator demo`')
    .argument('<query...>', 'terms (all must match)')
    .option('--data <dir>', 'data directory', DEFAULT_STORE_URL.slice('file:'.length))
    .addOption(
      new Option(
        '--store <url>',
        "the store at a URL instead: bigtable://HOST:PORT for a percolator serve of a demo's directory",
      ).conflicts('data'),
    )
    .option('--limit <n>', 'results to show', parsePositiveInteger('limit'), 10)
    .option('--json', 'print one JSON object')
    .action(async (words: string[], opts: { data: string; store?: string; limit: number; json?: boolean }) => {
      const url = opts.store ?? `file:${opts.data}`;
      const db = await Percolator.open({ store: url, storeOptions: ONE_SHOT_STORE }).catch((e: unknown) => {
        if (!isStoreError(e, 'NOT_A_STORE') || opts.store !== undefined) throw e;
        throw noIndex(`no index at ${opts.data}: run \`${cliCommand()} demo --data ${shellWord(opts.data)}\` first`, opts.data);
      });
      try {
        const tables = await db.store.listTables();
        if (!tables.includes(INDEX) && opts.store !== undefined) {
          throw noIndex(
            `the store at ${opts.store} holds no web index: build one with \`${cliCommand()} demo --data DIR\`, then serve that directory (\`${cliCommand()} serve --data DIR\`) or search it with --data`,
            opts.store,
            tables,
          );
        }
        if (!tables.includes(INDEX)) {
          const foreign = foreignTables(tables);
          if (foreign.length > 0) {
            const shown = `${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? ', …' : ''}`;
            throw noIndex(
              `${opts.data} holds no web index but other tables (${shown}): build one in a new directory, \`${cliCommand()} demo --data <new directory>\` (the demo starts clean, so it refuses this one)`,
              opts.data,
              tables,
            );
          }
          throw noIndex(
            `${opts.data} holds no web index: run \`${cliCommand()} demo --data ${shellWord(opts.data)}\` first`,
            opts.data,
            tables,
          );
        }
        const snap = await db.snapshot();
        try {
          const r = await search(snap, words.join(' '), opts.limit);
          if (opts.json === true) {
            printResult(r, true);
            return;
          }
          const n = (x: number) => x.toLocaleString('en-US');
          const out = [
            `"${r.query}": ${n(r.total)} result${r.total === 1 ? '' : 's'} (${r.tookMs.toFixed(1)} ms)${r.terms.length === 0 ? ' — no searchable terms in the query' : ''}`,
          ];
          r.hits.forEach((h, i) => {
            out.push(`${String(i + 1).padStart(3)}. ${h.title}`, `     ${h.url}`);
            if (h.snippet !== '') out.push(`     ${h.snippet.slice(0, 160)}`);
            const meta = [
              `score ${h.score}`,
              h.size > 1 ? `${h.size - 1} duplicate${h.size === 2 ? '' : 's'}` : null,
              `${n(h.inlinks)} in-links`,
              h.latencyMs !== null ? `crawl-to-index ${n(h.latencyMs)} ms` : 'crawl-to-index n/a',
            ];
            out.push(`     ${meta.filter((x) => x !== null).join(' · ')}`);
          });
          process.stdout.write(`${out.join('\n')}\n`);
        } finally {
          snap.release();
        }
      } finally {
        await db.close();
      }
    });
}
