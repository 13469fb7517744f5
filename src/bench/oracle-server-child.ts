/**
 * Child process hosting an oracle server, for the bench (`--server-process`) and for the
 * restart / kill -9 tests:
 *
 *   node dist/bench/oracle-server-child.js '{"port":0,"mark":"/tmp/x/oracle.mark"}'
 *
 * Prints one JSON line `{"port":P,"pid":…,"loadedMark":M}` on stdout once listening (and sends it
 * over IPC when there is a channel). SIGTERM / SIGINT close it cleanly (the mark lock is
 * released); SIGKILL is the crash the tests inject. `fixedClockMicros` freezes the clock so that
 * after a restart only the durable mark keeps timestamps from repeating (what the tests prove).
 */
import { FileMarkStore } from '../oracle/mark-store.js';
import { startOracleServer } from '../oracle/server.js';

interface Config {
  host?: string;
  port?: number;
  mark: string;
  reserveMicros?: number;
  /** A frozen clock (µs) instead of the wall clock: uniqueness then rests on the mark alone. */
  fixedClockMicros?: number;
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as Config;
  const server = await startOracleServer({
    host: config.host ?? '127.0.0.1',
    port: config.port ?? 0,
    markStore: new FileMarkStore(config.mark),
    reserveMicros: config.reserveMicros,
    clock: config.fixedClockMicros === undefined ? undefined : () => config.fixedClockMicros as number,
  });
  const info = { type: 'listening', port: server.port, pid: process.pid, loadedMark: server.oracle.stats().loadedMark };
  process.stdout.write(`${JSON.stringify(info)}\n`);
  process.send?.(info);
  const stop = (): void => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('message', (msg: { type?: string }) => {
    if (msg?.type === 'stats') process.send?.({ type: 'stats', ...server.stats(), oracle: server.oracle.stats() });
    if (msg?.type === 'stop') stop();
  });
}

main().catch((e: unknown) => {
  process.stderr.write(`oracle-server-child: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
