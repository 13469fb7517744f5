import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { mainThreadCpuMs } from './thread-cpu.js';

const linux = existsSync(`/proc/self/task/${process.pid}/stat`);

describe.runIf(linux)('mainThreadCpuMs', () => {
  it('grows with the main thread’s own work', () => {
    const before = mainThreadCpuMs();
    expect(before).not.toBeNull();
    const start = process.cpuUsage();
    let x = 0;
    // ~300 ms of CPU on this thread (several ticks of the kernel's 10 ms clock).
    while (process.cpuUsage(start).user < 300_000) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    const after = mainThreadCpuMs() as number;
    expect(after - (before as number)).toBeGreaterThanOrEqual(200);
  });

  it('does not count another thread’s work', async () => {
    const before = mainThreadCpuMs() as number;
    const processBefore = process.cpuUsage();
    // A worker thread spins until the process has used 400 ms more CPU (process.cpuUsage counts
    // every thread; this one waits for its message), however little of a core a loaded machine gives it.
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       const s = process.cpuUsage(); let x = 0, u = s;
       while ((u = process.cpuUsage(s)).user + u.system < 400_000) x += Math.sqrt(x + 1);
       parentPort.postMessage(x);`,
      { eval: true },
    );
    await new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('error', reject);
    });
    await worker.terminate();
    const used = process.cpuUsage(processBefore);
    const processMs = (used.user + used.system) / 1000;
    const mainMs = (mainThreadCpuMs() as number) - before;
    expect(processMs).toBeGreaterThanOrEqual(300);
    expect(mainMs).toBeLessThan(processMs / 2);
  });
});
