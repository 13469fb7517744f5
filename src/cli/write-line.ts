/**
 * One line of a command's output, written with backpressure: when the stream's buffer is full
 * (`write` returned false) the writer waits for 'drain'. A pipe is asynchronous in Node, so
 * without the wait `percolator scan t | slow-reader` read the whole table into stdout's buffer.
 *
 * Invariants: at most one line beyond the stream's high-water mark is buffered per writer; the
 * promise never hangs on a stream that will not drain — it resolves `false` when the reader is
 * gone (EPIPE, or the stream closed or destroyed), so the caller stops producing, as `head`'s
 * writer would; any other write error rejects (main.ts reports it as IO_ERROR).
 */
import type { Writable } from 'node:stream';

/** Resolves true when the caller may write more, false when nobody reads the output any more. */
export async function writeLine(out: Writable, line: string): Promise<boolean> {
  if (gone(out)) return settledOutcome(out);
  if (out.write(`${line}\n`)) return true;
  // A failed write destroys the stream on a later tick; checked again here for a stream destroyed already.
  if (gone(out)) return settledOutcome(out);
  return new Promise<boolean>((resolve, reject) => {
    const finish = (): void => {
      out.off('drain', onDrain);
      out.off('error', onError);
      out.off('close', onClose);
    };
    const onDrain = (): void => {
      finish();
      resolve(true);
    };
    const onError = (err: Error): void => {
      finish();
      if (isClosedPipe(err)) resolve(false);
      else reject(err);
    };
    const onClose = (): void => {
      finish();
      // 'close' follows 'error' when there is one; a close without one is a reader gone quietly.
      const err = out.errored;
      if (err !== null && !isClosedPipe(err)) reject(err);
      else resolve(false);
    };
    out.on('drain', onDrain);
    out.on('error', onError);
    out.on('close', onClose);
  });
}

function gone(out: Writable): boolean {
  return out.destroyed || out.writableEnded || out.errored !== null;
}

/** The outcome for a stream that can take no more: false for a reader gone, else its error. */
function settledOutcome(out: Writable): Promise<boolean> {
  const err = out.errored;
  return err !== null && !isClosedPipe(err) ? Promise.reject(err) : Promise.resolve(false);
}

function isClosedPipe(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED';
}
