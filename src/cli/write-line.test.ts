/**
 * writeLine over a stream whose writes complete only when the test says (a slow reader): it waits
 * for 'drain' once the buffer is full, ends with false when the reader is gone (EPIPE, a close),
 * and rejects on any other write error. The real stdout into a pipe is test/cli-pipe.test.ts.
 */
import { Writable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { writeLine } from './write-line.js';

/** A writable with a small buffer whose writes complete only when the test releases them, as a slow reader's pipe. */
function slowStream(): { stream: Writable; written: string[]; release: () => void } {
  const written: string[] = [];
  const pending: (() => void)[] = [];
  const stream = new Writable({
    highWaterMark: 8,
    write(chunk: Buffer, _enc, done) {
      written.push(chunk.toString());
      pending.push(() => done());
    },
  });
  return { stream, written, release: () => pending.splice(0).forEach((f) => f()) };
}

/** Whether `p` has settled, after letting every pending callback run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await nextTurn();
  return done;
}

it('resolves at once while the buffer has room', async () => {
  const { stream, written } = slowStream();
  await expect(writeLine(stream, 'abc')).resolves.toBe(true);
  expect(written).toEqual(['abc\n']);
});

it('a full buffer holds the writer until the stream drains', async () => {
  const { stream, release } = slowStream();
  const p = writeLine(stream, 'a line longer than the high-water mark');
  expect(await settled(p)).toBe(false);
  expect(stream.writableLength).toBeGreaterThan(0);
  release();
  await expect(p).resolves.toBe(true);
  expect(stream.writableLength).toBe(0);
  expect(stream.listenerCount('drain') + stream.listenerCount('close')).toBe(0); // nothing left behind per line
});

it('a reader gone while the writer waits (EPIPE) ends the writing: false, not an error', async () => {
  const { stream } = slowStream();
  const p = writeLine(stream, 'a line longer than the high-water mark');
  expect(await settled(p)).toBe(false);
  stream.destroy(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
  await expect(p).resolves.toBe(false);
});

it('a stream closed without an error while the writer waits: false', async () => {
  const { stream } = slowStream();
  const p = writeLine(stream, 'a line longer than the high-water mark');
  expect(await settled(p)).toBe(false);
  stream.destroy();
  await expect(p).resolves.toBe(false);
});

it('any other write error rejects with it (a full disk is a failure, not an end)', async () => {
  const { stream } = slowStream();
  const p = writeLine(stream, 'a line longer than the high-water mark');
  expect(await settled(p)).toBe(false);
  const enospc = Object.assign(new Error('write ENOSPC'), { code: 'ENOSPC' });
  stream.destroy(enospc);
  await expect(p).rejects.toBe(enospc);
});

it('a stream that is gone already is not written to', async () => {
  const closed = slowStream();
  closed.stream.destroy();
  await expect(writeLine(closed.stream, 'x')).resolves.toBe(false);
  expect(closed.written).toEqual([]);
  const broken = slowStream();
  const eio = Object.assign(new Error('write EIO'), { code: 'EIO' });
  broken.stream.on('error', () => {}); // the test's own stream has no main.ts handler
  broken.stream.destroy(eio);
  await expect(writeLine(broken.stream, 'x')).rejects.toBe(eio);
  expect(broken.written).toEqual([]);
});
