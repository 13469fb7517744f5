/**
 * The history checker must find every anomaly class it claims to find, in histories made by hand
 * to contain exactly that anomaly, and must accept clean histories (including legal write skew,
 * failed and indeterminate transactions, bounded log tails and long chains). Expected findings
 * are written out here, never computed by the checker's own helpers.
 */
import { describe, expect, it } from 'vitest';
import { type AnomalyType, checkHistory, type HistoryTxn, type Outcome, type Version } from './history.js';

/** A version holding the whole log `list` (optionally only its last `k` ids). */
function v(list: string[], value?: number, k = Number.POSITIVE_INFINITY): Version {
  return { n: list.length, tail: list.slice(Math.max(0, list.length - k)), ...(value === undefined ? {} : { value }) };
}

/** A transaction that read `reads` (key → whole log) and appended its id to `writeKeys`. */
function txn(
  id: string,
  outcome: Outcome,
  reads: Record<string, string[]>,
  writeKeys: string[],
  values: Record<string, [number, number]> = {},
): HistoryTxn {
  const r: Record<string, Version> = {};
  const w: Record<string, Version> = {};
  for (const [k, list] of Object.entries(reads)) r[k] = v(list, values[k]?.[0]);
  for (const k of writeKeys) w[k] = v([...(reads[k] as string[]), id], values[k]?.[1]);
  return { id, outcome, reads: r, writes: w };
}

function snapshot(id: string, reads: Record<string, [string[], number?]>): HistoryTxn {
  const r: Record<string, Version> = {};
  for (const [k, [list, value]] of Object.entries(reads)) r[k] = v(list, value);
  return { id, outcome: 'ok', reads: r, writes: {}, readOnly: true };
}

function types(r: ReturnType<typeof checkHistory>): AnomalyType[] {
  return [...new Set(r.anomalies.map((a) => a.type))].sort();
}

