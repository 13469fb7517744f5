/**
 * How a checker's worker process (bank-worker.ts, notify-worker.ts, durability-writer.ts) reports
 * the error that ended it, on its stderr and to its supervisor.
 *
 * Invariants: `codeOf` is the error's `code` as a string, 'ERROR' when it has none; a typed error
 * (an uppercase code, such as IO_ERROR for a store out of reach) says what happened in its
 * message, so `failureMessage` gives the message alone; the stack is kept for errors without such
 * a code (bugs), where it is the evidence.
 */

export function codeOf(e: unknown): string {
  return typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : 'ERROR';
}

export function failureMessage(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  return /^[A-Z_]+$/.test(codeOf(e)) ? e.message : (e.stack ?? e.message);
}
