/**
 * Options objects from JavaScript callers: a misspelt option (`{ thread: 4 }`, `{ prefx: 'a' }`)
 * was ignored without a word, and the call ran with the default — a scan over the whole table, a
 * worker with its default threads. Entry points that take options name the first one they do not
 * know in their own typed error (INVALID_CONFIG, INVALID_ARGUMENT).
 *
 * Only own enumerable keys count (what an object literal or a spread has), and a key set to
 * undefined counts too: it is still a name the caller wrote.
 */

/** The first own enumerable key of `options` not in `known`, or undefined (for…in: no array is made). */
export function unknownKey(options: object, known: ReadonlySet<string>): string | undefined {
  for (const key in options) if (!known.has(key) && Object.hasOwn(options, key)) return key;
  return undefined;
}

/** A message's account of the names an options object takes. */
function knownNames(known: ReadonlySet<string>): string {
  return [...known].join(', ');
}

/** Whether `v` is an object with these methods (an option that must be a Store, an oracle, a lock service…). */
export function hasMethods(v: unknown, names: readonly string[]): boolean {
  return typeof v === 'object' && v !== null && names.every((n) => typeof (v as Record<string, unknown>)[n] === 'function');
}

/**
 * The first option of `options` that `what` does not take, with the message every entry point
 * gives for it (`<what> has no option "k" (it takes a, b)`), or undefined — nothing is made then:
 * the callers wrap it in their own error class and code.
 */
export function unknownOption(what: string, options: object, known: ReadonlySet<string>): { option: string; message: string } | undefined {
  const option = unknownKey(options, known);
  return option === undefined
    ? undefined
    : { option, message: `${what} has no option ${JSON.stringify(option)} (it takes ${knownNames(known)})` };
}
