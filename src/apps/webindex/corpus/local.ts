/**
 * The local corpus: a real one that no one here wrote — the README/Markdown, HTML and plain-text
 * documentation (licenses, changelogs, notices) shipped inside the project's own `node_modules`.
 * It has real links (READMEs link their LICENSE, docs link each other and the web) and real
 * exact duplicates (the same license text in many packages).
 *
 * Each file's URL is `file:///node_modules/<path>`, so relative links resolve to the URLs of the
 * files they name. Files are listed up front (paths only) and read one at a time while loading.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CrawledDoc } from '../loader.js';

const DOC_FILE = /\.(md|markdown|html?|txt|rst)$/i;
const BARE_DOC = /^(readme|license|licence|copying|notice|authors|changelog|history|contributing|security)([-._][^.]*)?(\.[a-z]+)?$/i;
const CODE = /\.(js|cjs|mjs|ts|cts|mts|map|json|node|d\.ts|sh|py|c|cc|h|gyp|yml|yaml)$/i;
const MAX_BYTES = 1_000_000;

export function isDocFile(name: string): boolean {
  if (CODE.test(name) && !DOC_FILE.test(name)) return false;
  return DOC_FILE.test(name) || BARE_DOC.test(name);
}

export function localUrl(root: string, file: string): string {
  return new URL(relative(root, file).split(sep).join('/'), 'file:///node_modules/').href;
}

/**
 * Where to look for the corpus when no folder is named, in order: the working directory's
 * `node_modules` (the project the user runs in), this package's own, and the `node_modules` this
 * package is installed in (a dependency's dependencies are hoisted there). Duplicates removed.
 * So `percolator demo` run from any directory finds a corpus wherever the package is installed.
 */
export function nodeModulesCandidates(cwd: string = process.cwd()): string[] {
  // This file is <package>/dist/apps/webindex/corpus/local.js (or src/… under the test runner).
  const packageRoot = fileURLToPath(new URL('../../../../', import.meta.url));
  const out = [join(cwd, 'node_modules'), join(packageRoot, 'node_modules')];
  const parent = dirname(packageRoot.replace(/[\\/]+$/, ''));
  if (basename(parent) === 'node_modules') out.push(parent);
  return [...new Set(out)];
}

/** Documentation files under `root` (a node_modules directory), sorted, at most `limit`. */
export async function listLocalDocs(root: string, limit = Number.POSITIVE_INFINITY): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (out.length >= limit) return;
      if (e.name.startsWith('.')) continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile() && isDocFile(e.name)) {
        const st = await stat(p).catch(() => null);
        if (st !== null && st.size > 0 && st.size <= MAX_BYTES) out.push(p);
      }
    }
  };
  await walk(root);
  return out;
}

/** The files as crawled documents, read lazily. */
export async function* localDocuments(root: string, files: readonly string[]): AsyncGenerator<CrawledDoc> {
  for (const f of files) {
    const content = await readFile(f).catch(() => null);
    if (content !== null) yield { url: localUrl(root, f), content };
  }
}
