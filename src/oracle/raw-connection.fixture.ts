/**
 * Test fixture: a raw connection to an oracle server for sending arbitrary bytes, collecting the
 * frames it answers with, `until` to wait for a condition on them, and `keepServed` for a
 * well-behaved client asking beside them.
 */
import * as net from 'node:net';
import { FrameReader } from './protocol.js';

export interface RawFrame {
  readonly type: number;
  readonly id: number;
  readonly payload: Buffer;
}

export interface RawConnection {
  readonly socket: net.Socket;
  /** Every frame received, in order. */
  readonly frames: RawFrame[];
  isClosed(): boolean;
  /** The server sent something that is not a frame. */
  unparsable(): boolean;
}

/** Connects to 127.0.0.1:`port`; the socket is destroyed by the cleanup it pushes onto `cleanups`. */
export async function rawConnection(port: number, cleanups: (() => unknown)[]): Promise<RawConnection> {
  const socket = net.connect({ port, host: '127.0.0.1' });
  socket.setNoDelay(true);
  await new Promise<void>((r) => socket.once('connect', () => r()));
  const frames: RawFrame[] = [];
  let closed = false;
  let unparsable = false;
  const reader = new FrameReader(
    (buf, start, end) => {
      frames.push({ type: buf[start + 1] as number, id: buf.readUInt32LE(start + 4), payload: Buffer.from(buf.subarray(start + 8, end)) });
      return true;
    },
    () => {
      unparsable = true;
    },
  );
  socket.on('data', (c: Buffer) => reader.push(c));
  socket.on('error', () => undefined);
  socket.on('close', () => {
    closed = true;
  });
  cleanups.push(() => socket.destroy());
  return { socket, frames, isClosed: () => closed, unparsable: () => unparsable };
}

/** Resolves once `cond()` holds; throws naming `what` after `ms`. */
export async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** A client asking for timestamps one after another, beside whatever a test does to the server. */
export interface KeptServed {
  /** Timestamps it has got so far. */
  served(): number;
  /** Stops asking; rejects if one of its requests failed. */
  stop(): Promise<void>;
}

export function keepServed(client: { getTimestamp(): Promise<unknown> }): KeptServed {
  let running = true;
  let served = 0;
  const loop = (async () => {
    while (running) {
      await client.getTimestamp();
      served++;
    }
  })();
  loop.catch(() => undefined); // awaited by stop(); a failed check leaves it to the test's cleanup
  return {
    served: () => served,
    stop: () => {
      running = false;
      return loop;
    },
  };
}
