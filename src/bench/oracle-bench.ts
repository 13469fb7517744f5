/**
 * `percolator bench oracle`: timestamps per second from the oracle.
 *
 * - in-process: `callers` concurrent async callers of `Oracle.getTimestamp()` (file mark).
 * - loopback (the headline number, `mode: "loopback"`): an oracle server on 127.0.0.1 (in this
 *   process, or a child with `serverProcess`) and `clients` client PROCESSES
 *   (dist/bench/oracle-load-client.js), each one `OracleClient` with `callers` concurrent callers
 *   awaiting `getTimestamp()` in a loop. All clients start together on an IPC signal and run for
 *   `seconds`; the rate is the sum of their counts divided by the longest elapsed time.
 *
 * Every client checks that what it receives strictly increases (`monotonicViolations`, must be 0).
 * Client processes run with `--max-semi-space-size=32` (fewer young-generation GCs: each call
 * allocates a promise).
 * Needs `npm run build` first (the client processes run the built JS).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileMarkStore } from '../oracle/mark-store.js';
import { Oracle } from '../oracle/oracle.js';
import { type OracleServer, startOracleServer } from '../oracle/server.js';
import { renderBarChart } from './svg-plot.js';

export interface OracleBenchOptions {
  readonly seconds: number;
  /** Client processes (default 2). */
  readonly clients?: number;
  /** Concurrent callers per client process (default 2000). */
  readonly callers?: number;
  /** Seconds of the in-process measurement (default min(seconds, 2); 0 skips it). */
  readonly inProcessSeconds?: number;
  /** Run the server in its own child process instead of this one. */
  readonly serverProcess?: boolean;
}

export interface OracleBenchResult {
  readonly timestampsPerSecond: number;
  readonly clients: number;
  readonly mode: 'loopback';
  readonly callersPerClient: number;
  readonly seconds: number;
  readonly serverProcess: boolean;
  readonly totalTimestamps: number;
  readonly requests: number;
  readonly averageBatch: number;
  readonly largestBatch: number;
  readonly monotonicViolations: number;
  readonly errors: number;
  readonly perClient: readonly number[];
  readonly inProcessTimestampsPerSecond: number;
  readonly inProcessCallers: number;
}

interface ClientResult {
  type: 'result';
  count: number;
  elapsedMs: number;
  violations: number;
  errors: number;
  requests: number;
  largestBatch: number;
}

/** Resolves a built script under dist/ (works from src/ under vitest and from dist/). */
export function distScript(name: string): string {
  const file = fileURLToPath(new URL(`../../dist/bench/${name}`, import.meta.url));
  if (!existsSync(file)) {
    throw Object.assign(new Error(`${file} is missing: run \`npm run build\` first`), { code: 'BUILD_MISSING' });
  }
  return file;
}

