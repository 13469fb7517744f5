/**
 * What a value is, for the messages of typed errors about JavaScript callers' arguments: `null`,
 * `undefined`, `string`, `number`…, or an object's constructor name (`Object`, `Array`, `Map`…).
 */
export function describeType(v: unknown): string {
  if (v === null || typeof v !== 'object') return v === null ? 'null' : typeof v;
  return (v as object).constructor?.name ?? 'an object';
}
