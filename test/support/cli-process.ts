/**
 * A `percolator` command as a child process for the CLI tests: its stdout and stderr collected as
 * they come, its exit code, and a wait for what it prints (failing, with its stderr, if it exits first);
 * or (runCli, runProcess) run to its end like spawnSync, but without blocking the event loop, so that
 * the commands of concurrent tests run side by side.
 */
import { type ChildProcessWithoutNullStreams, type SpawnOptionsWithoutStdio, spawn } from 'node:child_process';

export interface CliProcess {
  readonly child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** The exit code (null: killed by a signal). */
  readonly exited: Promise<number | null>;
  /** Resolves with stdout so far once `done(stdout)` holds; rejects if the process exits before. */
  waitForStdout(done: (stdout: string) => boolean, what: string): Promise<string>;
  /** The same for stderr (where `percolator worker` says it runs). */
  waitForStderr(done: (stderr: string) => boolean, what: string): Promise<string>;
}

export function spawnCli(mainJs: string, args: readonly string[], options: SpawnOptionsWithoutStdio = {}): CliProcess {
  const child = spawn(process.execPath, [mainJs, ...args], { ...options, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end();
  let stdout = '';
  let stderr = '';
  const watchers = new Set<() => void>();
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    for (const w of watchers) w();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const w of watchers) w();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const waitFor = (output: () => string, done: (text: string) => boolean, what: string) =>
    new Promise<string>((resolve, reject) => {
      const check = (): void => {
        if (!done(output())) return;
        watchers.delete(check);
        resolve(output());
      };
      watchers.add(check);
      check();
      void exited.then((code) => reject(new Error(`${args[0]} exited (${code}) before ${what}: ${stderr}`)));
    });
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForStdout: (done, what) => waitFor(() => stdout, done, what),
    waitForStderr: (done, what) => waitFor(() => stderr, done, what),
  };
}

/**
 * `percolator serve ARGS --port 0` as a child process, with the `clientUrl` of the line it prints
 * once it listens (rejects, with its stderr, if it exits before). The caller stops it.
 */
export function spawnServe(mainJs: string, args: readonly string[]): CliProcess & { readonly clientUrl: Promise<string> } {
  const serve = spawnCli(mainJs, ['serve', ...args, '--port', '0']);
  const clientUrl = serve
    .waitForStdout((out) => out.includes('\n'), 'it listens')
    .then((out) => (JSON.parse(out.split('\n')[0] as string) as { clientUrl: string }).clientUrl);
  return { ...serve, clientUrl };
}

export interface CliResult {
  /** The exit code (null: killed, by a signal or the timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node mainJs args` to its end, as spawnSync would, without blocking the event loop: tests
 * that run several commands concurrently (it.concurrent, Promise.all) overlap their ~0.2 s starts.
 */
export function runCli(mainJs: string, args: readonly string[], options: RunOptions = {}): Promise<CliResult> {
  return runProcess(process.execPath, [mainJs, ...args], options);
}

export type RunOptions = SpawnOptionsWithoutStdio & {
  /** Killed (SIGKILL, code null) after this long; 30 s unless given. */
  timeoutMs?: number;
  /** Written to its stdin, which is then closed (closed at once without). */
  input?: Uint8Array;
};

/** Runs `file args` to its end (stdin closed, after `input` if given), collecting its output as text. */
export function runProcess(file: string, args: readonly string[], options: RunOptions = {}): Promise<CliResult> {
  const { timeoutMs = 30_000, input, ...spawnOptions } = options;
  const child = spawn(file, args, { ...spawnOptions, stdio: ['pipe', 'pipe', 'pipe'] });
  // A process that exits without reading all of it closes the pipe: EPIPE is its answer, not the test's failure.
  child.stdin.on('error', () => undefined);
  child.stdin.end(input);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve, reject) => {
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    // 'close', not 'exit': stdout and stderr are read to their end.
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
