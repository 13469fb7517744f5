/**
 * A benchmark option out of the range the benchmark can run with (`--docs` below what the corpus
 * needs, `--accounts` below two), found before anything runs. Code INVALID_ARGUMENT, as the
 * command line's own option errors, so `percolator bench …` prints it as one line, not a stack.
 */
export class BenchOptionError extends Error {
  readonly code = 'INVALID_ARGUMENT';
  /** The option as the command line spells it (`--docs`) and the value given. */
  readonly details: Readonly<{ option: string; value: unknown }>;
  constructor(option: string, value: unknown, message: string) {
    super(message);
    this.name = 'BenchOptionError';
    this.details = { option, value };
  }
}
