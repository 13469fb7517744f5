/**
 * Every subcommand registers itself here. One file per command (or command group member), each
 * exporting a `register(program)` function.
 */
import type { Command } from 'commander';
import { register as benchOverhead } from './bench-overhead.js';
import { register as benchStore } from './bench-store.js';
import { register as checkDurability } from './check-durability.js';
import { register as demo } from './demo.js';
import { register as oracle } from './oracle.js';
import { register as scan } from './scan.js';
import { register as wait } from './wait.js';
import { register as worker } from './worker.js';

export type RegisterCommand = (program: Command) => void;

export const commands: RegisterCommand[] = [demo, scan, benchStore, benchOverhead, checkDurability, oracle, worker, wait];
