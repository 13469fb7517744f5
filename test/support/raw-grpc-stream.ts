/**
 * A bare HTTP/2 gRPC server-streaming call for the server tests (node:http2, not grpc-js): the
 * request framed by hand, the response's length-prefixed messages collected as they arrive. Unlike
 * grpc-js, a paused node:http2 stream stops sending WINDOW_UPDATEs, so the server really meets
 * flow control.
 */
import * as http2 from 'node:http2';

/** Calls `path` with one request; `done` resolves with the grpc-status and every message once the stream closes. */
export function rawServerStream(
  port: number,
  path: string,
  request: Buffer,
): { pause(): void; resume(): void; done: Promise<{ status: number; messages: Buffer[] }> } {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  const frame = Buffer.alloc(5 + request.length);
  frame.writeUInt32BE(request.length, 1);
  request.copy(frame, 5);
  const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
  stream.end(frame);
  const messages: Buffer[] = [];
  let pending = Buffer.alloc(0);
  stream.on('data', (d: Buffer) => {
    pending = Buffer.concat([pending, d]);
    while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
      const n = pending.readUInt32BE(1);
      messages.push(pending.subarray(5, 5 + n));
      pending = pending.subarray(5 + n);
    }
  });
  const done = new Promise<{ status: number; messages: Buffer[] }>((resolve) => {
    let status = -1;
    stream.on('response', (headers) => {
      if (headers['grpc-status'] !== undefined) status = Number(headers['grpc-status']);
    });
    stream.on('trailers', (trailers) => {
      status = Number(trailers['grpc-status']);
    });
    stream.on('close', () => {
      session.close();
      resolve({ status, messages });
    });
  });
  return { pause: () => stream.pause(), resume: () => stream.resume(), done };
}
