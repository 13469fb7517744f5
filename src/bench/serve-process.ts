/**
 * A `percolator serve --data DIR` in a child process of its own, for benchmarks of the
 * several-process deployment (DESIGN §8): `bench webindex --store serve` runs the pipeline in the
 * benchmark's process as a client of it, over `bigtable://`.
 *
 * Ports: the gRPC port P is drawn at random from 20000–59999, with the oracle on P + 2 (where
 * `bigtable://` clients look for it) and no HTTP port; a draw whose ports are taken (the server
 * exits with LISTEN_FAILED) is drawn again, up to MAX_ATTEMPTS times.
 *
 * `serveArgs` are more flags for `percolator serve` (e.g. its cache sizes, `bench soak`).
 *
 * `stop()` sends SIGTERM (a graceful close: in-flight calls finish, the store is flushed) and
 * resolves once the process has exited; `cpuMs()` is the process's CPU so far (user + system,
 * from /proc; null elsewhere).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { procStatCpuMs } from './thread-cpu.js';

export interface ServeProcess {
  readonly port: number;
  readonly pid: number;
  cpuMs(): number | null;
  stop(): Promise<void>;
}

const MAX_ATTEMPTS = 20;

/** Resolves with the child once it printed its `listening` line; rejects with its stderr if it exited first. */
function listening(child: ChildProcess): Promise<void> {
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line.includes('"listening"')) resolve();
    });
    child.once('exit', (code, signal) =>
      reject(Object.assign(new Error(`percolator serve exited (code ${code}, signal ${signal}): ${stderr.trim()}`), { stderr })),
    );
  });
}

export async function startServeProcess(dataDir: string, serveArgs: readonly string[] = []): Promise<ServeProcess> {
  // The built CLI, from src/bench (tests) and dist/bench alike.
  const main = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
  if (!existsSync(main)) throw Object.assign(new Error(`${main} is missing: run \`npm run build\` first`), { code: 'BUILD_MISSING' });
  for (let attempt = 1; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 40_000);
    const child = spawn(process.execPath, [main, 'serve', '--data', dataDir, '--port', String(port), '--http-port', 'off', ...serveArgs], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      await listening(child);
    } catch (e) {
      if (attempt < MAX_ATTEMPTS && /LISTEN_FAILED|cannot listen/.test((e as { stderr?: string }).stderr ?? '')) continue;
      throw e;
    }
    const pid = child.pid as number;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return {
      port,
      pid,
      cpuMs: () => procStatCpuMs(`/proc/${pid}/stat`),
      async stop() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      },
    };
  }
}
