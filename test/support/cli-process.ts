/**
 * A `percolator` command as a child process for the CLI tests: its stdout and stderr collected as
 * they come, its exit code, and a wait for what it prints (failing, with its stderr, if it exits first).
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
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForStdout: (done, what) =>
      new Promise<string>((resolve, reject) => {
        const check = (): void => {
          if (!done(stdout)) return;
          watchers.delete(check);
          resolve(stdout);
        };
        watchers.add(check);
        check();
        void exited.then((code) => reject(new Error(`${args[0]} exited (${code}) before ${what}: ${stderr}`)));
      }),
  };
}
