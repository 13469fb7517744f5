#!/usr/bin/env node
/**
 * The `percolator` command. Thin: each subcommand lives in `commands/<name>.ts`, parses its flags
 * with commander and calls into the layers; only the files of the command named are loaded.
 * Errors with a stable `code` are printed as one line on stderr (`percolator: CODE: message`,
 * also with --json) and exit 1 (2 for `get`, whose 1 means an absent cell: exit-status.ts);
 * anything else is a bug and prints its stack.
 */
import { failureStatus } from './exit-status.js';
import { pickCommandFiles } from './pick-commands.js';
import { percolatorProgram } from './program.js';

// Only the files of the command named (pick-commands.ts): loading every command's layers (gRPC,
// LevelDB, the web index, the benchmarks) took most of a short command's time.
const files = pickCommandFiles(process.argv.slice(2));
const program = percolatorProgram((await Promise.all(files.map((f) => f.load()))).map((m) => m.register));

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
