/**
 * Smoke test of `percolator bench peers` (src/bench/peers-bench.ts): a tiny run of the bank
 * workload must commit transfers and keep the total on each side. The Percolator side always
 * runs; the PostgreSQL side only where the server binaries are installed (the test never installs
 * them; the benchmark itself does), in a private throwaway cluster.
 */
import { describe, expect, it } from 'vitest';
import { peersSvg, runPeersBench } from '../src/bench/peers-bench.js';
import { checkSvg } from '../src/bench/svg-plot.js';
import { findPostgresBinDir } from '../src/bench/peers-postgres.js';

const quiet = () => undefined;

describe('bench peers', () => {
  it('runs the bank workload on Percolator and keeps the total', async () => {
    const r = await runPeersBench({ seconds: 1, clients: 4, accounts: 20, warmupSeconds: 0, only: 'percolator', log: quiet });
    expect(r.totalsOk).toBe(true);
    expect(r.totals.percolator).toBe(20 * 1000);
    expect(r.percolatorTps).toBeGreaterThan(0);
    expect(r.postgresTps).toBeNull();
    expect(r.ratio).toBeNull();
  });

  it.skipIf(findPostgresBinDir() === null)('compares with PostgreSQL at REPEATABLE READ in a private cluster', async () => {
    const r = await runPeersBench({ seconds: 1, clients: 4, accounts: 20, warmupSeconds: 0, log: quiet });
    expect(r.totalsOk).toBe(true);
    expect(r.totals).toEqual({ expected: 20_000, percolator: 20_000, postgres: 20_000 });
    expect(r.percolatorTps).toBeGreaterThan(0);
    expect(r.postgresTps).toBeGreaterThan(0);
    expect(r.ratio).toBeCloseTo((r.percolatorTps as number) / (r.postgresTps as number), 2);
    expect(r.postgres?.settings).toMatchObject({ listen_addresses: '127.0.0.1', fsync: 'on', synchronous_commit: 'on' });
    const svg = peersSvg(r);
    expect(checkSvg(svg)).toEqual([]);
    expect(svg).toContain('PostgreSQL');
    expect(svg).toContain('Percolator');
  });
});
