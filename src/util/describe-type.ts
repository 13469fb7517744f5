/**
 * What a value is, for the messages of typed errors about JavaScript callers' arguments: `null`,
 * `undefined`, `string`, `number`…, or an object's constructor name (`Object`, `Array`, `Map`…).
 */
export function describeType(v: unknown): string {
  if (v === null || typeof v !== 'object') return v === null ? 'null' : typeof v;
  return (v as object).constructor?.name ?? 'an object';
}

/**
 * A wrong value as a message shows it: a string quoted (`"localhost"`), a number as written — NaN
 * and Infinity too, which JSON would spell `null` ("port must be … not null" for a NaN) — anything
 * else by its type (describeType).
 */
export function describeValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  return typeof v === 'number' ? String(v) : describeType(v);
}

/** A wrong secret (a token) as a message shows it: by its type only, an empty one as such — never its text. */
export function describeSecret(v: unknown): string {
  return v === '' ? 'an empty string' : describeType(v);
}
