/**
 * Which command files a command line needs (commands/index.ts): the one that registers the
 * command it names — `get …` loads get.ts, `check bank …` check-bank.ts — so that a command starts
 * without loading every layer the others use.
 *
 * Invariant: commander answers exactly as it would with every file loaded. Where its answer
 * depends on more than the one command, more are loaded: every file for the top-level help,
 * `help`, --version, an option before any command and an unknown command (commander suggests a
 * known one); every member of a group for the group alone, its help, an option of its own or an
 * unknown member (the group's help lists its members, the suggestion picks among them).
 *
 * Only the first words are looked at, as commander looks at them: with positional options
 * (program.ts), the program's options come before the command and a group's before its member.
 */
import { type CommandFile, commandFiles } from './commands/index.js';

export function pickCommandFiles(args: readonly string[], files: readonly CommandFile[] = commandFiles): readonly CommandFile[] {
  const [first, second] = args;
  if (first === undefined || first.startsWith('-')) return files;
  const named = files.filter((f) => f.paths.some((p) => p.length === 1 && p[0] === first));
  if (named.length > 0) return named;
  const group = files.filter((f) => f.paths.some((p) => p.length === 2 && p[0] === first));
  if (group.length === 0) return files;
  if (second === undefined || second.startsWith('-')) return group;
  const member = group.filter((f) => f.paths.some((p) => p.length === 2 && p[0] === first && p[1] === second));
  return member.length > 0 ? member : group;
}
