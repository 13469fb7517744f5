/**
 * A check against a `percolator serve` child that is killed (SIGKILL) in the middle of the check,
 * for the store-gone tests: the server is killed once `progress` appears on the check's stderr
 * (work was done against the store), and the check is given `boundMs` from the kill to exit.
 * Both processes are killed, and `--data` removed, however it ends. Also `runWorkerToItsEnd`: a
 * checker's worker process (dist/check/NAME.js) run alone until it exits, for how it reports the
 * error that ended it.
 */
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnCli, spawnServe } from './cli-process.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const mainJs = join(root, 'dist/cli/main.js');

export interface StoreGoneRun {
  readonly clientUrl: string;
  /** The check's exit code, or 'still running' `boundMs` after the kill. */
  readonly code: number | null | 'still running';
  readonly msAfterKill: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function killServeMidCheck(
  check: readonly string[],
  options: { readonly progress: RegExp; readonly boundMs: number; readonly serveStore: 'memory' | 'data' },
): Promise<StoreGoneRun> {
  const data = options.serveStore === 'data' ? await mkdtemp(join(tmpdir(), 'percolator-store-gone-')) : null;
  const serve = spawnServe(mainJs, [...(data === null ? ['--store', 'memory:'] : ['--data', data]), '--http-port', 'off']);
  try {
    const clientUrl = await serve.clientUrl;
    const child = spawnCli(mainJs, ['check', ...check, '--store', clientUrl]);
    try {
      await Promise.race([
        until(
          () => options.progress.test(child.stderr()),
          () => `${options.progress}; stderr: ${child.stderr()}`,
          60_000,
        ),
        child.exited.then((c) => {
          throw new Error(`check ${check[0]} exited (${c}) before its server was killed: ${child.stderr()}`);
        }),
      ]);
      serve.child.kill('SIGKILL');
      const killedAt = performance.now();
      let bound: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        child.exited,
        new Promise<'still running'>((resolve) => {
          bound = setTimeout(() => resolve('still running'), options.boundMs);
        }),
      ]);
      clearTimeout(bound);
      return { clientUrl, code, msAfterKill: Math.round(performance.now() - killedAt), stdout: child.stdout(), stderr: child.stderr() };
    } finally {
      child.child.kill('SIGKILL');
    }
  } finally {
    serve.child.kill('SIGKILL');
    await serve.exited;
    if (data !== null) await rm(data, { recursive: true, force: true });
  }
}

/** The checker's worker `script` (under dist/check/) run with `cfg` until it exits: its exit code, IPC messages and stderr. */
export async function runWorkerToItsEnd<M>(script: string, cfg: object): Promise<{ code: number | null; messages: M[]; stderr: string }> {
  const child = fork(join(root, 'dist/check', script), [JSON.stringify(cfg)], {
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const messages: M[] = [];
  child.on('message', (m: M) => messages.push(m));
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  return { code, messages, stderr };
}

/** `s` as a literal in a RegExp. */
export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Resolves once `cond()` holds; throws with `what()` after `ms`. */
async function until(cond: () => boolean, what: () => string, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
