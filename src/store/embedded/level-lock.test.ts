/**
 * heldError: STORE_LOCKED says what holds the store (Linux: the holder's command line) and, for
 * the two commands that hold a store while a user wants to read it — `percolator serve` and
 * `percolator demo --serve` — the way in that works meanwhile; for `percolator worker`, which shuts
 * out the writers it is there to process, that the store is to be served. The holders are child processes
 * whose command lines look like those commands (nothing is locked: heldError reads /proc only).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import { heldError } from './level-lock.js';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

/** A process whose command line ends with `args`, once it runs (its /proc entry is its own by then). */
async function holder(...args: string[]): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'process.stdout.write("ready"); setInterval(() => {}, 60_000)', ...args], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  children.push(child);
  await new Promise<void>((ready, failed) => {
    child.stdout?.once('data', () => ready());
    child.once('error', failed);
  });
  return child.pid as number;
}

it.skipIf(!existsSync('/proc/self/cmdline'))("names the holder's way in for serve and demo --serve, none for anything else", async () => {
  const serve = await heldError('./d', await holder('/x/dist/cli/main.js', 'serve', '--data', './d'));
  expect(serve.code).toBe('STORE_LOCKED');
  expect(serve.message).toMatch(
    /main\.js serve --data \.\/d; a percolator serve holds it: reach the store through the server, --store bigtable:/,
  );

  const demo = await heldError('./d', await holder('/x/dist/cli/main.js', 'demo', '--data', './d', '--serve'));
  expect(demo.message).toMatch(/demo --data \.\/d --serve; a percolator demo --serve holds it while it serves: search on its search page/);
  expect(demo.details).toMatchObject({ dir: './d', holderCommand: expect.stringContaining('demo --data ./d --serve') });

  // The demo without --serve ends by itself; an app of the user's is just named.
  for (const args of [
    ['/x/dist/cli/main.js', 'demo', '--data', './d'],
    ['app.js', '--serve'],
  ]) {
    const other = await heldError('./d', await holder(...args));
    expect(other.message).toMatch(new RegExp(`held by process \\d+: .*${args.at(-1)}\\)$`));
  }
});

it.skipIf(!existsSync('/proc/self/cmdline'))(
  'says a worker on a file: store shuts out its writers and wait: the store is to be served',
  async () => {
    const worker = await heldError('./d', await holder('/x/dist/cli/main.js', 'worker', '--observers', 'o.js', '--store', 'file:./d'));
    expect(worker.message).toMatch(
      /worker --observers o\.js --store file:\.\/d; a percolator worker on a file: store holds it, so nothing else can write to it or wait on it: serve the store \(percolator serve --data DIR\) and give its clientUrl, bigtable:\/\/HOST:PORT, to the worker, the writers and wait\)$/,
    );
  },
);
