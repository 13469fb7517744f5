import { expect, it } from 'vitest';
import { WORKER_ORACLE_TIMEOUT_MS, workerOracleTimeoutMs } from './worker-oracle-timeout.js';

it("a check worker's oracle timeout is the store URL's oracleTimeoutMs, else its own 10 s", () => {
  expect(workerOracleTimeoutMs('bigtable://127.0.0.1:8086?oracleTimeoutMs=1500')).toBe(1500);
  expect(workerOracleTimeoutMs('bigtable://127.0.0.1:8086?oracle=127.0.0.1:9000&oracleTimeoutMs=30000')).toBe(30_000);
  expect(WORKER_ORACLE_TIMEOUT_MS).toBe(10_000);
  for (const url of ['bigtable://127.0.0.1:8086', 'bigtable://127.0.0.1:8086?emulator=1', 'memory:', 'file:/tmp/x'])
    expect(workerOracleTimeoutMs(url)).toBe(WORKER_ORACLE_TIMEOUT_MS);
});
