/**
 * Multi-process oracle tests (built JS under dist/; `npm test` builds first):
 * - several client processes with many concurrent callers each: every timestamp is recorded and
 *   checked — strictly increasing per client (in the order received) and unique across clients;
 * - the oracle server is killed with SIGKILL (and also restarted cleanly) during load and
 *   restarted on the same port: nothing repeats or decreases, clients carry on by themselves,
 *   and the durable mark covers every timestamp ever handed out.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOracleBench } from '../src/bench/oracle-bench.js';
import { decodeMark } from '../src/oracle/mark-store.js';

const distBench = fileURLToPath(new URL('../dist/bench/', import.meta.url));
const serverScript = path.join(distBench, 'oracle-server-child.js');
const clientScript = path.join(distBench, 'oracle-load-client.js');

let dir: string;
const children = new Set<ChildProcess>();

beforeAll(() => {
  if (!existsSync(serverScript) || !existsSync(clientScript)) {
    throw new Error(`${distBench} is not built: run \`npm run build\` (npm test does it in pretest)`);
  }
  dir = mkdtempSync(path.join(tmpdir(), 'oracle-mp-'));
});
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function message<T>(child: ChildProcess, type: string, timeoutMs = 15_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no '${type}' from child ${child.pid} within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (msg: { type?: string }): void => {
      if (msg?.type === type) {
        cleanup();
        resolve(msg as T);
      }
    };
    const onExit = (code: number | null, signal: string | null): void => {
      cleanup();
      reject(new Error(`child ${child.pid} exited (${code ?? signal}) before '${type}'`));
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

interface Listening {
  port: number;
  loadedMark: number;
}

async function startServer(mark: string, port = 0, fixedClockMicros?: number): Promise<{ child: ChildProcess; info: Listening }> {
  const child = fork(serverScript, [JSON.stringify({ port, mark, fixedClockMicros })], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  children.add(child);
  const info = await message<Listening>(child, 'listening');
  return { child, info };
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

interface ClientResult {
  count: number;
  violations: number;
  errors: number;
  errorCodes: Record<string, number>;
  connects: number;
}

async function startClient(port: number, callers: number, file: string): Promise<ChildProcess> {
  const child = fork(clientScript, [JSON.stringify({ port, callers, mode: 'record', file, timeoutMs: 10_000 })], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.add(child);
  await message(child, 'ready');
  child.send({ type: 'start' });
  return child;
}

async function progress(child: ChildProcess): Promise<number> {
  const reply = message<{ count: number }>(child, 'progress');
  child.send({ type: 'progress' });
  return (await reply).count;
}

/** Polls until every client has received at least `min` more timestamps than `base`. */
async function advanced(clients: ChildProcess[], base: number[], min: number, what: string): Promise<number[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const counts = await Promise.all(clients.map(progress));
    if (counts.every((c, i) => c >= base[i] + min)) return counts;
    if (Date.now() > deadline) throw new Error(`clients did not advance (${what}): ${base} → ${counts}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function stopClients(clients: ChildProcess[]): Promise<ClientResult[]> {
  const results = clients.map((c) => message<ClientResult>(c, 'result'));
  for (const c of clients) c.send({ type: 'stop' });
  const out = await Promise.all(results);
  await Promise.all(clients.map(exited));
  return out;
}

function load(file: string): Float64Array {
  const b = readFileSync(file);
  return new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/** Checks per-client strict increase and global uniqueness; returns the global maximum. */
function checkAll(files: string[], results: ClientResult[]): number {
  let total = 0;
  const perClient = files.map(load);
  perClient.forEach((ts, k) => {
    expect(ts.length, `client ${k} count`).toBe(results[k].count);
    let bad = -1;
    for (let i = 1; i < ts.length; i++) {
      if (!(ts[i] > ts[i - 1])) {
        bad = i;
        break;
      }
    }
    expect(bad, `client ${k}: first non-increasing index`).toBe(-1);
    expect(results[k].violations).toBe(0);
    total += ts.length;
  });
  const all = new Float64Array(total);
  let off = 0;
  for (const ts of perClient) {
    all.set(ts, off);
    off += ts.length;
  }
  all.sort();
  let dup = -1;
  for (let i = 1; i < all.length; i++) {
    if (all[i] === all[i - 1]) {
      dup = all[i];
      break;
    }
  }
  expect(dup, 'a timestamp handed out twice').toBe(-1);
  expect(Number.isSafeInteger(all[all.length - 1])).toBe(true);
  return all[all.length - 1];
}

describe('oracle across processes', () => {
  it('many concurrent callers in several processes: strictly increasing per client, globally unique', async () => {
    const mark = path.join(dir, 'mono.mark');
    const { child: server, info } = await startServer(mark);
    const files = [0, 1, 2].map((i) => path.join(dir, `mono-${i}.bin`));
    const clients = await Promise.all(files.map((f) => startClient(info.port, 100, f)));
    await advanced(clients, [0, 0, 0], 100_000, 'load');
    const results = await stopClients(clients);
    const max = checkAll(files, results);
    expect(results.every((r) => r.errors === 0)).toBe(true);
    server.kill('SIGTERM');
    await exited(server);
    expect(decodeMark(readFileSync(mark, 'latin1'), mark)).toBeGreaterThanOrEqual(max);
  });

  it('kill -9 and restarts of the oracle during load: no timestamp ever repeats or decreases', async () => {
    const mark = path.join(dir, 'crash.mark');
    // The clock is frozen (as if it stopped or went back at every restart): only the durable
    // mark can keep a restarted oracle above what it handed out before.
    const clock = 1_000_000;
    let { child: server, info } = await startServer(mark, 0, clock);
    const port = info.port;
    const files = [0, 1, 2].map((i) => path.join(dir, `crash-${i}.bin`));
    const clients = await Promise.all(files.map((f) => startClient(port, 50, f)));
    let counts = await advanced(clients, [0, 0, 0], 20_000, 'before the first crash');
    const loadedMarks: number[] = [];

    for (const how of ['SIGKILL', 'SIGTERM', 'SIGKILL'] as const) {
      server.kill(how);
      await exited(server);
      ({ child: server, info } = await startServer(mark, port, clock));
      loadedMarks.push(info.loadedMark);
      counts = await advanced(clients, counts, 20_000, `after ${how} and restart`);
    }
    const results = await stopClients(clients);
    const max = checkAll(files, results);
    for (const r of results) {
      expect(r.errors, JSON.stringify(r.errorCodes)).toBe(0); // in-flight requests were re-sent
      expect(r.connects).toBeGreaterThanOrEqual(4);
    }
    // Each incarnation started above the previous one's reservation…
    for (let i = 1; i < loadedMarks.length; i++) expect(loadedMarks[i]).toBeGreaterThan(loadedMarks[i - 1]);
    // …and the durable mark covers everything ever handed out.
    server.kill('SIGKILL');
    await exited(server);
    expect(decodeMark(readFileSync(mark, 'latin1'), mark)).toBeGreaterThanOrEqual(max);
  });

  it('bench oracle reports the fields the acceptance check reads', async () => {
    const r = await runOracleBench({ seconds: 0.5, clients: 2, callers: 200, inProcessSeconds: 0.2 });
    expect(r).toMatchObject({ clients: 2, mode: 'loopback', monotonicViolations: 0, errors: 0 });
    expect(r.timestampsPerSecond).toBeGreaterThan(10_000);
    expect(r.inProcessTimestampsPerSecond).toBeGreaterThan(10_000);
    expect(r.perClient.length).toBe(2);
  });
});
