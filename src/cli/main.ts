#!/usr/bin/env node
/**
 * The `percolator` command. Thin: each subcommand lives in `commands/<name>.ts`, parses its flags
 * with commander and calls into the layers. Errors with a stable `code` are printed as one line on
 * stderr (`percolator: CODE: message`, also with --json) and exit 1 (2 for `get`, whose 1 means
 * an absent cell: exit-status.ts); anything else is a bug and prints its stack.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { commands } from './commands/index.js';
import { failureStatus } from './exit-status.js';
import { describeGroups } from './parent-command.js';

// dist/cli/main.js → the package's own package.json.
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command();
program
  .name('percolator')
  .version(version)
  .description('Percolator for TypeScript: incremental processing over a Bigtable-model store')
  .showHelpAfterError()
  .enablePositionalOptions();

for (const register of commands) register(program);
describeGroups(program);

// A reader that stops early (`percolator scan t | head`) closes the pipe: that ends the output,
// it is not an error worth a stack trace.
// Any other failure to write it (a full disk, /dev/full) fails the command in one line.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  process.stderr.write(`percolator: IO_ERROR: cannot write the output: ${err.message}\n`);
  process.exit(failureStatus());
});

program.parseAsync(process.argv).catch((err: unknown) => {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : '';
  if (code && /^[A-Z_]+$/.test(code)) {
    process.stderr.write(`percolator: ${code}: ${(err as Error).message}\n`);
  } else {
    process.stderr.write(`percolator: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  // A command that failed half-way may leave handles open (a connection, a timer of an instance
  // it never closed): waiting for them would hang the command instead of failing it. Everything
  // acknowledged is already durable.
  process.exit(failureStatus());
});
