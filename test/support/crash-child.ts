/**
 * Crash tests' child processes: forks a child script, hands every `ack` message it sends to the
 * caller, `kill -9`s it at the `target`-th ack and resolves once it is gone. Rejects if the child
 * exits on its own first.
 */
import { type ChildProcess, fork } from 'node:child_process';

export async function runUntilKilled<M extends { t: string }>(
  script: string,
  args: readonly string[],
  target: number,
  onAck: (message: M) => void,
): Promise<void> {
  const child: ChildProcess = fork(script, [...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let n = 0;
  await new Promise<void>((resolve, reject) => {
    child.on('message', (m: M) => {
      if (m.t !== 'ack') return;
      onAck(m);
      if (++n === target) {
        child.kill('SIGKILL');
        resolve();
      }
    });
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child exited early: code ${code} signal ${signal}`));
    });
  });
  await new Promise<void>((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()),
  );
}
