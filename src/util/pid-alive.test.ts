import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { expect, it } from 'vitest';
import { pidAlive } from './pid-alive.js';

it('this process is alive; a pid that does not exist is not', () => {
  expect(pidAlive(process.pid)).toBe(true);
  expect(pidAlive(2 ** 22 + 12345)).toBe(false);
});

// A child killed but not yet reaped is a zombie: signal 0 still reaches it, /proc says Z.
it.skipIf(!existsSync('/proc/self/stat'))('a killed child not yet reaped (a zombie) is not alive', async () => {
  // `sh` execs `sleep`; the child is reaped only when Node handles its exit, so look before that.
  const child = spawn('sh', ['-c', 'exec sleep 30'], { stdio: 'ignore' });
  const pid = child.pid as number;
  expect(pidAlive(pid)).toBe(true);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  process.kill(pid, 'SIGKILL');
  // Until Node's SIGCHLD handler runs (the next turn of the loop at the earliest), the child is a zombie.
  const deadline = Date.now() + 2_000;
  let sawZombie = false;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      break;
    }
    if (!pidAlive(pid)) {
      sawZombie = true;
      break;
    }
  }
  expect(sawZombie).toBe(true);
  await exited;
});
