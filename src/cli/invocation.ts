/**
 * How the hints the commands print (the demo's closing line, search's NO_INDEX) spell a command,
 * so that a hint copied as printed runs this program from the directory it was printed in:
 * - `percolator`, when this process was started as the `percolator` the PATH finds (a global
 *   install) — the user's PATH: a `node_modules/.bin` on it is one npm and npx put first for the
 *   command they run (`npx percolator` is started from one), gone in the shell the hint is read in;
 * - `npx percolator`, when npx, run in the working directory, finds this program: the directory
 *   is inside this package (npx runs a project's own bin: a checkout) or inside a project whose
 *   `node_modules/.bin/percolator` is this program (where the package is installed);
 * - else `node <this program's main.js>`. `npx percolator` there would fetch the npm registry's
 *   package of that name, an unrelated web framework that has no `percolator` executable
 *   (`npm error could not determine executable to run`).
 *
 * It reads the file system (a few `stat`s and `realpath`s, once per hint); any failure to read
 * falls through to the `node …` form, which runs from anywhere.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What the spelling depends on: where the hint is printed and how this program was started. */
export interface Invocation {
  /** The working directory. */
  readonly cwd: string;
  /** This program's entry point (dist/cli/main.js of this package). */
  readonly main: string;
  /** The script path this process was started with (`process.argv[1]`). */
  readonly argv1: string | undefined;
  /** The PATH. */
  readonly path: string | undefined;
}

/** The package's name and its executable's name. */
const NAME = 'percolator';

/** A `node_modules/.bin` directory: npm and npx put them on the PATH of what they run. */
const NPM_BIN = /(^|[\\/])node_modules[\\/]\.bin[\\/]?$/;

function thisInvocation(): Invocation {
  return {
    cwd: process.cwd(),
    main: fileURLToPath(new URL('./main.js', import.meta.url)),
    argv1: process.argv[1],
    path: process.env.PATH,
  };
}

/** The command that runs this program, as a hint should print it (see the header). */
export function cliCommand(inv: Invocation = thisInvocation()): string {
  const main = real(inv.main);
  if (main !== null) {
    if (startedFromPath(inv, main)) return NAME;
    if (npxFinds(inv.cwd, main)) return `npx ${NAME}`;
  }
  return `node ${shellWord(inv.main)}`;
}

function real(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/** Started as `percolator`, and the user's PATH's first `percolator` is this program. */
function startedFromPath(inv: Invocation, main: string): boolean {
  if (inv.argv1 === undefined || !/(^|[\\/])percolator$/.test(inv.argv1)) return false;
  for (const dir of (inv.path ?? '').split(delimiter)) {
    // npm's and npx's own entries (see the header): a hint spelt `percolator` from them did not run.
    if (dir === '' || NPM_BIN.test(dir)) continue;
    const candidate = join(dir, NAME);
    if (existsSync(candidate)) return real(candidate) === main;
  }
  return false;
}

/**
 * Whether `npx percolator` in `cwd` runs `main`. npx looks in the local project: the nearest
 * directory at or above `cwd` holding a package.json or a node_modules (npm's local prefix).
 */
function npxFinds(cwd: string, main: string): boolean {
  let dir = resolve(cwd);
  for (;;) {
    if (existsSync(join(dir, 'package.json')) || existsSync(join(dir, 'node_modules'))) break;
    const up = dirname(dir);
    if (up === dir) return false;
    dir = up;
  }
  const bin = join(dir, 'node_modules', '.bin', NAME);
  if (existsSync(bin)) return real(bin) === main;
  // The project itself: npx runs its own bin when the names match.
  try {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; bin?: unknown };
    if (pkg.name !== NAME || typeof pkg.bin !== 'object' || pkg.bin === null) return false;
    const own = (pkg.bin as Record<string, unknown>)[NAME];
    return typeof own === 'string' && real(join(dir, own)) === main;
  } catch {
    return false;
  }
}

/** `word` as one word of a POSIX shell command line (quoted only when it must be): for hints. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
