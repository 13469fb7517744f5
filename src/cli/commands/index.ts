/**
 * Every subcommand registers itself here. One file per command (or command group member), each
 * exporting a `register(program)` function.
 */
import type { Command } from 'commander';
import { register as benchClumping } from './bench-clumping.js';
import { register as benchLatency } from './bench-latency.js';
import { register as benchOverhead } from './bench-overhead.js';
import { register as benchPairs } from './bench-pairs.js';
import { register as benchPeers } from './bench-peers.js';
import { register as benchStore } from './bench-store.js';
import { register as benchWebindex } from './bench-webindex.js';
import { register as checkBank } from './check-bank.js';
import { register as checkDurability } from './check-durability.js';
import { register as checkNotify } from './check-notify.js';
import { register as demo } from './demo.js';
import { register as get } from './get.js';
import { register as oracle } from './oracle.js';
import { register as scan } from './scan.js';
import { register as search } from './search.js';
import { register as serve } from './serve.js';
import { register as wait } from './wait.js';
import { register as worker } from './worker.js';

export type RegisterCommand = (program: Command) => void;

export const commands: RegisterCommand[] = [
  demo,
  search,
  get,
  scan,
  benchStore,
  benchOverhead,
  benchClumping,
  benchLatency,
  benchWebindex,
  benchPeers,
  benchPairs,
  checkDurability,
  checkBank,
  checkNotify,
  oracle,
  serve,
  worker,
  wait,
];
