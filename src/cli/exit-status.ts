/**
 * The exit status of a command that fails: 1, except where a command gives 1 a meaning of its own
 * — `get` exits 1 for an absent cell, so its failures exit 2 and a script can tell "no value"
 * from "could not read". main.ts reads it for every failure it reports (typed errors, bugs, an
 * output that cannot be written).
 */
let status = 1;

/** Called by a command before it runs (a commander preAction hook). */
export function setFailureStatus(code: number): void {
  status = code;
}

export function failureStatus(): number {
  return status;
}
