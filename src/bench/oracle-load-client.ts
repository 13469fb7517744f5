/**
 * Child process for `percolator bench oracle` and the multi-process oracle tests: one
 * `OracleClient` with many concurrent callers, driven over the IPC channel.
 *
 *   node dist/bench/oracle-load-client.js '{"port":P,"callers":N,"mode":"count"|"record","file":F}'
 *
 * Messages: child → parent `{type:'ready'}`; parent → child `{type:'start', seconds?}` (runs for
 * `seconds`, or until `{type:'stop'}`); `{type:'progress'}` is answered with the count so far;
 * child → parent `{type:'result', …}` then exits.
 *
 * Invariants it checks while running: every timestamp it receives is larger than the previous
 * one received by this process (counted in `violations`). In `record` mode every timestamp is
 * kept, in receive order, and written to `file` as little-endian float64s (exact for < 2^53),
 * so the parent can check global uniqueness across processes. Errors (e.g. ORACLE_UNAVAILABLE
 * while the oracle restarts) are counted by code and the caller keeps going.
 */
import { writeFileSync } from 'node:fs';
import { OracleClient } from '../oracle/client.js';

interface Config {
  host?: string;
  port: number;
  callers: number;
  mode: 'count' | 'record';
  file?: string;
  timeoutMs?: number;
}

interface StartMessage {
  type: 'start' | 'stop';
  seconds?: number;
}

const config = JSON.parse(process.argv[2] ?? '{}') as Config;
const send = (msg: unknown): void => {
  process.send?.(msg);
};

async function main(): Promise<void> {
  const client = new OracleClient({
    host: config.host ?? '127.0.0.1',
    port: config.port,
    timeoutMs: config.timeoutMs ?? 5000,
  });
  // Warm up: the connection is up and the JIT has seen the hot path.
  for (let i = 0; i < 200; i++) await client.getTimestamp();

  const record = config.mode === 'record';
  let buf = new Float64Array(record ? 1 << 20 : 0);
  let count = 0;
  let last = 0;
  let violations = 0;
  let errors = 0;
  const errorCodes: Record<string, number> = {};
  let running = true;

  const caller = async (): Promise<void> => {
    while (running) {
      let t: number;
      try {
        t = await client.getTimestamp();
      } catch (e) {
        errors++;
        const code = (e as { code?: string }).code ?? 'UNKNOWN';
        errorCodes[code] = (errorCodes[code] ?? 0) + 1;
        if (code === 'ORACLE_CLOSED') return;
        continue;
      }
      if (t <= last) violations++;
      last = t;
      if (record) {
        if (count === buf.length) {
          const bigger = new Float64Array(buf.length * 2);
          bigger.set(buf);
          buf = bigger;
        }
        buf[count] = t;
      }
      count++;
    }
  };

  const start = await new Promise<StartMessage>((resolve) => {
    process.on('message', function onMessage(msg: StartMessage) {
      if (msg.type === 'start') {
        process.off('message', onMessage);
        resolve(msg);
      }
    });
    send({ type: 'ready' });
  });

  process.on('message', (msg: { type?: string }) => {
    if (msg?.type === 'progress') send({ type: 'progress', count, errors, last });
  });
  const startedAt = performance.now();
  const statsBefore = client.stats();
  const callers: Promise<void>[] = [];
  for (let i = 0; i < config.callers; i++) callers.push(caller());
  await new Promise<void>((resolve) => {
    if (start.seconds !== undefined) setTimeout(resolve, start.seconds * 1000);
    process.on('message', (msg: StartMessage) => {
      if (msg.type === 'stop') resolve();
    });
  });
  running = false;
  await Promise.all(callers);
  const elapsedMs = performance.now() - startedAt;
  const stats = client.stats();
  await client.close();
  if (record && config.file !== undefined) {
    writeFileSync(config.file, Buffer.from(buf.buffer, 0, count * 8));
  }
  send({
    type: 'result',
    count,
    elapsedMs,
    violations,
    errors,
    errorCodes,
    first: record && count > 0 ? buf[0] : undefined,
    last,
    requests: stats.requests - statsBefore.requests,
    largestBatch: stats.largestBatch,
    connects: stats.connects,
  });
  process.disconnect?.();
}

main().catch((e: unknown) => {
  process.stderr.write(`oracle-load-client: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