export async function runInProcessOracleBench(seconds: number, callers = 1000): Promise<number> {
  const dir = mkdtempSync(path.join(tmpdir(), 'percolator-oracle-bench-'));
  const oracle = await Oracle.open({ markStore: new FileMarkStore(path.join(dir, 'oracle.mark')) });
  try {
    // In-process timestamps resolve at once, so the callers never yield to timers: they watch
    // the clock themselves (every 1024 timestamps).
    const run = async (ms: number): Promise<number> => {
      let count = 0;
      let running = true;
      const end = performance.now() + ms;
      const caller = async (): Promise<void> => {
        while (running) {
          await oracle.getTimestamp();
          if ((++count & 1023) === 0 && performance.now() >= end) running = false;
        }
      };
      const started = performance.now();
      const all: Promise<void>[] = [];
      for (let i = 0; i < callers; i++) all.push(caller());
      await Promise.all(all);
      return count / ((performance.now() - started) / 1000);
    };
    await run(200); // warm-up: the JIT compiles the hot path
    return await run(seconds * 1000);
  } finally {
    await oracle.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function waitMessage<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onMessage = (msg: { type?: string }): void => {
      if (msg?.type === type) {
        cleanup();
        resolve(msg as T);
      }
    };
    const onExit = (code: number | null): void => {
      cleanup();
      reject(new Error(`child ${child.pid} exited (${code}) before sending '${type}'`));
    };
    const cleanup = (): void => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

export async function runOracleBench(options: OracleBenchOptions): Promise<OracleBenchResult> {
  const clients = options.clients ?? 2;
  const callers = options.callers ?? 2000;
  const serverProcess = options.serverProcess ?? false;
  const clientScript = distScript('oracle-load-client.js');
  const dir = mkdtempSync(path.join(tmpdir(), 'percolator-oracle-bench-'));
  const children: ChildProcess[] = [];
  let server: OracleServer | null = null;
  try {
    let port: number;
    if (serverProcess) {
      const child = fork(distScript('oracle-server-child.js'), [JSON.stringify({ port: 0, mark: path.join(dir, 'oracle.mark') })], {
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
      children.push(child);
      port = (await waitMessage<{ port: number }>(child, 'listening')).port;
    } else {
      server = await startOracleServer({ port: 0, markStore: new FileMarkStore(path.join(dir, 'oracle.mark')) });
      port = server.port;
    }
    const clientProcs: ChildProcess[] = [];
    for (let i = 0; i < clients; i++) {
      const child = fork(clientScript, [JSON.stringify({ port, callers, mode: 'count' })], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        // One promise per call: a larger young generation means fewer scavenges (~5-10 %).
        execArgv: [...process.execArgv, '--max-semi-space-size=32'],
      });
      children.push(child);
      clientProcs.push(child);
    }
    await Promise.all(clientProcs.map((c) => waitMessage(c, 'ready')));
    const results = clientProcs.map((c) => waitMessage<ClientResult>(c, 'result'));
    for (const c of clientProcs) c.send({ type: 'start', seconds: options.seconds });
    const done = await Promise.all(results);

    const total = done.reduce((s, r) => s + r.count, 0);
    const maxElapsed = Math.max(...done.map((r) => r.elapsedMs)) / 1000;
    const requests = done.reduce((s, r) => s + r.requests, 0);
    await server?.close();
    server = null;
    const inProcessSeconds = options.inProcessSeconds ?? Math.min(options.seconds, 2);
    const inProcess = inProcessSeconds > 0 ? await runInProcessOracleBench(inProcessSeconds) : 0;
    return {
      timestampsPerSecond: Math.round(total / maxElapsed),
      clients,
      mode: 'loopback',
      callersPerClient: callers,
      seconds: options.seconds,
      serverProcess,
      totalTimestamps: total,
      requests,
      averageBatch: requests > 0 ? Math.round(total / requests) : 0,
      largestBatch: Math.max(...done.map((r) => r.largestBatch)),
      monotonicViolations: done.reduce((s, r) => s + r.violations, 0),
      errors: done.reduce((s, r) => s + r.errors, 0),
      perClient: done.map((r) => Math.round(r.count / (r.elapsedMs / 1000))),
      inProcessTimestampsPerSecond: Math.round(inProcess),
      inProcessCallers: 1000,
    };
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Loopback vs in-process rate against the paper's 2 M/s, as a bar chart. */
export function oracleSvg(r: OracleBenchResult): string {
  return renderBarChart({
    title: `Timestamp oracle: ${r.clients} client processes x ${r.callersPerClient} callers, average batch ${r.averageBatch}`,
    yLabel: 'timestamps/s',
    categories: ['loopback (TCP)', 'in-process'],
    series: [
      { name: 'measured', values: [r.timestampsPerSecond, r.inProcessTimestampsPerSecond] },
      { name: 'paper (2 M/s, one machine)', values: [2_000_000, 2_000_000] },
    ],
    logY: true,
  });
}
