/**
 * The code blocks of README.md and docs/*.md that a newcomer copies first typecheck against the
 * package's public API, so a renamed export or a changed signature fails here instead of leaving
 * the docs stale. Nothing is run: the snippets open stores and start servers.
 *
 * Convention:
 * - Every block fenced as ```ts, ```typescript or ```mts is checked as an ES module of its own
 *   (top-level await allowed), every ```js, ```javascript or ```mjs block as an ES module in
 *   JavaScript (checkJs) — under the project's compiler options (strict, NodeNext). They import the
 *   package as a user does, `percolator`, `percolator/server` and `percolator/bigtable`: its
 *   `exports`, mapped to the sources they are built from (no build needed), and nothing else of it.
 * - A block that cannot be a module (a transcript, pseudo-code) is excluded by the line just above
 *   its fence: `<!-- snippet: not checked (why) -->`. The reason is required; any other
 *   `<!-- snippet…` comment is an error, so a misspelt marker does not silently check or skip.
 * - A top-level `interface X` in a checked ```ts block shows the exported type X of `percolator`:
 *   the two must agree (each assignable to the other), so the shape the doc shows cannot drift.
 *
 * One compiler run checks them all (TypeScript's own command line: its JS API is not stable in
 * TypeScript 7); each diagnostic is reported at the .md file and line of the snippet.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));

const LANGS: Record<string, 'mts' | 'mjs'> = {
  ts: 'mts',
  typescript: 'mts',
  mts: 'mts',
  js: 'mjs',
  javascript: 'mjs',
  mjs: 'mjs',
};
const SKIP = /^<!--\s*snippet:\s*not checked\s*\((.+)\)\s*-->$/;

interface Snippet {
  /** Where it is shown, e.g. `docs/oracle.md:9` (the opening fence). */
  readonly where: string;
  readonly md: string;
  /** The .md line of the snippet's first line of code. */
  readonly firstLine: number;
  readonly ext: 'mts' | 'mjs';
  readonly code: string;
}

/** The fenced blocks of one markdown file in a checked language, and the malformed markers. */
function extract(md: string): { snippets: Snippet[]; problems: string[] } {
  const lines = readFileSync(join(root, md), 'utf8').split('\n');
  const snippets: Snippet[] = [];
  const problems: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i]);
    if (!open) {
      if (/^\s*<!--\s*snippet/.test(lines[i]) && !SKIP.test(lines[i].trim())) {
        problems.push(`${md}:${i + 1}: not a snippet marker: ${lines[i].trim()} (expected <!-- snippet: not checked (why) -->)`);
      }
      continue;
    }
    const [, indent, fence, lang] = open;
    let end = i + 1;
    const close = new RegExp(`^\\s*${fence[0]}{${fence.length},}\\s*$`);
    while (end < lines.length && !close.test(lines[end])) end++;
    const ext = LANGS[lang.toLowerCase()];
    const above = i > 0 ? lines[i - 1].trim() : '';
    if (ext !== undefined && !SKIP.test(above)) {
      // A block inside a list item is indented with it: its code is not.
      const code = lines.slice(i + 1, end).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart()));
      snippets.push({ where: `${md}:${i + 1}`, md, firstLine: i + 2, ext, code: code.join('\n') });
    }
    i = end;
  }
  return { snippets, problems };
}

const mdFiles = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
const extracted = mdFiles.map(extract);
const snippets = extracted.flatMap((e) => e.snippets);
const markerProblems = extracted.flatMap((e) => e.problems);

/**
 * The package's entry points as a user's project resolves them (package.json `exports`), each
 * mapped from the declarations the build emits to the source they are emitted from.
 */
function exportPaths(): Record<string, string[]> {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, { types: string }>;
  };
  const paths: Record<string, string[]> = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const source = join(root, target.types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts'));
    if (!existsSync(source)) throw new Error(`package.json exports ${subpath} as ${target.types}, built from no ${source}`);
    paths[pkg.name + subpath.slice(1)] = [source];
  }
  return paths;
}

interface Generated {
  readonly file: string;
  readonly snippet: Snippet;
  /** Lines of the generated file past the snippet's own: the .md line and what they check. */
  readonly epilogue: Map<number, { line: number; what: string }>;
}

