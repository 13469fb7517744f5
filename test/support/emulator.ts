/**
 * Google's Bigtable emulator (`cbtemulator`) for tests: finds the binary, starts it on a free
 * loopback port, stops it. Tests that need it skip with a clear message where it is absent:
 *
 *   const emu = emulatorBinary();
 *   describe.skipIf(emu === null)('…', () => { … });
 *   if (emu === null) console.warn(EMULATOR_MISSING);
 *
 * Lookup order: $CBTEMULATOR (`none` = pretend it is absent), the gcloud SDK locations,
 * `dpkg -L google-cloud-cli-bigtable-emulator`.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, createServer } from 'node:net';

export const EMULATOR_MISSING =
  "SKIPPED: Google's Bigtable emulator (cbtemulator) is not installed. Install the package " +
  'google-cloud-cli-bigtable-emulator (or set CBTEMULATOR=/path/to/cbtemulator) to run these tests.';

const CANDIDATES = [
  '/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator',
  '/usr/share/google-cloud-sdk/platform/bigtable-emulator/cbtemulator',
  '/opt/google-cloud-sdk/platform/bigtable-emulator/cbtemulator',
];

let cached: string | null | undefined;

/** Path of cbtemulator, or null if it is not installed. */
export function emulatorBinary(): string | null {
  if (cached !== undefined) return cached;
  const fromEnv = process.env.CBTEMULATOR;
  if (fromEnv === 'none') return (cached = null); // pretend it is absent (to check the skip path)
  if (fromEnv && existsSync(fromEnv)) return (cached = fromEnv);
  for (const c of CANDIDATES) if (existsSync(c)) return (cached = c);
  const r = spawnSync('dpkg', ['-L', 'google-cloud-cli-bigtable-emulator'], { encoding: 'utf8' });
  if (r.status === 0) {
    const hit = r.stdout.split('\n').find((l) => l.endsWith('/cbtemulator') && existsSync(l));
    if (hit) return (cached = hit);
  }
  return (cached = null);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

async function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export interface RunningEmulator {
  readonly host: string;
  readonly port: number;
  /** `bigtable://127.0.0.1:PORT?emulator=1` plus extra query options. */
  url(extra?: string): string;
  stop(): Promise<void>;
}

/** Starts cbtemulator on a free port; resolves once it accepts connections. */
export async function startEmulator(binary: string): Promise<RunningEmulator> {
  let lastError = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child: ChildProcess = spawn(binary, ['-host', '127.0.0.1', '-port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (d) => {
      output = (output + String(d)).slice(-4000);
    });
    child.stderr?.on('data', (d) => {
      output = (output + String(d)).slice(-4000);
    });
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    const deadline = Date.now() + 10_000;
    while (!exited && Date.now() < deadline) {
      if (await canConnect(port)) {
        const stop = async (): Promise<void> => {
          if (exited) return;
          await new Promise<void>((resolve) => {
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
            setTimeout(() => {
              if (!exited) child.kill('SIGKILL');
            }, 2000).unref();
          });
        };
        return {
          host: '127.0.0.1',
          port,
          url: (extra?: string) => `bigtable://127.0.0.1:${port}?emulator=1${extra ? `&${extra}` : ''}`,
          stop,
        };
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!exited) child.kill('SIGKILL');
    lastError = output;
  }
  throw new Error(`cbtemulator did not start: ${lastError}`);
}
