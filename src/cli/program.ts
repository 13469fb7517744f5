/**
 * The `percolator` program: its name, version and description, and the commands of the files
 * given (all of them or those a command line needs: pick-commands.ts), registered in the order
 * given, then each group described by the members it got (parent-command.ts).
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import type { RegisterCommand } from './commands/index.js';
import { describeGroups } from './parent-command.js';

// dist/cli/program.js → the package's own package.json.
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

export function percolatorProgram(registers: readonly RegisterCommand[]): Command {
  const program = new Command();
  program
    .name('percolator')
    .version(version)
    .description('Percolator for TypeScript: incremental processing over a Bigtable-model store')
    .showHelpAfterError()
    .enablePositionalOptions();
  for (const register of registers) register(program);
  describeGroups(program);
  return program;
}
