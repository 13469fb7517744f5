/**
 * A private, throwaway PostgreSQL server for `percolator bench peers`.
 *
 * - Finds Debian's server binaries (`/usr/lib/postgresql/<major>/bin`, newest major first, or
 *   `pg_config --bindir`). If there are none and we are root, installs Debian's `postgresql`
 *   package with `apt-get install -y postgresql` (its output goes to stderr, so `--json` stays one
 *   object on stdout); if that fails, runs `apt-get update` once and tries again; otherwise it
 *   fails with a message that says what to install.
 * - Never touches a system cluster: it runs `initdb` into a fresh temporary directory, starts
 *   that cluster with `pg_ctl` listening on 127.0.0.1 only, on a free port, with its Unix socket in
 *   the same directory, and with `fsync=on`, `synchronous_commit=on` and `full_page_writes=on`
 *   (a commit is acknowledged once it is on disk, as a commit of our `file:` store is).
 * - Run as root, the server runs as the `postgres` user (PostgreSQL refuses to run as root);
 *   otherwise as the current user.
 * - `stop()` shuts the server down (`pg_ctl -m fast stop`) and removes the directory; a SIGINT or
 *   SIGTERM while it runs does the same (immediately) before the process exits.
 */
import { type SpawnSyncOptions, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface PostgresServer {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly database: string;
  /** `PostgreSQL 15.x` as the server reports it (`postgres --version`). */
  readonly version: string;
  /** Whether this run installed the package. */
  readonly installed: boolean;
  /** Server settings that make the comparison fair (as passed to the server). */
  readonly settings: Readonly<Record<string, string>>;
  stop(): Promise<void>;
}

export interface StartPostgresOptions {
  /** max_connections (default 100; raised to clients + 10 when needed). */
  readonly maxConnections?: number;
  /** Progress lines (default: stderr). */
  readonly log?: (line: string) => void;
}

class PostgresSetupError extends Error {}

/** The directory with `initdb`, `pg_ctl` and `postgres`, or null. */
export function findPostgresBinDir(): string | null {
  const has = (dir: string) => ['initdb', 'pg_ctl', 'postgres'].every((b) => existsSync(join(dir, b)));
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const majors = readdirSync(root)
      .filter((v) => /^\d+(\.\d+)?$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of majors) if (has(join(root, v, 'bin'))) return join(root, v, 'bin');
  }
  const cfg = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  if (cfg.status === 0) {
    const dir = cfg.stdout.trim();
    if (dir !== '' && has(dir)) return dir;
  }
  return null;
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Runs a command with its output on our stderr; resolves to its exit code. */
function runVisible(cmd: string, args: readonly string[], log: (line: string) => void): Promise<number> {
  log(`$ ${[cmd, ...args].join(' ')}`);
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      stdio: ['ignore', process.stderr, process.stderr],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    child.on('error', (e) => {
      log(`${cmd}: ${e.message}`);
      resolve(127);
    });
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

/** Finds the server binaries, installing Debian's `postgresql` when absent (root only). */
export async function ensurePostgresInstalled(log: (line: string) => void): Promise<{ binDir: string; installed: boolean }> {
  const found = findPostgresBinDir();
  if (found !== null) return { binDir: found, installed: false };
  if (!isRoot()) {
    throw new PostgresSetupError(
      'PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin) and not running as root, so they cannot be installed: run `sudo apt-get install -y postgresql` and retry',
    );
  }
  log('bench peers: PostgreSQL is not installed; installing Debian\'s "postgresql" package');
  let code = await runVisible('apt-get', ['install', '-y', '--no-install-recommends', 'postgresql'], log);
  if (code !== 0) {
    log('bench peers: apt-get install failed; refreshing the package lists once and retrying');
    await runVisible('apt-get', ['update'], log);
    code = await runVisible('apt-get', ['install', '-y', '--no-install-recommends', 'postgresql'], log);
  }
  const after = findPostgresBinDir();
  if (code !== 0 || after === null) {
    throw new PostgresSetupError(
      `could not install PostgreSQL (apt-get exited ${code}): install Debian's "postgresql" package by hand and retry`,
    );
  }
  return { binDir: after, installed: true };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** uid/gid of the `postgres` user (from /etc/passwd). */
function postgresIds(): { uid: number; gid: number } {
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const f = line.split(':');
    if (f[0] === 'postgres') return { uid: Number(f[2]), gid: Number(f[3]) };
  }
  throw new PostgresSetupError(
    'running as root but there is no "postgres" user to run the server as (Debian\'s postgresql package creates it)',
  );
}

/** Installs (if needed), initialises and starts a private cluster on 127.0.0.1. */
export async function startPostgres(opts: StartPostgresOptions = {}): Promise<PostgresServer> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const { binDir, installed } = await ensurePostgresInstalled(log);
  const ids = isRoot() ? postgresIds() : null;
  const asServerUser: SpawnSyncOptions = {
    encoding: 'utf8',
    ...(ids !== null ? { uid: ids.uid, gid: ids.gid } : {}),
    // The server user may not be able to read our working directory.
    cwd: tmpdir(),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C', LC_ALL: 'C' },
  };
  const run = (bin: string, args: readonly string[], what: string): string => {
    const r = spawnSync(join(binDir, bin), args, asServerUser);
    if (r.error !== undefined || r.status !== 0) {
      throw new PostgresSetupError(
        `${what} failed (${r.error?.message ?? `exit ${r.status}`}): ${String(r.stderr ?? '')
          .trim()
          .slice(-2000)}`,
      );
    }
    return String(r.stdout ?? '');
  };

  const dir = mkdtempSync(join(tmpdir(), 'percolator-peers-pg-'));
  if (ids !== null) chownSync(dir, ids.uid, ids.gid);
  chmodSync(dir, 0o700);
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  let started = false;
  const stopNow = (mode: 'fast' | 'immediate'): void => {
    if (started) {
      spawnSync(join(binDir, 'pg_ctl'), ['-D', data, '-m', mode, '-w', '-t', '60', 'stop'], { ...asServerUser, stdio: 'ignore' });
      started = false;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    stopNow('immediate');
    process.kill(process.pid, signal);
  };
  try {
    const version = run('postgres', ['--version'], 'postgres --version').trim();
    run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'], 'initdb');
    const port = await freePort();
    const maxConnections = String(Math.max(100, opts.maxConnections ?? 100));
    const settings: Record<string, string> = {
      listen_addresses: '127.0.0.1',
      port: String(port),
      unix_socket_directories: dir,
      fsync: 'on',
      synchronous_commit: 'on',
      full_page_writes: 'on',
      max_connections: maxConnections,
    };
    const serverOpts = Object.entries(settings)
      .map(([k, v]) => `-c ${k}=${v}`)
      .join(' ');
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    started = true;
    run('pg_ctl', ['-D', data, '-l', logFile, '-w', '-t', '60', '-o', serverOpts, 'start'], 'pg_ctl start');
    log(`bench peers: ${version} (private cluster in ${dir}) listening on 127.0.0.1:${port}`);
    return {
      host: '127.0.0.1',
      port,
      user: 'postgres',
      database: 'postgres',
      version,
      installed,
      settings,
      stop: async () => {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        stopNow('fast');
      },
    };
  } catch (e) {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    let tail = '';
    try {
      tail = readFileSync(logFile, 'utf8').trim().slice(-1500);
    } catch {
      // no server log
    }
    stopNow('immediate');
    if (tail !== '' && e instanceof Error) e.message += `\nserver log:\n${tail}`;
    throw e;
  }
}
