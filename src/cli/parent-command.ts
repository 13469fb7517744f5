/**
 * Command groups (`bench`, `check`) are shared by several command files: each finds the group or
 * creates it, so registration order does not matter.
 */
import type { Command } from 'commander';
import { UsageError } from './usage-error.js';

const descriptions: Record<string, string> = {
  bench: 'benchmarks (programs, not tests): store, oracle, overhead, latency, webindex, peers; pairs (a build against a baseline)',
  check: 'crash-injection checkers that prove the guarantees: durability, bank, notify',
};

export function commandGroup(program: Command, name: string): Command {
  return program.commands.find((c) => c.name() === name) ?? program.command(name).description(descriptions[name] ?? name);
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

export function parsePositiveNumber(name: string) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number, got ${raw}`);
    return n;
  };
}

export function parsePositiveInteger(name: string) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer, got ${raw}`);
    return n;
  };
}

/** A TCP port to listen on: an integer in [1, 65535] (checked before anything else happens). */
export function parsePortNumber(name: string) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw new UsageError(`--${name} must be an integer in [1, 65535], got ${raw}`);
    return n;
  };
}

export function parseNonNegativeInteger(name: string) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a non-negative integer, got ${raw}`);
    return n;
  };
}
