/**
 * A `startServer` that fails part-way (a port already taken: LISTEN_FAILED) closes everything it
 * opened, so a library user who catches the error and calls it again in the same process succeeds
 * on the same store directory, and the failed attempt leaves no handle behind. Until 2026-12-02
 * the clean-up path did not close the lock service the start had created.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { InProcessLockService } from '../src/notify/lock-service.js';
import { type ServerOptions, startServer } from '../src/server/server.js';

afterEach(() => {
  vi.restoreAllMocks();
});

async function busyPort(): Promise<{ port: number; close(): Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** This process's handles and requests, by type (what keeps it alive). */
function resources(): Record<string, number> {
  const n: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) n[r] = (n[r] ?? 0) + 1;
  return n;
}

/** Resolves once this process's resources are `expected`, or after 2 s of turns without that. */
async function settled(expected: Record<string, number>): Promise<void> {
  const deadline = performance.now() + 2_000;
  const same = () => JSON.stringify(resources()) === JSON.stringify(expected);
  while (!same() && performance.now() < deadline) await new Promise<void>((resolve) => setTimeout(resolve, 10));
}

for (const which of ['port', 'oraclePort', 'httpPort'] as const) {
  it(`a start whose ${which} is taken closes what it opened; the same call with a free port then succeeds on the same --data`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'percolator-failed-start-'));
    const taken = await busyPort();
    try {
      const options: ServerOptions = { storeUrl: `file:${join(dir, 'data')}`, port: 0, oraclePort: 0, httpPort: 0, log: () => undefined };
      // A store that is there already: the failed start must release it, not remove it.
      await (await startServer({ ...options, oraclePort: null, httpPort: null })).close();
      const closedLocks = vi.spyOn(InProcessLockService.prototype, 'close');
      const before = resources();

      await expect(startServer({ ...options, [which]: taken.port })).rejects.toMatchObject({ code: 'LISTEN_FAILED' });
      expect(closedLocks).toHaveBeenCalledTimes(1);
      // Nothing the attempt opened is still active. A closed listener is gone by the next turn, but
      // a callback the closing queued (an Immediate) may still be pending under load: wait for the
      // count to settle, which a handle left open never does.
      await settled(before);
      expect(resources()).toEqual(before);

      // The store's lock was released: the same directory opens again, with its tables.
      const server = await startServer(options);
      try {
        expect(await server.store.listTables()).toContain('_percolator_oracle');
      } finally {
        await server.close();
      }
    } finally {
      await taken.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
}
