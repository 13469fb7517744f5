/**
 * A deterministic discrete-event simulation of Percolator's "bus clumping" (§2.4): N scanners
 * walk a ring of R rows; a row is either clean (passing it costs `cleanCostMs`) or dirty
 * (processing it costs `fastCostMs`, or `slowCostMs` on the few slow rows). Changes dirty rows
 * at random (a Poisson stream of `changesPerSecond`); changes that arrive while a row is being
 * processed leave it dirty again. A scanner holds a row's advisory lock while it passes or
 * processes it.
 *
 * Without anti-clumping, a scanner that reaches a row another scanner holds waits until it is
 * free, then continues: behind a slow row the scanners that follow find the rows ahead of them
 * already cleaned, catch up, and from then on trail the leader — a bus that does one scanner's
 * work. With anti-clumping (what src/notify/scanner.ts does), a scanner that meets a held row
 * jumps to a random row instead (paying `jumpCostMs`, a new seek).
 *
 * Invariants: the simulation is a pure function of its options (seeded PRNG, events ordered by
 * time then insertion); every row visit is counted once, when it ends; statistics cover only
 * the window after `warmupSeconds`.
 */
import { mulberry32 as prng } from '../util/seeded-random.js';

export interface ClumpingSimOptions {
  /** Rows in the ring (default 10 000). */
  readonly rows?: number;
  /** Scanners (default 16). */
  readonly scanners?: number;
  /** Fraction of rows that are slow to process (default 0.01). */
  readonly slowFraction?: number;
  /** Cost of processing a dirty slow row (default 50 ms). */
  readonly slowCostMs?: number;
  /** Cost of processing a dirty ordinary row (default 1 ms). */
  readonly fastCostMs?: number;
  /** Cost of passing a clean row (default 0.1 ms). */
  readonly cleanCostMs?: number;
  /** Cost of jumping to a random row (default 0.5 ms). */
  readonly jumpCostMs?: number;
  /** Changes per simulated second over the whole table (default 2 000). */
  readonly changesPerSecond?: number;
  /** Simulated seconds (default 60). */
  readonly seconds?: number;
  /** Simulated seconds before the statistics start (default 10). */
  readonly warmupSeconds?: number;
  /** Scanners closer than this many rows count as one clump (default 2). */
  readonly clumpGapRows?: number;
  readonly antiClumping: boolean;
  /** PRNG seed (default 1). */
  readonly seed?: number;
}

export interface ClumpingSimResult {
  readonly antiClumping: boolean;
  /** Row visits (passes of clean rows and processings of dirty ones) per simulated second, all scanners. */
  readonly rowsScannedPerSecond: number;
  /** Dirty rows processed (observer runs) per simulated second. */
  readonly notificationsPerSecond: number;
  /** Row visits per second per scanner. */
  readonly rowsScannedPerScannerSecond: number;
  /** From a row's oldest unprocessed change to the end of the run that processed it. */
  readonly medianLatencyMs: number;
  readonly p99LatencyMs: number;
  /** Dirty rows at the end (a growing backlog means the scanners cannot keep up). */
  readonly backlogAtEnd: number;
  /** Mean number of separate clumps (1 = every scanner in one bus; N = fully spread). */
  readonly meanClumps: number;
  /** Mean size of the largest clump. */
  readonly meanLargestClump: number;
  /** Fraction of scanner time spent waiting for a row another scanner holds. */
  readonly waitFraction: number;
  readonly jumps: number;
  readonly simulatedSeconds: number;
  readonly events: number;
}

/** A binary min-heap of events by (time, seq). */
class EventQueue {
  private readonly heap: { t: number; seq: number; run: () => void }[] = [];
  private seq = 0;
  push(t: number, run: () => void): void {
    const h = this.heap;
    h.push({ t, seq: this.seq++, run });
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (less(h[p] as Ev, h[i] as Ev)) break;
      [h[p], h[i]] = [h[i] as Ev, h[p] as Ev];
      i = p;
    }
  }
  pop(): Ev | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last !== undefined) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && less(h[l] as Ev, h[m] as Ev)) m = l;
        if (r < h.length && less(h[r] as Ev, h[m] as Ev)) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i] as Ev, h[m] as Ev];
        i = m;
      }
    }
    return top;
  }
}
type Ev = { t: number; seq: number; run: () => void };
const less = (a: Ev, b: Ev): boolean => a.t < b.t || (a.t === b.t && a.seq < b.seq);

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

