/**
 * A bad command-line argument (an option's value out of range, an unknown choice). It carries a
 * stable code, so main.ts prints it as one line — `percolator: INVALID_ARGUMENT: …` — and exits 1;
 * a plain Error there would be taken for a bug and printed with its stack.
 */
export class UsageError extends Error {
  readonly code = 'INVALID_ARGUMENT';

  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
