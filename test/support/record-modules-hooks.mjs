/**
 * The hooks of record-modules.mjs: each resolved module's URL appended to the file it was given.
 * Synchronous appends, so that nothing is lost when the program exits at once (process.exit).
 */
import { appendFileSync } from 'node:fs';

let file;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
