/**
 * The corpus options `demo` and `load` share: `--corpus local|synthetic`, `--docs N`, `--seed S`.
 * Each command names its own default corpus (`demo` the local documentation, so `npm start`
 * indexes real files; `load` the synthetic one, whose crawls change pages). A name that is
 * neither is a UsageError (INVALID_ARGUMENT, exit 1) from the parser, before anything is opened.
 */
import type { Command } from 'commander';
import type { CorpusName } from '../apps/webindex/run.js';
import { parseNonNegativeInteger, parsePositiveInteger } from './parent-command.js';
import { UsageError } from './usage-error.js';

export interface CorpusOptions {
  readonly corpus: CorpusName;
  readonly docs?: number;
  readonly seed: number;
}

export function addCorpusOptions(command: Command, defaultCorpus: CorpusName): Command {
  return command
    .option('--corpus <name>', 'local (documentation under node_modules) or synthetic', parseCorpus, defaultCorpus)
    .option('--docs <n>', 'documents (local: at most this many files, default all; synthetic: default 2000)', parsePositiveInteger('docs'))
    .option('--seed <n>', 'synthetic corpus seed', parseNonNegativeInteger('seed'), 42);
}

export function parseCorpus(raw: string): CorpusName {
  if (raw === 'local' || raw === 'synthetic') return raw;
  throw new UsageError(`--corpus must be local or synthetic, got ${JSON.stringify(raw)}`);
}
