import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { locateSyntaxError, syntaxErrorLocation } from './syntax-error-location.js';

const dir = mkdtempSync(join(tmpdir(), 'syntax-error-location-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * What Node's own import() of the file throws (the test runner's import parses modules itself,
 * with errors of its own): imported in a child, the error rebuilt with its class, message and stack.
 */
function importError(file: string, source: string): { url: string; error: unknown } {
  writeFileSync(join(dir, file), source);
  const url = pathToFileURL(join(dir, file)).href;
  const probe =
    'try { await import(process.argv[1]); } catch (e) { process.stdout.write(JSON.stringify({ name: e.name, message: e.message, stack: e.stack })); }';
  const r = spawnSync(process.execPath, ['--input-type=module', '--eval', probe, url], { encoding: 'utf8', timeout: 30_000 });
  const thrown = JSON.parse(r.stdout) as { name: string; message: string; stack: string };
  const error = thrown.name === 'SyntaxError' ? new SyntaxError(thrown.message) : new Error(thrown.message);
  error.stack = thrown.stack;
  return { url, error };
}

describe("syntaxErrorLocation: the location in Node's decorated text of a syntax error", () => {
  it('reads path:line and the caret column, from a file: URL (decoded) or a path, with or without the empty line', () => {
    const esm =
      "file:///tmp/a%20b/x.mjs:2\n  const x = ;\n            ^\n\nSyntaxError: Unexpected token ';'\n    at compileSourceTextModule (node:internal/modules/esm/utils:346:16)";
    expect(syntaxErrorLocation(esm, "Unexpected token ';'")).toBe('/tmp/a b/x.mjs:2:13');
    const link =
      "file:///tmp/x.mjs:7\nimport { nope } from './y.mjs';\n         ^^^^\nSyntaxError: The requested module './y.mjs' does not provide an export named 'nope'";
    expect(syntaxErrorLocation(link, "The requested module './y.mjs' does not provide an export named 'nope'")).toBe('/tmp/x.mjs:7:10');
    // The caret line copies the source line's tabs: one tab is one column.
    expect(syntaxErrorLocation("/tmp/c.cjs:3\n\tlet = = 1;\n\t      ^\n\nSyntaxError: Unexpected token '='", "Unexpected token '='")).toBe(
      '/tmp/c.cjs:3:8',
    );
  });

  it('is null for text without a location, or whose location is of another error', () => {
    expect(
      syntaxErrorLocation(
        "SyntaxError: Unexpected token ';'\n    at compileSourceTextModule (node:internal/modules/esm/utils:346:16)",
        "Unexpected token ';'",
      ),
    ).toBeNull();
    expect(
      syntaxErrorLocation("file:///tmp/x.mjs:2\n  a b\n    ^\n\nSyntaxError: Unexpected identifier 'b'", "Unexpected token ';'"),
    ).toBeNull();
    expect(syntaxErrorLocation('', 'anything')).toBeNull();
  });
});

describe('locateSyntaxError: where an import() failed on a syntax error', () => {
  it("an ES module's syntax error, whose stack does not say where: file, line and column", async () => {
    const { url, error } = importError('esm.mjs', 'export default () => {\n  // fine so far\n  return 1 +;\n};\n');
    expect(error).toBeInstanceOf(SyntaxError);
    expect((error as Error).stack).not.toContain('esm.mjs'); // what this works around (nodejs/node#49441)
    expect(await locateSyntaxError(url, error)).toBe(`${join(dir, 'esm.mjs')}:3:13`);
  });

  it('in a module the imported one imports: that module, not the one imported', async () => {
    writeFileSync(join(dir, 'broken.mjs'), 'export const a = 1;\nexport const b = ;\n');
    const { url, error } = importError('outer.mjs', "import { a } from './broken.mjs';\nexport default () => a;\n");
    expect(await locateSyntaxError(url, error)).toBe(`${join(dir, 'broken.mjs')}:2:18`);
  });

  it("a CommonJS module's, from its stack", async () => {
    const { url, error } = importError('cjs.cjs', 'module.exports = 1;\nmodule.exports = = 2;\n');
    expect(await locateSyntaxError(url, error)).toBe(`${join(dir, 'cjs.cjs')}:2:18`);
  });

  it('never runs the module to find out (a syntax error not found again is no location)', async () => {
    // As if the module were fixed between the import and the look: the child parses it without an error.
    const marker = join(dir, 'ran');
    writeFileSync(join(dir, 'runs.mjs'), `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'x');\n`);
    const loaderOnly = new SyntaxError("Unexpected token ';'");
    loaderOnly.stack = "SyntaxError: Unexpected token ';'\n    at compileSourceTextModule (node:internal/modules/esm/utils:346:16)";
    expect(await locateSyntaxError(pathToFileURL(join(dir, 'runs.mjs')).href, loaderOnly)).toBeNull();
    expect(existsSync(marker)).toBe(false);
  });

  it('is null for errors that are not syntax errors, or whose stack names where they were thrown', async () => {
    const { url, error } = importError('throws.mjs', 'JSON.parse("{");\n');
    expect(error).toBeInstanceOf(SyntaxError);
    expect(await locateSyntaxError(url, error)).toBeNull(); // its stack's frames say where: the caller reads them
    expect(await locateSyntaxError(url, new Error('boom'))).toBeNull();
  });
});
