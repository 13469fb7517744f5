/**
 * The `percolator` command writing into a pipe whose reader stops early (`percolator scan t | head`):
 * the output just ends — exit 0, no stack trace (compiled JS under dist/; `npm test` builds first).
 * And into a pipe whose reader is slow: scan waits for it (write-line.ts) instead of buffering the
 * table in the process — seen through a preloaded module that watches the child's stdout.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore } from '../src/store/open-store.js';

const mainJs = join(fileURLToPath(new URL('..', import.meta.url)), 'dist/cli/main.js');
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'percolator-cli-pipe-'));
  const store = await openStore(`file:${dir}`, { gcIntervalMs: 0 });
  await store.createTable('t', { families: { f: {} } });
  const value = Buffer.alloc(200, 0x61);
  await store.mutateRows(
    't',
    Array.from({ length: 5000 }, (_, i) => ({
      key: Buffer.from(`row-${String(i).padStart(5, '0')}`),
      mutations: [{ setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value } }],
    })),
  );
  await store.close();
}, 30_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('a reader that closes the pipe early ends the output: exit 0, nothing on stderr', async () => {
  const child = spawn(process.execPath, [mainJs, 'scan', 't', '--store', `file:${dir}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const first = await new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString())));
  child.stdout.destroy(); // like `head` exiting after its lines
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  expect(first).toMatch(/^row-00000\n/);
  expect(stderr).toBe('');
  expect(code).toBe(0);
}, 30_000);

/** Child stdout buffered beyond this means the scan did not wait for its reader (the output is ~750 KB). */
const BUFFERED_LIMIT = 256 * 1024;

/**
 * Preloaded into the child: reports on stderr (synchronously, so nothing is lost at exit) the first
 * time something waits for stdout's 'drain', the first time stdout holds more than BUFFERED_LIMIT
 * bytes unwritten, and at exit the most it ever held.
 */
const watchStdout = `data:text/javascript,${encodeURIComponent(`
  import { writeSync } from 'node:fs';
  const out = process.stdout;
  const write = out.write;
  const on = out.on;
  let most = 0, over = false, waited = false;
  out.write = function (...args) {
    const r = write.apply(this, args);
    most = Math.max(most, out.writableLength);
    if (!over && out.writableLength > ${BUFFERED_LIMIT}) { over = true; writeSync(2, 'watch: buffered past the limit\\n'); }
    return r;
  };
  out.on = out.addListener = function (event, fn) {
    if (event === 'drain' && !waited) { waited = true; writeSync(2, 'watch: waiting for drain\\n'); }
    return on.call(this, event, fn);
  };
  process.on('exit', () => writeSync(2, 'watch: most buffered ' + most + '\\n'));
`)}`;

/** `scan t` with stdout watched, nothing read from its stdout until the test reads it: a reader that has not got round to it yet. */
function watchedScan() {
  const child = spawn(process.execPath, ['--import', watchStdout, mainJs, 'scan', 't', '--store', `file:${dir}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pause();
  let stderr = '';
  /** Which came first: the scan waiting for its reader, or its stdout buffering past the limit. */
  const firstReport = new Promise<string>((resolve) =>
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      const m = /^watch: (waiting for drain|buffered past the limit)$/m.exec(stderr);
      if (m) resolve(m[1] as string);
    }),
  );
  // 'close': the child has exited and its stdout and stderr are read to their end.
  const closed = new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  return { child, firstReport, closed, stderr: () => stderr };
}

it('a slow reader holds the scan up: stdout never buffers the table, and every row arrives once read', async () => {
  const scan = watchedScan();
  expect(await scan.firstReport).toBe('waiting for drain');
  let stdout = '';
  scan.child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  scan.child.stdout.resume();
  expect(await scan.closed).toBe(0);
  expect(stdout.split('\n').filter((l) => l.startsWith('row-'))).toHaveLength(5000);
  const most = Number(/^watch: most buffered (\d+)$/m.exec(scan.stderr())?.[1]);
  expect(most).toBeLessThan(BUFFERED_LIMIT);
  expect(scan.stderr().replace(/^watch: .*\n/gm, '')).toBe('');
}, 30_000);

it('a reader that closes the pipe while the scan waits for it: the scan ends quietly, exit 0', async () => {
  const scan = watchedScan();
  expect(await scan.firstReport).toBe('waiting for drain');
  scan.child.stdout.destroy();
  expect(await scan.closed).toBe(0);
  expect(scan.stderr().replace(/^watch: .*\n/gm, '')).toBe('');
}, 30_000);
