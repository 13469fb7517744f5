/**
 * Google's `cbt` CLI against `percolator serve` (in-process server, BIGTABLE_EMULATOR_HOST):
 * createtable, createfamily, set, read, lookup, count, ls, deleterow, deletetable. Skips with a
 * message where cbt is not installed (it comes with google-cloud-cli-bigtable-emulator).
 */
import { execFile, spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PercolatorServer, startServer } from '../src/server/server.js';

function findCbt(): string | null {
  for (const candidate of [process.env.CBT, 'cbt', '/usr/bin/cbt', '/usr/lib/google-cloud-sdk/bin/cbt']) {
    if (!candidate) continue;
    const r = spawnSync(candidate, ['version'], { encoding: 'utf8' });
    if (r.status === 0) return candidate;
  }
  return null;
}

const cbtPath = findCbt();
if (cbtPath === null) {
  console.warn(
    'serve-cbt.test.ts: SKIPPED — the `cbt` CLI is not installed (package google-cloud-cli-bigtable-emulator); set CBT=/path/to/cbt to run it',
  );
}

let server: PercolatorServer;

beforeAll(async () => {
  if (cbtPath === null) return;
  server = await startServer({ storeUrl: 'memory:', port: 0, httpPort: null, oraclePort: null, log: () => undefined });
});
afterAll(async () => {
  await server?.close();
});

/** Runs cbt asynchronously (the server shares this process's event loop). */
function cbt(...args: string[]): Promise<{ out: string; err: string; status: number | null }> {
  // -creds /dev/null: with an emulator host cbt needs no credentials, and this skips its slow
  // gcloud credential lookup.
  return new Promise((resolve) => {
    execFile(
      cbtPath as string,
      ['-project', 'p', '-instance', 'i', '-creds', '/dev/null', ...args],
      { encoding: 'utf8', env: { ...process.env, BIGTABLE_EMULATOR_HOST: `127.0.0.1:${server.port}` }, timeout: 20_000 },
      (err, stdout, stderr) =>
        resolve({ out: stdout, err: stderr, status: err === null ? 0 : typeof err.code === 'number' ? err.code : null }),
    );
  });
}

async function ok(...args: string[]): Promise<string> {
  const r = await cbt(...args);
  if (r.status !== 0) throw new Error(`cbt ${args.join(' ')} failed (${r.status}): ${r.err}`);
  return r.out;
}

describe.skipIf(cbtPath === null)('cbt against percolator serve', () => {
  it('creates, writes, reads, looks up, counts and deletes', async () => {
    await ok('createtable', 't');
    await ok('createfamily', 't', 'f');
    await ok('setgcpolicy', 't', 'f', 'maxversions=2');
    await ok('set', 't', 'r1', 'f:c=v1', 'f:d=w');
    await ok('set', 't', 'r2', 'f:c=hello');
    await ok('set', 't', 'r3', 'f:c=third');
    expect((await ok('ls')).split('\n')).toContain('t');
    const families = await ok('ls', 't');
    expect(families).toMatch(/^f\s+versions\(\) > 2/m);

    const read = await ok('read', 't');
    expect(read.match(/^r\d$/gm)).toEqual(['r1', 'r2', 'r3']);
    expect(read).toContain('"hello"');
    expect(read).toMatch(/f:d\s+@ \d{4}\/\d\d\/\d\d-/);

    const lookup = await ok('lookup', 't', 'r1');
    expect(lookup).toContain('"v1"');
    expect(lookup).toContain('"w"');
    expect(lookup).not.toContain('hello');

    expect(await ok('read', 't', 'prefix=r2')).not.toContain('r1');
    expect((await ok('count', 't')).trim()).toBe('3');

    await ok('deleterow', 't', 'r1');
    expect((await ok('count', 't')).trim()).toBe('2');
    expect(await ok('lookup', 't', 'r1')).not.toContain('v1');

    await ok('deletefamily', 't', 'f');
    await ok('deletetable', 't');
    expect((await ok('ls')).split('\n')).not.toContain('t');
  });

  it('reports errors with a non-zero exit status', async () => {
    const r = await cbt('lookup', 'missing-table', 'r1');
    expect(r.status).not.toBe(0);
    expect(r.err).toMatch(/NotFound|not found/i);
  });
});
