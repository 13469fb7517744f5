/**
 * `percolator serve [--data DIR] [--store URL] [--host 127.0.0.1] [--port 8086]
 *                   [--http-port P|off] [--oracle-port P|off] [--auth-token T]
 *                   [--row-cache-mib N] [--block-cache-mib N]`
 *
 * Serves the Cloud Bigtable v2 gRPC API (data + admin subset) and the network lock service on
 * --port, the timestamp oracle on --oracle-port (default port + 2) and HTTP status / metrics on
 * --http-port (default port + 1), over the embedded store in --data (or --store URL, e.g.
 * `memory:` for tests). See docs/server.md.
 *
 * Prints one JSON line `{"listening":{"host","grpc","http","oracle"},"clientUrl":…,"store":…}` once every port
 * accepts connections (with --port 0 the real ports are in it; `clientUrl` is what a bigtable:// client uses), then runs until SIGTERM /
 * SIGINT, shuts down gracefully (in-flight calls finish, then the store is closed and synced)
 * and prints `{"stopped":true,…}`. The bearer token may come from PERCOLATOR_AUTH_TOKEN.
 */
import type { Command } from 'commander';
import { type CacheFlags, addCacheOptions, withCacheOptions } from '../cache-options.js';
import { given, numberOf, parsePortNumber, parsePortOrOff } from '../parent-command.js';
import { UsageError } from '../usage-error.js';

function parseBytes(raw: string): number {
  const n = numberOf(raw, 'integer');
  if (!Number.isInteger(n) || n < 1024) throw new UsageError(`--max-message-bytes must be an integer ≥ 1024, got ${given(raw)}`);
  return n;
}

interface ServeOptions extends CacheFlags {
  data: string;
  store?: string;
  host: string;
  port: number;
  httpPort?: number | 'off';
  oraclePort?: number | 'off';
  authToken?: string;
  maxMessageBytes?: number;
  shutdownGraceMs?: number;
}

export function register(program: Command): void {
  const command = program
    .command('serve')
    .description('serve the store over the Cloud Bigtable v2 gRPC API, with the timestamp oracle, the lock service and HTTP status/metrics')
    .option('--data <dir>', 'directory of the embedded store', './percolator-data')
    .option('--store <url>', 'serve this store URL instead of --data (e.g. memory:)')
    .option('--host <host>', 'address to bind (every port)', '127.0.0.1')
    .option('--port <port>', 'gRPC port: Bigtable API + lock service (0 = pick one)', parsePortNumber('port', 0), 8086)
    .option('--http-port <port>', 'HTTP status/metrics port, or "off" (default: port + 1)', parsePortOrOff('http-port'))
    .option('--oracle-port <port>', 'timestamp oracle port, or "off" (default: port + 2)', parsePortOrOff('oracle-port'))
    .option('--auth-token <token>', 'require "authorization: Bearer <token>" (default: $PERCOLATOR_AUTH_TOKEN)')
    .option('--max-message-bytes <n>', 'largest gRPC message in either direction', parseBytes)
    .option('--shutdown-grace-ms <ms>', 'how long in-flight calls may run after SIGTERM', (raw: string) => {
      const n = numberOf(raw, 'integer');
      if (!Number.isInteger(n) || n < 0) throw new UsageError(`--shutdown-grace-ms must be an integer ≥ 0, got ${given(raw)}`);
      return n;
    });
  addCacheOptions(command).action(async (opts: ServeOptions) => {
    // --data has a default: only one given on the command line names a second store.
    if (opts.store !== undefined && command.getOptionValueSource('data') === 'cli')
      throw new UsageError(`--data ${opts.data} and --store ${opts.store} name two stores: give one`);
    for (const [name, given, offset] of [
      ['http-port', opts.httpPort, 1],
      ['oracle-port', opts.oraclePort, 2],
    ] as const) {
      if (given === undefined && opts.port !== 0 && opts.port + offset > 65535) {
        throw new UsageError(`--port ${opts.port} leaves no room for the default --${name} (port + ${offset}): give --${name}`);
      }
    }
    if (opts.authToken === '') throw new UsageError('--auth-token must not be empty');
    const authToken = opts.authToken ?? (process.env.PERCOLATOR_AUTH_TOKEN || undefined);
    const storeUrl = opts.store ?? `file:${opts.data}`;
    const storeOptions = withCacheOptions(opts, storeUrl);
    const [{ quietRedundantGrpcLogs }, { startServer }] = await Promise.all([
      import('../../server/grpc-log.js'),
      import('../../server/server.js'),
    ]);
    // A port in use is one line, LISTEN_FAILED, with no grpc-js log line before it.
    quietRedundantGrpcLogs();
    const server = await startServer({
      storeUrl,
      storeOptions,
      host: opts.host,
      port: opts.port,
      ...(opts.httpPort === undefined ? {} : { httpPort: opts.httpPort === 'off' ? null : opts.httpPort }),
      ...(opts.oraclePort === undefined ? {} : { oraclePort: opts.oraclePort === 'off' ? null : opts.oraclePort }),
      ...(authToken === undefined ? {} : { authToken }),
      ...(opts.maxMessageBytes === undefined ? {} : { maxMessageBytes: opts.maxMessageBytes }),
      ...(opts.shutdownGraceMs === undefined ? {} : { shutdownGraceMs: opts.shutdownGraceMs }),
    });
    // Listening for the signals before saying it listens: whoever reads that line may signal at once.
    const stop = new Promise<string>((resolve) => {
      process.once('SIGINT', () => resolve('SIGINT'));
      process.once('SIGTERM', () => resolve('SIGTERM'));
    });
    process.stdout.write(
      `${JSON.stringify({
        listening: { host: server.host, grpc: server.port, http: server.httpPort, oracle: server.oraclePort },
        clientUrl: clientUrl(server.host, server.port, server.oraclePort),
        store: server.store.url,
        auth: authToken !== undefined,
      })}\n`,
    );
    const signal = await stop;
    process.stderr.write(`percolator serve: ${signal}: shutting down gracefully\n`);
    await server.close();
    const s = server.status();
    process.stdout.write(
      `${JSON.stringify({ stopped: true, signal, requests: s.grpc.requests, rowsWritten: s.rows.written, rowsRead: s.rows.read })}\n`,
    );
  });
}

/**
 * The store URL a `bigtable://` client of this server uses. Clients assume the oracle at the gRPC
 * port + 2 (docs/server.md); where it listens elsewhere (`--port 0`, `--oracle-port`) the URL names
 * it (`?oracle=`), so that what the line prints works as it is. A wildcard bind is reached at loopback.
 */
function clientUrl(host: string, port: number, oraclePort: number | null): string {
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const base = `bigtable://${h}:${port}`;
  return oraclePort === null || oraclePort === port + 2 ? base : `${base}?oracle=${h}:${oraclePort}`;
}
