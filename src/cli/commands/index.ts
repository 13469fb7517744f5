/**
 * Every command file, each exporting a `register(program)` function, with the command paths it
 * registers (`['get']`, `['check', 'bank']`). Files are loaded on demand (`load`): a command line
 * loads only the file of the command it names (main.ts, pick-commands.ts), so `percolator get`
 * does not load the benchmarks, the server and the web index.
 *
 * Invariants: the order here is the registration order when every file is loaded, which is the
 * order of the top-level help and of each group's help; `paths` lists exactly the commands the
 * file registers (pick-commands.test.ts checks both). A command file imports at its top what
 * registering needs (commander, option parsers, defaults shown in its help) and loads the layers
 * its action uses in the action (`await import(…)`, `Percolator` from percolator-on-demand.ts):
 * its help and its usage errors need none of them (test/cli-lazy-load.test.ts).
 */
import type { Command } from 'commander';

export type RegisterCommand = (program: Command) => void;

export interface CommandFile {
  /** The commands the file registers: a top-level command, or a group and a member of it. */
  readonly paths: readonly (readonly string[])[];
  readonly load: () => Promise<{ readonly register: RegisterCommand }>;
}

export const commandFiles: readonly CommandFile[] = [
  { paths: [['demo']], load: () => import('./demo.js') },
  { paths: [['search']], load: () => import('./search.js') },
  { paths: [['get']], load: () => import('./get.js') },
  { paths: [['scan']], load: () => import('./scan.js') },
  { paths: [['set']], load: () => import('./set.js') },
  { paths: [['delete']], load: () => import('./delete.js') },
  { paths: [['notify']], load: () => import('./notify.js') },
  { paths: [['bench', 'store']], load: () => import('./bench-store.js') },
  { paths: [['bench', 'overhead']], load: () => import('./bench-overhead.js') },
  { paths: [['bench', 'clumping']], load: () => import('./bench-clumping.js') },
  { paths: [['bench', 'latency']], load: () => import('./bench-latency.js') },
  { paths: [['bench', 'webindex']], load: () => import('./bench-webindex.js') },
  { paths: [['bench', 'peers']], load: () => import('./bench-peers.js') },
  { paths: [['bench', 'pairs']], load: () => import('./bench-pairs.js') },
  { paths: [['bench', 'soak']], load: () => import('./bench-soak.js') },
  { paths: [['check', 'durability']], load: () => import('./check-durability.js') },
  { paths: [['check', 'bank']], load: () => import('./check-bank.js') },
  { paths: [['check', 'notify']], load: () => import('./check-notify.js') },
  { paths: [['oracle'], ['bench', 'oracle']], load: () => import('./oracle.js') },
  { paths: [['serve']], load: () => import('./serve.js') },
  { paths: [['worker']], load: () => import('./worker.js') },
  { paths: [['load']], load: () => import('./load.js') },
  { paths: [['wait']], load: () => import('./wait.js') },
  { paths: [['verify']], load: () => import('./verify.js') },
];
