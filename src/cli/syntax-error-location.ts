/**
 * Where a syntax error that failed an `import()` is in its source: `path:line:column`.
 *
 * Node tells where a syntax error is by decorating its text: `path:line` (a file: URL for an ES
 * module), the source line, a caret line under the offending token, then `SyntaxError: message`.
 * For a CommonJS module, and for an import an ES module does not export, that text is the error's
 * stack. For an ES module's own syntax error, loaded with `import()`, it is not (nodejs/node#49441,
 * open since 2020: the stack holds only Node's loader frames, and only the handler of an uncaught
 * error prints the location), so the module is imported again in a child process, whose uncaught
 * error prints it.
 *
 * Invariants: the child never runs the module's code — its entry imports, before the module, one
 * that throws; a module graph is parsed whole (where a syntax error stops it) before any of it is
 * evaluated, and evaluation stops at the first module that throws. Nothing here throws: a location
 * that cannot be told (another error in the child, a timeout) is null.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** How long the child may take to parse the module graph. */
const CHILD_TIMEOUT_MS = 10_000;

/**
 * The location Node's decorated text of a syntax error gives, for the error whose message is
 * `message` (other errors' text in the same output is not taken for it); null if it holds none.
 */
export function syntaxErrorLocation(text: string, message: string): string | null {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const first = `SyntaxError: ${message.split('\n')[0]}`;
  for (let i = lines.indexOf(first); i >= 0; i = lines.indexOf(first, i + 1)) {
    // Above the message: `path:line`, the source line, the caret line, and an empty line (but not
    // above a link error's: `does not provide an export named`).
    const c = lines[i - 1] === '' ? i - 2 : i - 1;
    const header = lines[c - 2]?.match(/^(.+):(\d+)$/);
    const caret = lines[c];
    if (header === null || header === undefined || caret === undefined || !/^[\t ]*\^+[\t ]*$/.test(caret)) continue;
    const where = header[1] as string;
    let path = where;
    if (where.startsWith('file:')) {
      try {
        path = fileURLToPath(where);
      } catch {
        continue;
      }
    }
    // The caret line copies the source line's tabs, so its offset is the column in characters.
    return `${path}:${header[2] as string}:${caret.indexOf('^') + 1}`;
  }
  return null;
}

/** Whether every frame of the error's stack is Node's own (its loader's): the stack says nowhere in the user's code. */
function onlyNodeFrames(stack: string): boolean {
  const frames = stack.split('\n').filter((l) => /^\s+at /.test(l));
  return frames.every((l) => /\(?node:internal\//.test(l));
}

/**
 * Where the SyntaxError `error`, thrown by `import(url)`, is: from its stack, else (an ES module's)
 * from the same import in a child process. Null for another error, or a location not to be told.
 */
export async function locateSyntaxError(url: string, error: unknown): Promise<string | null> {
  if (!(error instanceof SyntaxError)) return null;
  const stack = error.stack ?? '';
  const fromStack = syntaxErrorLocation(stack, error.message);
  if (fromStack !== null) return fromStack;
  // A SyntaxError thrown by the module's code as it runs (JSON.parse) has its frames: its stack says where.
  if (!onlyNodeFrames(stack)) return null;
  // The throwing module first: should the graph parse this time (the file fixed meanwhile), its code still never runs.
  const probe = `import 'data:text/javascript,throw 0'; import ${JSON.stringify(url)};`;
  const stderr = await new Promise<string>((resolve) => {
    try {
      execFile(
        process.execPath,
        ['--input-type=module', '--eval', probe],
        { encoding: 'utf8', timeout: CHILD_TIMEOUT_MS, windowsHide: true },
        (_err, _stdout, err) => resolve(err),
      );
    } catch {
      resolve(''); // no child to be had: the message goes without the location
    }
  });
  return syntaxErrorLocation(stderr, error.message);
}
