/**
 * The command files a command line loads (pick-commands.ts) and the table they are picked from
 * (commands/index.ts): each file registers exactly the commands the table says, in the table's
 * order; and a command's help, or a group's, is the same text from the files picked for it as from
 * every file — the help a user reads does not depend on what was loaded.
 */
import type { Command } from 'commander';
import { beforeAll, expect, it } from 'vitest';
import { type CommandFile, type RegisterCommand, commandFiles } from './commands/index.js';
import { pickCommandFiles } from './pick-commands.js';
import { percolatorProgram } from './program.js';

const registers = new Map<CommandFile, RegisterCommand>();
beforeAll(async () => {
  for (const f of commandFiles) registers.set(f, (await f.load()).register);
}, 60_000);

const programOf = (files: readonly CommandFile[]): Command => percolatorProgram(files.map((f) => registers.get(f)!));

/** Every command that has no subcommands, as its path: `['get']`, `['check', 'bank']`. */
function leafPaths(cmd: Command, prefix: string[] = []): string[][] {
  return cmd.commands.flatMap((c) => (c.commands.length === 0 ? [[...prefix, c.name()]] : leafPaths(c, [...prefix, c.name()])));
}

function find(program: Command, path: readonly string[]): Command {
  let cmd = program;
  for (const name of path) {
    const next = cmd.commands.find((c) => c.name() === name);
    if (next === undefined) throw new Error(`no command ${path.join(' ')}`);
    cmd = next;
  }
  return cmd;
}

const names = (files: readonly CommandFile[]) => files.map((f) => f.paths.map((p) => p.join(' ')).join(' + '));

it('each file registers exactly the commands the table gives it', () => {
  for (const f of commandFiles) expect(leafPaths(programOf([f])), names([f])[0]).toEqual(f.paths);
});

it('the table order is the registration order: every command, as the top-level help lists them', () => {
  expect(programOf(commandFiles).commands.map((c) => c.name())).toEqual([
    'demo',
    'search',
    'get',
    'scan',
    'set',
    'delete',
    'notify',
    'bench',
    'check',
    'oracle',
    'serve',
    'worker',
    'load',
    'wait',
    'verify',
  ]);
});

it('a command line naming a command loads its file only', () => {
  expect(names(pickCommandFiles(['get', 't', 'r', 'c:v']))).toEqual(['get']);
  expect(names(pickCommandFiles(['get', '--help']))).toEqual(['get']);
  expect(names(pickCommandFiles(['scan']))).toEqual(['scan']);
  expect(names(pickCommandFiles(['set', 't', 'r', 'c:v', '-']))).toEqual(['set']);
  expect(names(pickCommandFiles(['delete', 't', 'r', 'c:v']))).toEqual(['delete']);
  expect(names(pickCommandFiles(['notify', 't', 'c:v', '--prefix', 'a']))).toEqual(['notify']);
  expect(names(pickCommandFiles(['check', 'bank', '--seconds', '1']))).toEqual(['check bank']);
  expect(names(pickCommandFiles(['bench', 'oracle']))).toEqual(['oracle + bench oracle']);
  expect(names(pickCommandFiles(['oracle', '--port', '0']))).toEqual(['oracle + bench oracle']);
});

it('a group alone, its help, an option of its own or an unknown member loads the whole group', () => {
  const check = ['check durability', 'check bank', 'check notify'];
  expect(names(pickCommandFiles(['check']))).toEqual(check);
  expect(names(pickCommandFiles(['check', '--help']))).toEqual(check);
  expect(names(pickCommandFiles(['check', 'help', 'bank']))).toEqual(check);
  expect(names(pickCommandFiles(['check', 'bnk']))).toEqual(check);
  expect(names(pickCommandFiles(['bench', '-h']))).toContain('oracle + bench oracle');
});

it('the top-level help, help, --version, an option first or an unknown command loads every file', () => {
  for (const args of [[], ['--help'], ['help'], ['help', 'get'], ['--version'], ['-V'], ['--bogus', 'get'], ['gte'], ['--', 'get']]) {
    expect(pickCommandFiles(args), JSON.stringify(args)).toBe(commandFiles);
  }
});

it("a command's help, and a group's, is the same from the files picked for it as from every file", () => {
  const full = programOf(commandFiles);
  const paths = [...commandFiles.flatMap((f) => f.paths), ['bench'], ['check']];
  for (const path of paths) {
    const picked = programOf(pickCommandFiles(path));
    expect(find(picked, path).helpInformation(), path.join(' ')).toBe(find(full, path).helpInformation());
  }
});