describe('checkHistory accepts clean histories', () => {
  it('serial transfers, with snapshots, sums and values', () => {
    const r = checkHistory({
      txns: [
        txn('T1', 'ok', { x: [], y: [] }, ['x', 'y'], { x: [10, 7], y: [10, 13] }),
        snapshot('R1', { x: [['T1'], 7], y: [['T1'], 13] }),
        txn('T2', 'ok', { x: ['T1'], y: ['T1'] }, ['x', 'y'], { x: [7, 12], y: [13, 8] }),
        snapshot('R0', { x: [[], 10], y: [[], 10] }),
      ],
      final: { x: v(['T1', 'T2'], 12), y: v(['T1', 'T2'], 8) },
      initial: { x: v([], 10), y: v([], 10) },
      expectedTotal: 20,
    });
    expect(r.anomalies).toEqual([]);
    expect([...r.committed].sort()).toEqual(['R0', 'R1', 'T1', 'T2']);
    // Distinct (from, to, type) edges: T1→T2 ww; T1→R1, T1→T2 wr; R1→T2, R0→T1 rw.
    expect(r.stats.edges).toEqual({ ww: 1, wr: 2, rw: 2 });
    expect(r.stats.g2Cycles).toBe(0);
  });

  it('failed and indeterminate transactions: info is committed exactly when observed', () => {
    const r = checkHistory({
      txns: [
        txn('T1', 'ok', { x: [], y: [] }, ['x', 'y']),
        txn('F1', 'fail', { x: ['T1'], y: ['T1'] }, ['x', 'y']),
        txn('I1', 'info', { x: ['T1'], y: ['T1'] }, ['x', 'y']),
        txn('I2', 'info', { x: ['T1', 'I1'], y: ['T1', 'I1'] }, ['x', 'y']),
        txn('I3', 'info', { x: ['T1', 'I1'], y: ['T1', 'I1'] }, ['x', 'y']),
      ],
      final: { x: v(['T1', 'I1', 'I2']), y: v(['T1', 'I1', 'I2']) },
    });
    expect(r.anomalies).toEqual([]);
    expect([...r.committed].sort()).toEqual(['I1', 'I2', 'T1']);
    expect(r.stats).toMatchObject({ ok: 1, failed: 1, info: 3, infoCommitted: 2 });
  });

  it('write skew (a G2 cycle of two anti-dependencies) is legal under SI: counted, not reported', () => {
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [], y: [] }, ['x']), txn('T2', 'ok', { x: [], y: [] }, ['y'])],
      final: { x: v(['T1']), y: v(['T2']) },
    });
    expect(r.anomalies).toEqual([]);
    expect(r.stats.g2Cycles).toBe(1);
  });

  it('bounded tails: overlapping windows reconstruct a long order', () => {
    const k = 3;
    const txns: HistoryTxn[] = [];
    const logs: Record<string, string[]> = { x: [], y: [], z: [] };
    const keys = ['x', 'y', 'z'];
    for (let i = 0; i < 30; i++) {
      const a = keys[i % 3] as string;
      const b = keys[(i + 1) % 3] as string;
      const id = `T${i}`;
      const reads: Record<string, Version> = { [a]: v(logs[a] as string[], undefined, k), [b]: v(logs[b] as string[], undefined, k) };
      (logs[a] as string[]).push(id);
      (logs[b] as string[]).push(id);
      const writes: Record<string, Version> = { [a]: v(logs[a] as string[], undefined, k), [b]: v(logs[b] as string[], undefined, k) };
      txns.push({ id, outcome: i % 4 === 0 ? 'info' : 'ok', reads, writes });
    }
    const r = checkHistory({
      txns,
      final: { x: v(logs.x as string[], undefined, k), y: v(logs.y as string[], undefined, k), z: v(logs.z as string[], undefined, k) },
    });
    expect(r.anomalies).toEqual([]);
    expect(r.committed.size).toBe(30);
    expect(r.stats.versions).toBe(60);
  });

  it('a long serial chain (20 000 transfers) is checked quickly without deep recursion', () => {
    const k = 16;
    const logs: Record<string, string[]> = { x: [], y: [] };
    const txns: HistoryTxn[] = [];
    for (let i = 0; i < 20_000; i++) {
      const id = `T${i}`;
      const reads = { x: v(logs.x as string[], undefined, k), y: v(logs.y as string[], undefined, k) };
      logs.x?.push(id);
      logs.y?.push(id);
      txns.push({ id, outcome: 'ok', reads, writes: { x: v(logs.x as string[], undefined, k), y: v(logs.y as string[], undefined, k) } });
    }
    const started = performance.now();
    const r = checkHistory({ txns, final: { x: v(logs.x as string[], undefined, k), y: v(logs.y as string[], undefined, k) } });
    expect(r.anomalies).toEqual([]);
    expect(r.committed.size).toBe(20_000);
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe('checkHistory detects each anomaly', () => {
  it('G0: a cycle of write dependencies', () => {
    // x: T1 then T2; y: T2 then T1.
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [], y: ['T2'] }, ['x', 'y']), txn('T2', 'ok', { x: ['T1'], y: [] }, ['x', 'y'])],
      final: { x: v(['T1', 'T2']), y: v(['T2', 'T1']) },
    });
    expect(types(r)).toContain('G0');
    const g0 = r.anomalies.find((a) => a.type === 'G0');
    expect([...(g0?.txns ?? [])].sort()).toEqual(['T1', 'T2']);
  });

  it('G1a: a committed transaction read the write of a failed one', () => {
    const r = checkHistory({
      txns: [txn('F1', 'fail', { x: [] }, ['x']), txn('T2', 'ok', { x: ['F1'] }, ['x'])],
      final: { x: v(['F1', 'T2']) },
    });
    expect(types(r)).toContain('G1a');
    expect(r.anomalies.find((a) => a.type === 'G1a')?.txns).toEqual(['F1', 'T2']);
  });

  it('G1a: a snapshot read the write of a failed transaction that the final state does not hold', () => {
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [] }, ['x']), txn('F1', 'fail', { x: ['T1'] }, ['x']), snapshot('R', { x: [['T1', 'F1']] })],
      final: { x: v(['T1']) },
    });
    expect(types(r)).toEqual(['G1a']);
  });

  it('G1b: a read saw a value its version writer never committed (intermediate / torn read)', () => {
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [] }, ['x'], { x: [10, 5] }), snapshot('R', { x: [['T1'], 7] })],
      final: { x: v(['T1'], 5) },
      initial: { x: v([], 10) },
    });
    expect(types(r)).toEqual(['G1b']);
  });

  it('G1b: a value read at version 0 that is not the initial value', () => {
    const r = checkHistory({
      txns: [snapshot('R', { x: [[], 9] })],
      final: { x: v([], 10) },
      initial: { x: v([], 10) },
    });
    expect(types(r)).toEqual(['G1b']);
  });

  it('G1c: circular information flow (write-read cycle, no write cycle)', () => {
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [], y: ['T2'] }, ['x']), txn('T2', 'ok', { x: ['T1'], y: [] }, ['y'])],
      final: { x: v(['T1']), y: v(['T2']) },
    });
    expect(types(r)).toEqual(['G1c']);
  });

  it('lost update: two committed transactions read the same version and both appended', () => {
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [] }, ['x']), txn('T2', 'ok', { x: [] }, ['x'])],
      final: { x: v(['T2']) },
    });
    expect(types(r)).toEqual(['lost-update']);
    expect([...(r.anomalies[0]?.txns ?? [])].sort()).toEqual(['T1', 'T2']);
  });

  it('lost update where one side is an indeterminate transaction proven committed by a read', () => {
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [] }, ['x']), txn('I2', 'info', { x: [] }, ['x']), snapshot('R', { x: [['I2']] })],
      final: { x: v(['T1']) },
    });
    expect(types(r)).toContain('lost-update');
  });

  it("G-single (read skew): a snapshot saw one of a transaction's writes but not the other", () => {
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [], y: [] }, ['x', 'y'], { x: [10, 5], y: [10, 15] }), snapshot('R', { x: [['T1'], 5], y: [[], 10] })],
      final: { x: v(['T1'], 5), y: v(['T1'], 15) },
      initial: { x: v([], 10), y: v([], 10) },
      expectedTotal: 20,
    });
    expect(types(r)).toEqual(['G-single', 'sum']);
  });

  it('incompatible order: an observation places a writer at a version it did not write', () => {
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [] }, ['x']), txn('T2', 'ok', { x: ['T1'] }, ['x']), snapshot('R', { x: [['T2']] })],
      final: { x: v(['T1', 'T2']) },
    });
    expect(types(r)).toEqual(['incompatible-order']);
  });

  it('incompatible order: two reads that disagree on the order of a key', () => {
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [] }, ['x']), txn('T2', 'ok', { x: ['T1'] }, ['x']), snapshot('R', { x: [['T2', 'T1']] })],
      final: { x: v(['T1', 'T2']) },
    });
    expect(types(r)).toContain('incompatible-order');
  });

  it('lost write: a committed write is missing from the final state', () => {
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [] }, ['x'])],
      final: { x: v([]) },
    });
    expect(types(r)).toEqual(['lost-write']);
  });

  it('garbage read: an id no transaction wrote', () => {
    const r = checkHistory({ txns: [snapshot('R', { x: [['Z']] })], final: { x: v([]) } });
    expect(types(r)).toContain('garbage-read');
  });

  it('sum: a snapshot or the final state that does not add up', () => {
    const r = checkHistory({
      txns: [txn('T1', 'ok', { x: [], y: [] }, ['x', 'y'], { x: [10, 4], y: [10, 15] })],
      final: { x: v(['T1'], 4), y: v(['T1'], 15) },
      initial: { x: v([], 10), y: v([], 10) },
      expectedTotal: 20,
    });
    expect(types(r)).toEqual(['sum']);
  });

  it('malformed: a write that is not the version read plus the writer id', () => {
    const bad: HistoryTxn = { id: 'T1', outcome: 'ok', reads: { x: v([]) }, writes: { x: v(['T9']) } };
    const r = checkHistory({ txns: [bad], final: { x: v([]) } });
    expect(types(r)).toContain('malformed');
  });
});
