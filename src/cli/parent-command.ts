/**
 * Command groups (`bench`, `check`) are shared by several command files: each finds the group or
 * creates it, so registration order does not matter. A group's description lists its members as
 * registered (`describeGroups`, once all are): a list written by hand fell behind (it missed
 * `bench clumping`).
 *
 * Also the number options' parsers every command shares: each rejects what is not a number of its
 * range written in plain decimal — blank text, hex, exponents included — as a UsageError
 * (INVALID_ARGUMENT, exit 1), never a default or 0.
 */
import type { Command } from 'commander';
import { MAX_TIMER_MS } from '../util/timer-ms.js';
import { UsageError } from './usage-error.js';

const groups: Record<string, { readonly summary: string; readonly notes?: Readonly<Record<string, string>> }> = {
  bench: { summary: 'benchmarks (programs, not tests)', notes: { pairs: 'pairs (a build against a baseline)' } },
  check: { summary: 'crash-injection checkers that prove the guarantees' },
};

export function commandGroup(program: Command, name: string): Command {
  return program.commands.find((c) => c.name() === name) ?? program.command(name).description(groups[name]?.summary ?? name);
}

/** Sets each group's description to its summary and the subcommands registered in it. */
export function describeGroups(program: Command): void {
  for (const [name, g] of Object.entries(groups)) {
    const group = program.commands.find((c) => c.name() === name);
    if (group === undefined) continue;
    group.description(`${g.summary}: ${group.commands.map((c) => g.notes?.[c.name()] ?? c.name()).join(', ')}`);
  }
}

/** Prints a result: one JSON object with --json, else an aligned key/value listing. */
export function printResult(result: object, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  const print = (obj: object, indent: string): void => {
    for (const [k, v] of Object.entries(obj)) {
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
        process.stdout.write(`${indent}${k}:\n`);
        print(v, `${indent}  `);
      } else {
        process.stdout.write(`${indent}${k.padEnd(30)} ${Array.isArray(v) ? JSON.stringify(v) : String(v)}\n`);
      }
    }
  };
  print(result, '');
}

/**
 * The number an option's value writes in plain decimal — digits, and for a `decimal` a fraction
 * (`0.5`, `.5`) — else NaN, which every parser below rejects. `Number()` read forms nobody means
 * on a command line: `0x10` (16), `1e3`, `Infinity`, ` 5 ` with its spaces, and blank text as 0
 * (`--port ''`, an unset shell variable, picked a free port; `--seed ''` ran seed 0). No option
 * takes a negative number, so no sign is plain either: `-5` and `+5` are rejected as their range
 * would reject them, and `-0` is not 0. An integer past 2^53 - 1 is NaN too (it would not be the
 * integer written), and so is a decimal too long to be finite.
 */
export function numberOf(raw: string, kind: 'integer' | 'decimal'): number {
  if (!(kind === 'integer' ? /^\d+$/ : /^(?:\d+(?:\.\d*)?|\.\d+)$/).test(raw)) return Number.NaN;
  const n = Number(raw);
  return (kind === 'integer' ? Number.isSafeInteger(n) : Number.isFinite(n)) ? n : Number.NaN;
}

/** The value given, for a message: quoted when blank or padded, where its spaces would not show. */
export function given(raw: string): string {
  return raw === '' || raw.trim() !== raw ? JSON.stringify(raw) : raw;
}

export function parsePositiveNumber(name: string) {
  return (raw: string): number => {
    const n = numberOf(raw, 'decimal');
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number, got ${given(raw)}`);
    return n;
  };
}

/**
 * Seconds that become a timer (MAX_TIMER_MS, ~24.8 days, at most): checked here so that the
 * message names the option as typed, in seconds — past the bound, the library's check spoke of
 * `timeoutMs` and a value in milliseconds the user never wrote.
 */
export function parseTimerSeconds(name: string) {
  const max = MAX_TIMER_MS / 1000;
  return (raw: string): number => {
    const n = numberOf(raw, 'decimal');
    if (!Number.isFinite(n) || n <= 0 || n > max) {
      throw new UsageError(`--${name} must be a positive number of seconds, at most ${max}, got ${given(raw)}`);
    }
    return n;
  };
}

export function parsePositiveInteger(name: string) {
  return (raw: string): number => {
    const n = numberOf(raw, 'integer');
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer, got ${given(raw)}`);
    return n;
  };
}

/** A TCP port to listen on: an integer in [min, 65535] (0 = "pick one", where a command takes it). */
function checkPort(name: string, raw: string, min: 0 | 1, orOff: string): number {
  const n = numberOf(raw, 'integer');
  if (!Number.isInteger(n) || n < min || n > 65535)
    throw new UsageError(`--${name} must be an integer in [${min}, 65535]${orOff}, got ${given(raw)}`);
  return n;
}

/** A port (checked before anything else happens); `min` 0 where 0 picks a free one. */
export function parsePortNumber(name: string, min: 0 | 1 = 1) {
  return (raw: string): number => checkPort(name, raw, min, '');
}

/** A port, 0 to pick one, or "off" (also "none"). Commander turns a parser's null into '', so "off" is returned as the string. */
export function parsePortOrOff(name: string) {
  return (raw: string): number | 'off' => (raw === 'off' || raw === 'none' ? 'off' : checkPort(name, raw, 0, ' or "off"'));
}

export function parseNonNegativeInteger(name: string) {
  return (raw: string): number => {
    const n = numberOf(raw, 'integer');
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a non-negative integer, got ${given(raw)}`);
    return n;
  };
}
