/**
 * Every subcommand registers itself here. One file per command (or command group), each
 * exporting a `register(program)` function.
 */
import type { Command } from 'commander';

export type RegisterCommand = (program: Command) => void;

export const commands: RegisterCommand[] = [];
