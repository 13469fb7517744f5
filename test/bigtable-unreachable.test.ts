/**
 * A bigtable:// store whose server is not there — the newcomer's wrong port, or `percolator serve`
 * not started yet: the IO_ERROR names the store URL and what usually listens there, not only
 * grpc-js's "No connection established" (which did not say to what, nor what to do).
 */
import { type Server, createServer } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { BigtableStore } from '../src/store/bigtable/bigtable-store.js';
import { StoreError } from '../src/store/errors.js';

const servers: Server[] = [];
const stores: BigtableStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const s of servers.splice(0)) await new Promise<void>((done) => s.close(() => done()));
});

/** A server listening on a free port, accepting connections and closing them at once (not HTTP/2). */
async function listening(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.destroy());
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { server, port: (server.address() as { port: number }).port };
}

async function failure(url: string): Promise<StoreError> {
  const store = await BigtableStore.open(url);
  stores.push(store);
  const e = await store.listTables().then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(StoreError);
  return e as StoreError;
}

it('nothing listening: IO_ERROR naming the URL and percolator serve', async () => {
  const { server, port } = await listening();
  await new Promise<void>((done) => server.close(() => done()));
  servers.length = 0;
  const url = `bigtable://127.0.0.1:${port}`;
  const e = await failure(url);
  expect(e.code).toBe('IO_ERROR');
  expect(e.message).toMatch(new RegExp(`^cannot reach ${url}: No connection established\\..*ECONNREFUSED`));
  expect(e.message).toContain('is a `percolator serve` listening there?');
  expect(e.details).toMatchObject({ url });
}, 30_000);

it('a port that does not speak gRPC (the HTTP port given for the gRPC one): the same', async () => {
  const { port } = await listening();
  const url = `bigtable://127.0.0.1:${port}`;
  const e = await failure(url);
  expect(e.code).toBe('IO_ERROR');
  expect(e.message.startsWith(`cannot reach ${url}: `)).toBe(true);
  expect(e.details).toMatchObject({ url });
}, 30_000);