export function simulateClumping(o: ClumpingSimOptions): ClumpingSimResult {
  const R = o.rows ?? 10_000;
  const N = o.scanners ?? 16;
  const slowCost = o.slowCostMs ?? 50;
  const fastCost = o.fastCostMs ?? 1;
  const cleanCost = o.cleanCostMs ?? 0.1;
  const jumpCost = o.jumpCostMs ?? 0.5;
  const rate = (o.changesPerSecond ?? 2_000) / 1000; // per ms
  const endT = (o.seconds ?? 60) * 1000;
  const warmT = (o.warmupSeconds ?? 10) * 1000;
  const clumpGap = o.clumpGapRows ?? 2;
  const rand = prng(o.seed ?? 1);
  const randInt = (n: number): number => Math.floor(rand() * n);

  const slow = new Uint8Array(R);
  for (let i = 0; i < R; i++) slow[i] = rand() < (o.slowFraction ?? 0.01) ? 1 : 0;
  // Every row starts dirty: the steady state is reached from a full backlog.
  const dirty = new Uint8Array(R).fill(1);
  const dirtySince = new Float64Array(R); // 0: since the start
  const holder = new Int32Array(R).fill(-1);
  const waiters = new Map<number, number[]>();
  const pos = Int32Array.from({ length: N }, () => randInt(R));
  const waitingSince = new Float64Array(N).fill(-1);

  const q = new EventQueue();
  let events = 0;
  let visits = 0;
  let processed = 0;
  let jumps = 0;
  let waitMs = 0;
  const latencies: number[] = [];
  let clumpSamples = 0;
  let clumpSum = 0;
  let largestSum = 0;

  const change = (t: number): void => {
    const r = randInt(R);
    if (dirty[r] === 0) {
      dirty[r] = 1;
      dirtySince[r] = t;
    }
    q.push(t - Math.log(1 - rand()) / rate, () => change(q0.t));
  };

  // Visiting row `row` (its lock already taken by scanner s) at time t.
  const visit = (s: number, row: number, t: number): void => {
    const wasDirty = dirty[row] === 1;
    const since = dirtySince[row] as number;
    // The run sees every change so far; later ones leave the row dirty again.
    dirty[row] = 0;
    const cost = wasDirty ? (slow[row] === 1 ? slowCost : fastCost) : cleanCost;
    q.push(t + cost, () => done(s, row, wasDirty, since, q0.t));
  };

  const done = (s: number, row: number, wasDirty: boolean, since: number, t: number): void => {
    if (t >= warmT) {
      visits++;
      if (wasDirty) {
        processed++;
        latencies.push(t - since);
      }
    }
    holder[row] = -1;
    const w = waiters.get(row);
    if (w !== undefined && w.length > 0) {
      const next = w.shift() as number;
      if (w.length === 0) waiters.delete(row);
      holder[row] = next;
      if (t >= warmT) waitMs += t - Math.max(warmT, waitingSince[next] as number);
      waitingSince[next] = -1;
      visit(next, row, t);
    }
    pos[s] = (row + 1) % R;
    step(s, t);
  };

  const step = (s: number, t: number): void => {
    const row = pos[s] as number;
    const h = holder[row] as number;
    if (h === -1) {
      holder[row] = s;
      visit(s, row, t);
      return;
    }
    if (o.antiClumping) {
      if (t >= warmT) jumps++;
      pos[s] = randInt(R);
      q.push(t + jumpCost, () => step(s, q0.t));
      return;
    }
    let w = waiters.get(row);
    if (w === undefined) waiters.set(row, (w = []));
    w.push(s);
    waitingSince[s] = t;
  };

  const sample = (t: number): void => {
    const sorted = Array.from(pos).sort((a, b) => a - b);
    // Gaps around the ring; a clump boundary is a gap wider than clumpGap.
    const sizes: number[] = [];
    let size = 1;
    let firstBoundary = -1;
    for (let i = 0; i < N; i++) {
      const a = sorted[i] as number;
      const b = i + 1 < N ? (sorted[i + 1] as number) : (sorted[0] as number) + R;
      if (b - a > clumpGap) {
        if (firstBoundary === -1) firstBoundary = i;
        else sizes.push(size);
        size = 1;
      } else size++;
    }
    if (firstBoundary === -1) sizes.push(N);
    else sizes.push(size + firstBoundary); // the run that wraps around the ring
    clumpSamples++;
    clumpSum += sizes.length;
    largestSum += Math.max(...sizes);
    if (t + 100 < endT) q.push(t + 100, () => sample(q0.t));
  };

  // `q0` is the event being run (its time is the current time).
  let q0: Ev = { t: 0, seq: -1, run: () => undefined };
  q.push(-Math.log(1 - rand()) / rate, () => change(q0.t));
  for (let s = 0; s < N; s++) q.push(0, () => step(s, q0.t));
  q.push(warmT, () => sample(q0.t));
  for (;;) {
    const e = q.pop();
    if (e === undefined || e.t > endT) break;
    q0 = e;
    events++;
    e.run();
  }
  // Scanners still waiting at the end waited until the end.
  for (let s = 0; s < N; s++) if ((waitingSince[s] as number) >= 0) waitMs += endT - Math.max(warmT, waitingSince[s] as number);

  let backlog = 0;
  for (let i = 0; i < R; i++) backlog += dirty[i] as number;
  const sorted = Float64Array.from(latencies).sort();
  const measured = (endT - warmT) / 1000;
  const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;
  return {
    antiClumping: o.antiClumping,
    rowsScannedPerSecond: Math.round(visits / measured),
    notificationsPerSecond: Math.round(processed / measured),
    rowsScannedPerScannerSecond: Math.round(visits / measured / N),
    medianLatencyMs: round(percentile(sorted, 0.5)),
    p99LatencyMs: round(percentile(sorted, 0.99)),
    backlogAtEnd: backlog,
    meanClumps: round(clumpSamples === 0 ? 0 : clumpSum / clumpSamples, 2),
    meanLargestClump: round(clumpSamples === 0 ? 0 : largestSum / clumpSamples, 2),
    waitFraction: round(waitMs / (N * (endT - warmT)), 3),
    jumps,
    simulatedSeconds: measured,
    events,
  };
}
