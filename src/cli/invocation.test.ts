/**
 * cliCommand: a hint names the command that runs this program from where it was printed — never
 * `npx percolator` where npx would fetch the registry's unrelated package of that name. Each case
 * is a directory layout in a scratch directory (a package, a project that installed it, a project
 * that installed another `percolator`, a directory with neither, a global bin, npx's own bin).
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Invocation, cliCommand } from './invocation.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A scratch directory holding a package `percolator` (this program) at `pkg/`. */
function layout(): { root: string; pkg: string; main: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'invocation-')));
  dirs.push(root);
  const pkg = join(root, 'pkg');
  mkdirSync(join(pkg, 'dist', 'cli'), { recursive: true });
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'percolator', bin: { percolator: 'dist/cli/main.js' } }));
  const main = join(pkg, 'dist', 'cli', 'main.js');
  writeFileSync(main, '');
  return { root, pkg, main };
}

function project(root: string, name: string, binTarget: string | null): string {
  const dir = join(root, name);
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name }));
  if (binTarget !== null) symlinkSync(binTarget, join(dir, 'node_modules', '.bin', 'percolator'));
  return dir;
}

function projectAbove(dir: string): boolean {
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(join(d, 'package.json')) || existsSync(join(d, 'node_modules'))) return true;
    if (dirname(d) === d) return false;
  }
}

const started = (main: string, cwd: string, more: Partial<Invocation> = {}): Invocation => ({ cwd, main, argv1: main, path: '', ...more });

describe('cliCommand', () => {
  it('is npx percolator inside the package itself (a checkout), at any depth', () => {
    const { pkg, main } = layout();
    expect(cliCommand(started(main, pkg))).toBe('npx percolator');
    expect(cliCommand(started(main, join(pkg, 'dist', 'cli')))).toBe('npx percolator');
  });

  it('is npx percolator in a project whose node_modules/.bin/percolator is this program', () => {
    const { root, main } = layout();
    const app = project(root, 'app', main);
    mkdirSync(join(app, 'src'));
    expect(cliCommand(started(main, join(app, 'src')))).toBe('npx percolator');
  });

  it("is node <main.js> where npx would run another percolator, or fetch the registry's", () => {
    const { root, main } = layout();
    const other = join(root, 'other-percolator.js');
    writeFileSync(other, '');
    expect(cliCommand(started(main, project(root, 'app', other)))).toBe(`node ${main}`);
    // A project without it: npx would look it up in the registry.
    expect(cliCommand(started(main, project(root, 'bare', null)))).toBe(`node ${main}`);
    // A package named percolator that is not this one.
    const impostor = join(root, 'impostor');
    mkdirSync(join(impostor, 'dist', 'cli'), { recursive: true });
    writeFileSync(join(impostor, 'package.json'), JSON.stringify({ name: 'percolator', bin: { percolator: 'dist/cli/main.js' } }));
    writeFileSync(join(impostor, 'dist', 'cli', 'main.js'), '');
    expect(cliCommand(started(main, impostor))).toBe(`node ${main}`);
  });

  // Only where the temp directory has no project above it (npx from there goes to the registry).
  it.skipIf(projectAbove(realpathSync(tmpdir())))('is node <main.js> in a directory with no project above it', () => {
    const { root, main } = layout();
    const plain = join(root, 'plain');
    mkdirSync(plain);
    expect(cliCommand(started(main, plain))).toBe(`node ${main}`);
  });

  it("is percolator when started as the PATH's percolator (a global install)", () => {
    const { root, main } = layout();
    const bin = join(root, 'bin');
    mkdirSync(bin);
    symlinkSync(main, join(bin, 'percolator'));
    const plain = join(root, 'plain');
    mkdirSync(plain);
    const global = { argv1: join(bin, 'percolator'), path: `/nonexistent-dir:${bin}` };
    expect(cliCommand(started(main, plain, global))).toBe('percolator');
    // Another percolator first on the PATH: that one would run.
    const shadow = join(root, 'shadow');
    mkdirSync(shadow);
    writeFileSync(join(shadow, 'percolator'), '');
    expect(cliCommand(started(main, plain, { ...global, path: `${shadow}:${bin}` }))).toBe(`node ${main}`);
  });

  it("is npx percolator when npx started it: the node_modules/.bin npx puts first on the PATH is not the shell's", () => {
    const { root, pkg, main } = layout();
    // In a checkout npx links the package into its cache and runs it from there.
    const cacheBin = join(root, 'npx-cache', 'node_modules', '.bin');
    mkdirSync(cacheBin, { recursive: true });
    symlinkSync(main, join(cacheBin, 'percolator'));
    const fromCache = { argv1: join(cacheBin, 'percolator'), path: `${cacheBin}:${join(pkg, 'node_modules', '.bin')}:/usr/bin` };
    expect(cliCommand(started(main, pkg, fromCache))).toBe('npx percolator');
    // In a project that installed it: its own node_modules/.bin.
    const app = project(root, 'app', main);
    const appBin = join(app, 'node_modules', '.bin');
    expect(cliCommand(started(main, app, { argv1: join(appBin, 'percolator'), path: `${appBin}:/usr/bin` }))).toBe('npx percolator');
    // A global install still wins where the shell's PATH has it.
    const bin = join(root, 'bin');
    mkdirSync(bin);
    symlinkSync(main, join(bin, 'percolator'));
    expect(cliCommand(started(main, app, { argv1: join(appBin, 'percolator'), path: `${appBin}:${bin}` }))).toBe('percolator');
  });

  it('quotes a path the shell would split', () => {
    const { root } = layout();
    const spaced = join(root, "my app's dir");
    mkdirSync(join(spaced, 'dist', 'cli'), { recursive: true });
    const main = join(spaced, 'dist', 'cli', 'main.js');
    writeFileSync(main, '');
    const plain = join(root, 'plain');
    mkdirSync(plain);
    expect(cliCommand(started(main, plain))).toBe(`node '${main.replace("'", "'\\''")}'`);
  });
});
