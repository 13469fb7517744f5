/**
 * The bus-clumping benchmark's parts (src/bench/clumping*.ts): the simulation is deterministic
 * and reproduces the paper's effect (without anti-clumping the scanners end up in one bus; with
 * it they stay spread and scan several times more rows per second), the "no anti-clumping" lock
 * service really makes a scanner wait behind the holder, and the real-worker run works in both
 * configurations. Benchmarks are programs; these tests only keep them honest.
 */
import { describe, expect, it } from 'vitest';
import { clumpingSvg, runClumpingBench, sweepScanners } from '../src/bench/clumping.js';
import { runRealClumping, WaitBehindLockService } from '../src/bench/clumping-real.js';
import { simulateClumping } from '../src/bench/clumping-sim.js';

describe('bus clumping simulation', () => {
  const small = { rows: 2_000, scanners: 8, changesPerSecond: 1_000, seconds: 20, warmupSeconds: 5 };

  it('is deterministic', () => {
    expect(simulateClumping({ ...small, antiClumping: true })).toEqual(simulateClumping({ ...small, antiClumping: true }));
    expect(simulateClumping({ ...small, antiClumping: false, seed: 7 })).toEqual(
      simulateClumping({ ...small, antiClumping: false, seed: 7 }),
    );
  });

  it('clumps into one bus without anti-clumping and stays spread with it', () => {
    const spread = simulateClumping({ ...small, antiClumping: true });
    const bus = simulateClumping({ ...small, antiClumping: false });
    expect(bus.meanLargestClump).toBeGreaterThan(0.75 * small.scanners);
    expect(bus.waitFraction).toBeGreaterThan(0.5);
    expect(spread.meanLargestClump).toBeLessThan(2);
    expect(spread.meanClumps).toBeGreaterThan(0.75 * small.scanners);
    expect(spread.rowsScannedPerSecond).toBeGreaterThan(3 * bus.rowsScannedPerSecond);
    expect(spread.notificationsPerSecond).toBeGreaterThan(bus.notificationsPerSecond);
    expect(spread.medianLatencyMs).toBeLessThan(bus.medianLatencyMs);
  });

  it('with one scanner, anti-clumping changes nothing (there is nobody to meet)', () => {
    const one = { ...small, scanners: 1, changesPerSecond: 100 };
    const a = simulateClumping({ ...one, antiClumping: true });
    const b = simulateClumping({ ...one, antiClumping: false });
    expect({ ...a, antiClumping: false }).toEqual(b);
    expect(a.jumps).toBe(0);
  });
});

describe('bench clumping --svg (the scanner sweep)', () => {
  it('simulates each scanner count in both configurations and plots both', async () => {
    const simulation = { rows: 1_000, changesPerSecond: 500, seconds: 8, warmupSeconds: 2 };
    const r = await runClumpingBench({ simulation, real: null, sweep: [4, 1, 2, 4] });
    expect(r.sweep.map((p) => p.scanners)).toEqual([1, 2, 4]);
    const one = r.sweep[0];
    expect(one?.withAntiClumping.rowsScannedPerSecond).toBe(one?.withoutAntiClumping.rowsScannedPerSecond);
    const four = r.sweep[2];
    expect(four?.withAntiClumping).toEqual(simulateClumping({ ...r.parameters, scanners: 4, antiClumping: true }));
    expect(four?.withAntiClumping.rowsScannedPerSecond).toBeGreaterThan(four?.withoutAntiClumping.rowsScannedPerSecond ?? Infinity);
    const svg = clumpingSvg(r);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('with anti-clumping');
    expect(svg).toContain('without (scanners wait behind a held row)');
    expect(svg.match(/<polyline/g)?.length).toBe(2);
  });

  it('sweeps powers of two up to twice the scanners, at least 32', () => {
    expect(sweepScanners(16)).toEqual([1, 2, 4, 8, 16, 32]);
    expect(sweepScanners(40)).toEqual([1, 2, 4, 8, 16, 32, 64]);
  });

  it('runs no sweep unless asked', async () => {
    const r = await runClumpingBench({ simulation: { rows: 500, seconds: 3, warmupSeconds: 1, scanners: 2 }, real: null });
    expect(r.sweep).toEqual([]);
  });
});

describe('WaitBehindLockService (the "no anti-clumping" variant)', () => {
  it('waits until the holder unlocks, then takes the lock; releaseAll makes waiters fail', async () => {
    const locks = new WaitBehindLockService();
    expect(await locks.tryLock('k', 'a', 10_000)).toBe(true);
    let got: boolean | null = null;
    const waiting = locks.tryLock('k', 'b', 10_000).then((v) => {
      got = v;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(got).toBeNull();
    expect(locks.waits).toBe(1);
    await locks.unlock('k', 'a');
    await waiting;
    expect(got).toBe(true);
    const blocked = locks.tryLock('k', 'c', 10_000);
    locks.releaseAll();
    expect(await blocked).toBe(false);
    await locks.close();
  });
});

describe('bus clumping on the real worker', () => {
  it('runs both configurations and processes the changes', async () => {
    const params = { rows: 100, scanners: 4, changesPerSecond: 100, seconds: 1, warmupSeconds: 0.5 };
    const withJumps = await runRealClumping({ ...params, antiClumping: true });
    const behind = await runRealClumping({ ...params, antiClumping: false });
    for (const r of [withJumps, behind]) {
      expect(r.notificationsPerSecond).toBeGreaterThan(0);
      expect(r.observerFailures).toBe(0);
      expect(r.parked).toBe(0);
      expect(r.tablets).toBeGreaterThan(1);
    }
    expect(behind.jumpsPerSecond).toBe(0);
    expect(withJumps.waitsPerSecond).toBe(0);
  }, 60_000);
});