/** The snippet as a module, with the checks its interfaces imply appended after its own lines. */
function generate(dir: string, snippet: Snippet, n: number): Generated {
  const own = snippet.code.split('\n');
  const lines = [...own];
  const epilogue = new Map<number, { line: number; what: string }>();
  if (snippet.ext === 'mts') {
    own.forEach((l, k) => {
      const m = /^(?:export\s+)?interface\s+(\w+)/.exec(l);
      if (!m) return;
      const name = m[1];
      const disagrees = { line: snippet.firstLine + k, what: `interface ${name} as shown disagrees with the exported ${name}` };
      lines.push(`import type { ${name} as Exported_${name} } from 'percolator';`);
      epilogue.set(lines.length, { line: disagrees.line, what: `interface ${name} as shown is not a type that 'percolator' exports` });
      lines.push(`((shown: ${name}): Exported_${name} => shown);`);
      epilogue.set(lines.length, disagrees);
      lines.push(`((exported: Exported_${name}): ${name} => exported);`);
      epilogue.set(lines.length, disagrees);
    });
  }
  const file = join(dir, `${n}-${snippet.where.replace(/[^\w]+/g, '-')}.${snippet.ext}`);
  writeFileSync(file, lines.join('\n') + '\n');
  return { file, snippet, epilogue };
}

let dir: string;
let generated: Generated[];
/** Diagnostics by generated file (`md:line:col TScode message`), and those of no snippet. */
const diagnostics = new Map<string, string[]>();
const elsewhere: string[] = [];

// A snippet that must not compile: without its error the harness checks nothing (a path mapped
// to nothing, a config that includes no file) and every snippet would pass.
const control: Snippet = {
  where: 'negative-control',
  md: 'negative-control',
  firstLine: 1,
  ext: 'mts',
  code: "import { NoSuchExport } from 'percolator';",
};

beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'doc-snippets-')));
  // The snippets may import the package's own dependencies (docs/server.md: the Bigtable client),
  // as a user's project that installed the package can.
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  generated = [...snippets, control].map((s, n) => generate(dir, s, n));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      extends: join(root, 'tsconfig.json'),
      compilerOptions: { noEmit: true, allowJs: true, checkJs: true, paths: exportPaths() },
      files: generated.map((g) => g.file),
      include: [],
    }),
  );
  const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', dir, '--pretty', 'false'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (tsc.error) throw tsc.error;
  const byFile = new Map(generated.map((g) => [g.file, g]));
  // `file(line,col): error TSn: message`, the message continued on indented lines.
  for (const entry of tsc.stdout.split(/\n(?=\S)/)) {
    if (entry.trim() === '') continue;
    const m = /^(.+?)\((\d+),(\d+)\): error (TS\d+): ([\s\S]*)$/.exec(entry.trim());
    const g = m ? byFile.get(resolve(dir, m[1])) : undefined;
    if (!m || !g) {
      elsewhere.push(entry.trim());
      continue;
    }
    const line = Number(m[2]);
    const extra = g.epilogue.get(line);
    const at = extra ? extra.line : g.snippet.firstLine + line - 1;
    const text = `${g.snippet.md}:${at}:${extra ? 1 : m[3]} ${m[4]} ${extra ? `${extra.what}: ` : ''}${m[5].replace(/\s+/g, ' ')}`;
    diagnostics.set(g.file, [...(diagnostics.get(g.file) ?? []), text]);
  }
  if (tsc.status !== 0 && diagnostics.size === 0 && elsewhere.length === 0) {
    elsewhere.push(`tsc exited ${tsc.status}: ${tsc.stderr}`);
  }
}, 120_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('finds the snippets, and every snippet marker is well formed', () => {
  expect(snippets.length).toBeGreaterThan(0);
  expect(markerProblems).toEqual([]);
});

it('the checker catches a snippet that does not compile (negative control)', () => {
  const g = generated.find((x) => x.snippet === control)!;
  expect(diagnostics.get(g.file)).toEqual([expect.stringMatching(/^negative-control:1:\d+ TS2305 .*NoSuchExport/)]);
});

it('the compiler reports nothing outside the snippets (config, package sources)', () => {
  expect(elsewhere).toEqual([]);
});

it.each(snippets.map((s) => [s.where, s] as const))('%s compiles against the public API', (_where, snippet) => {
  const g = generated.find((x) => x.snippet === snippet)!;
  expect(diagnostics.get(g.file) ?? []).toEqual([]);
});
