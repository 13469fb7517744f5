/**
 * A history checker for list-append histories, in the spirit of Elle (Kingsbury & Alvaro,
 * VLDB 2020): it infers each key's version order from the values themselves, builds the
 * dependency graph among committed transactions, and reports the anomalies snapshot isolation
 * forbids. Pure: no I/O, no clocks; the bank checker (bank.ts) feeds it what it recorded.
 *
 * The model. Every key holds an append-only log; a transaction that writes a key read it first
 * and appends its own id exactly once. A version of a key is identified by its length `n`
 * (version 0 is the initial state); values carry the last `tail.length` ids of the log (the
 * whole log when `tail.length === n`). Bounding the tail keeps values small on long runs while
 * keeping the key property of list-append: every observation names the writers of several
 * consecutive versions (id `tail[i]` wrote version `n - tail.length + 1 + i`), so observations
 * overlap and the version order can be cross-checked instead of trusted. A register value (the
 * bank's balance) may travel with each version and is checked against what its writer wrote.
 *
 * Why this is sound:
 * - Version order: the only writer of version p of key k is the transaction that read version
 *   p - 1 and appended. Every observation (any read, of any transaction, and the final state) is
 *   evidence of "id X wrote version p"; two different ids for one position can only mean the
 *   database exposed two incompatible histories (or lost an update). Evidence of a writer that
 *   failed is an aborted read (G1a); of an id no one wrote, a garbage read.
 * - Commitment: `ok` transactions committed; `fail` ones did not (the client was told so);
 *   `info` ones (the client died) committed exactly when some observation names them — a
 *   committed transfer is named by the next reader or writer of its keys or by the final state,
 *   because each committed writer records what it read.
 * - Dependencies (Adya): ww from version p's writer to version p+1's; wr from version n's writer
 *   to every transaction that read version n; rw from a reader of version n to version n+1's
 *   writer. Under snapshot isolation every ww or wr edge T→U has commit(T) < start(U) and every
 *   rw edge T→U has start(T) < commit(U), so a cycle with at most one rw edge is impossible:
 *   G0 (ww only), G1c (ww + wr) and G-single (exactly one rw) are reported; cycles needing two or
 *   more rw edges (G2, write skew) are legal under SI and only counted.
 * - Lost update: two committed transactions read the same version of a key and both wrote it
 *   (both claim version p + 1). Intermediate reads (G1b) cannot show up in the log because each
 *   transaction appends once per key; what can show up is a register value that its version's
 *   writer never committed (a torn or intermediate read), and that is reported as G1b.
 * - Sums: every read-only snapshot over all keys, and the final state, must add up to
 *   `expectedTotal` (the bank's invariant).
 */

export type Outcome = 'ok' | 'fail' | 'info';

/** One version of a key as observed (read) or as written. */
export interface Version {
  /** Appends the key's log has received: the version's position in the key's order (0 = initial). */
  readonly n: number;
  /** The last ids appended, oldest first (the whole log when tail.length === n). */
  readonly tail: readonly string[];
  /** A register value travelling with the log (the bank's balance); checked when present. */
  readonly value?: number;
}

export interface HistoryTxn {
  readonly id: string;
  /** ok: committed; fail: definitely not committed; info: unknown (the client died). */
  readonly outcome: Outcome;
  /** The versions the transaction read, by key (all from its one snapshot). */
  readonly reads: Readonly<Record<string, Version>>;
  /** The versions it wrote, by key: each the version it read plus its own id. */
  readonly writes: Readonly<Record<string, Version>>;
  /** A read-only snapshot of every key: its values must add up to `expectedTotal`. */
  readonly readOnly?: boolean;
}

export interface History {
  readonly txns: readonly HistoryTxn[];
  /** The final state of every key, read after every lock was resolved. */
  readonly final: Readonly<Record<string, Version>>;
  /** Version 0 of each key (to check register values read at version 0). */
  readonly initial?: Readonly<Record<string, Version>>;
  /** What every read-only snapshot and the final state must add up to. */
  readonly expectedTotal?: number;
}

export type AnomalyType =
  'G0' | 'G1a' | 'G1b' | 'G1c' | 'G-single' | 'lost-update' | 'lost-write' | 'incompatible-order' | 'garbage-read' | 'sum' | 'malformed';

export interface Anomaly {
  readonly type: AnomalyType;
  readonly message: string;
  readonly keys?: readonly string[];
  readonly txns?: readonly string[];
}

export interface CheckResult {
  readonly anomalies: Anomaly[];
  /** Ids of committed transactions: ok ones (read-only ones included) and info ones proven committed. */
  readonly committed: ReadonlySet<string>;
  readonly stats: {
    readonly ok: number;
    readonly failed: number;
    readonly info: number;
    readonly infoCommitted: number;
    readonly readOnly: number;
    readonly keys: number;
    readonly versions: number;
    readonly edges: { readonly ww: number; readonly wr: number; readonly rw: number };
    /** Dependency cycles that need two or more rw edges (write skew): legal under SI. */
    readonly g2Cycles: number;
  };
}

const WW = 1;
const WR = 2;
const RW = 4;
const EDGE_NAME: Record<number, string> = { [WW]: 'ww', [WR]: 'wr', [RW]: 'rw' };

interface Edge {
  readonly to: number;
  readonly type: number;
  readonly key: string;
}

export function checkHistory(h: History): CheckResult {
  const anomalies: Anomaly[] = [];
  const reported = new Set<string>();
  const report = (dedupe: string, a: Anomaly): void => {
    if (reported.has(dedupe)) return;
    reported.add(dedupe);
    anomalies.push(a);
  };

  // --- index and validate the records ----------------------------------------------------------
  const byId = new Map<string, HistoryTxn>();
  for (const t of h.txns) {
    if (byId.has(t.id)) {
      report(`dup:${t.id}`, { type: 'malformed', message: `transaction id ${t.id} appears twice in the history`, txns: [t.id] });
      continue;
    }
    byId.set(t.id, t);
  }
  for (const t of byId.values()) {
    for (const [k, w] of Object.entries(t.writes)) {
      const r = t.reads[k];
      const expectTail = r === undefined ? null : [...r.tail, t.id].slice(-w.tail.length);
      if (r === undefined || w.n !== r.n + 1 || w.tail.length === 0 || expectTail === null || !sameList(expectTail, w.tail)) {
        report(`mal:${t.id}:${k}`, {
          type: 'malformed',
          message: `${t.id} wrote ${k} as ${show(w)}, which is not the version it read (${r === undefined ? 'none' : show(r)}) plus its own id`,
          txns: [t.id],
          keys: [k],
        });
      }
    }
  }
  const outcomeOf = (id: string): Outcome | undefined => byId.get(id)?.outcome;

  // --- observations: who wrote which version of which key -------------------------------------
  interface Observation {
    readonly source: string;
    readonly key: string;
    readonly version: Version;
  }
  const observations: Observation[] = [];
  for (const t of byId.values()) for (const [k, v] of Object.entries(t.reads)) observations.push({ source: t.id, key: k, version: v });
  for (const [k, v] of Object.entries(h.final)) observations.push({ source: 'the final state', key: k, version: v });

  /** key → position → writer id → first source naming it. */
  const facts = new Map<string, Map<number, Map<string, string>>>();
  const addFact = (key: string, pos: number, id: string, source: string): void => {
    let byPos = facts.get(key);
    if (byPos === undefined) facts.set(key, (byPos = new Map()));
    let ids = byPos.get(pos);
    if (ids === undefined) byPos.set(pos, (ids = new Map()));
    if (!ids.has(id)) ids.set(id, source);
  };
  const proven = new Set<string>();
  for (const o of observations) {
    const { n, tail } = o.version;
    if (!Number.isSafeInteger(n) || n < 0 || tail.length > n) {
      report(`malv:${o.source}:${o.key}`, {
        type: 'malformed',
        message: `${o.source} observed ${o.key} as ${show(o.version)}: more ids than versions`,
        keys: [o.key],
      });
      continue;
    }
    tail.forEach((id, i) => {
      const pos = n - tail.length + 1 + i;
      addFact(o.key, pos, id, o.source);
      const writer = byId.get(id);
      const w = writer?.writes[o.key];
      if (writer === undefined || w === undefined) {
        report(`garbage:${o.key}:${id}`, {
          type: 'garbage-read',
          message: `${o.source} observed ${id} in ${o.key}, but no transaction in the history appended ${id} to ${o.key}`,
          keys: [o.key],
          txns: [id],
        });
      } else if (w.n !== pos) {
        report(`pos:${o.key}:${id}:${pos}`, {
          type: 'incompatible-order',
          message: `${o.source} observed ${id} as version ${pos} of ${o.key}, but ${id} wrote version ${w.n}`,
          keys: [o.key],
          txns: [id, ...(byId.has(o.source) ? [o.source] : [])],
        });
      } else if (writer.outcome === 'fail') {
        report(`g1a:${o.key}:${id}`, {
          type: 'G1a',
          message: `aborted read: ${o.source} observed ${id}'s write to ${o.key} (version ${pos}), but ${id} failed`,
          keys: [o.key],
          txns: [id, ...(byId.has(o.source) ? [o.source] : [])],
        });
      } else if (writer.outcome === 'info') {
        proven.add(id);
      }
    });
  }
  const committed = new Set<string>();
  for (const t of byId.values()) if (t.outcome === 'ok' || proven.has(t.id)) committed.add(t.id);
  for (const id of committed) {
    for (const [k, w] of Object.entries((byId.get(id) as HistoryTxn).writes)) addFact(k, w.n, id, `${id}'s own write`);
  }

  // --- version order per key --------------------------------------------------------------------
  /** key → writer of each version (index = version; null = unknown or contested). */
  const order = new Map<string, (string | null)[]>();
  let versions = 0;
  const keys = new Set<string>([...Object.keys(h.final), ...facts.keys()]);
  for (const key of [...keys].sort()) {
    const fin = h.final[key];
    if (fin === undefined) {
      report(`nofinal:${key}`, {
        type: 'malformed',
        message: `${key} was read or written but is missing from the final state`,
        keys: [key],
      });
    }
    const finalN = fin?.n ?? 0;
    const byPos = facts.get(key) ?? new Map<number, Map<string, string>>();
    let maxPos = finalN;
    for (const p of byPos.keys()) maxPos = Math.max(maxPos, p);
    const writers: (string | null)[] = new Array(maxPos + 1).fill(null);
    for (let pos = 1; pos <= maxPos; pos++) {
      const named = byPos.get(pos) ?? new Map<string, string>();
      // Failed and unknown writers were reported above; they do not contest a position.
      const candidates = [...named.keys()].filter((id) => byId.get(id)?.writes[key] !== undefined && outcomeOf(id) !== 'fail');
      if (candidates.length === 0) {
        if (pos <= finalN && named.size === 0) {
          report(`nowriter:${key}:${pos}`, {
            type: 'incompatible-order',
            message: `version ${pos} of ${key} (final version ${finalN}) has no known writer: no observation names it`,
            keys: [key],
          });
        }
        continue;
      }
      if (candidates.length === 1) {
        writers[pos] = candidates[0] as string;
      } else {
        const sources = candidates.map((id) => `${id} (named by ${named.get(id)})`).join(', ');
        const allCommittedFromSameRead = candidates.every((id) => committed.has(id) && byId.get(id)?.reads[key]?.n === pos - 1);
        if (allCommittedFromSameRead) {
          report(`lu:${key}:${pos}`, {
            type: 'lost-update',
            message: `lost update: ${candidates.join(' and ')} all read version ${pos - 1} of ${key} and all committed a write to it: ${sources}`,
            keys: [key],
            txns: candidates,
          });
        } else {
          report(`io:${key}:${pos}`, {
            type: 'incompatible-order',
            message: `version ${pos} of ${key} has several writers: ${sources}`,
            keys: [key],
            txns: candidates,
          });
        }
      }
      if (pos > finalN) {
        const who = candidates
          .map((id) => `${id} (${committed.has(id) ? 'committed' : 'uncommitted'}, named by ${named.get(id)})`)
          .join(', ');
        report(`lw:${key}:${pos}`, {
          type: 'lost-write',
          message: `version ${pos} of ${key} existed (${who}) but the final state ends at version ${finalN}`,
          keys: [key],
          txns: candidates,
        });
      }
    }
    versions += finalN;
    order.set(key, writers);
  }

  // --- register values (G1b) and sums -------------------------------------------------------------
  for (const o of observations) {
    const v = o.version.value;
    if (v === undefined) continue;
    const n = o.version.n;
    let expected: number | undefined;
    let writer = 'the initial state';
    if (n === 0) {
      expected = h.initial?.[o.key]?.value;
    } else {
      const w = order.get(o.key)?.[n];
      if (w === null || w === undefined) continue;
      writer = w;
      expected = byId.get(w)?.writes[o.key]?.value;
    }
    if (expected !== undefined && expected !== v) {
      report(`g1b:${o.key}:${n}:${o.source}`, {
        type: 'G1b',
        message: `${o.source} read ${o.key} at version ${n} with value ${v}, but ${writer} committed ${expected} there (an intermediate or torn read)`,
        keys: [o.key],
        txns: [...(writer === 'the initial state' ? [] : [writer]), ...(byId.has(o.source) ? [o.source] : [])],
      });
    }
  }
  if (h.expectedTotal !== undefined) {
    const check = (what: string, reads: Readonly<Record<string, Version>>, txns: string[]): void => {
      let sum = 0;
      for (const v of Object.values(reads)) sum += v.value ?? 0;
      if (sum !== h.expectedTotal) {
        report(`sum:${what}`, { type: 'sum', message: `${what} adds up to ${sum}, expected ${h.expectedTotal}`, txns });
      }
    };
    for (const t of byId.values()) if (t.readOnly === true && t.outcome === 'ok') check(`snapshot ${t.id}`, t.reads, [t.id]);
    check('the final state', h.final, []);
  }

  // --- dependency graph among committed transactions ----------------------------------------------
  const ids = [...committed];
  const index = new Map<string, number>();
  ids.forEach((id, i) => {
    index.set(id, i);
  });
  const adj: Edge[][] = ids.map(() => []);
  const seenEdges = new Set<string>();
  const counts = { ww: 0, wr: 0, rw: 0 };
  const addEdge = (from: string, to: string, type: number, key: string): void => {
    const u = index.get(from);
    const v = index.get(to);
    if (u === undefined || v === undefined || u === v) return;
    const k = `${u},${v},${type}`;
    if (seenEdges.has(k)) return;
    seenEdges.add(k);
    (adj[u] as Edge[]).push({ to: v, type, key });
    counts[EDGE_NAME[type] as 'ww' | 'wr' | 'rw']++;
  };
  for (const [key, writers] of order) {
    for (let p = 1; p + 1 < writers.length; p++) {
      const a = writers[p];
      const b = writers[p + 1];
      if (a !== null && a !== undefined && b !== null && b !== undefined) addEdge(a, b, WW, key);
    }
  }
  for (const id of ids) {
    const t = byId.get(id) as HistoryTxn;
    for (const [key, r] of Object.entries(t.reads)) {
      const writers = order.get(key);
      if (writers === undefined) continue;
      const w = writers[r.n];
      if (r.n >= 1 && w !== null && w !== undefined) addEdge(w, id, WR, key);
      const next = writers[r.n + 1];
      if (next !== null && next !== undefined) addEdge(id, next, RW, key);
    }
  }

  // --- cycles -------------------------------------------------------------------------------------
  const describeCycle = (cycle: { from: number; edge: Edge }[]): string =>
    cycle.map((c) => `${ids[c.from]} -${EDGE_NAME[c.edge.type]}(${c.edge.key})-> `).join('') +
    String(ids[(cycle[0] as { from: number }).from]);
  const cycleTxns = (cycle: { from: number; edge: Edge }[]): string[] => cycle.map((c) => ids[c.from] as string);

  const comp0 = stronglyConnected(adj, WW);
  const comp1 = stronglyConnected(adj, WW | WR);
  const comp2 = stronglyConnected(adj, WW | WR | RW);
  const g0Comps = new Set<number>();
  const g1cComps = new Set<number>();
  const gsComps = new Set<number>();
  for (let u = 0; u < adj.length; u++) {
    for (const e of adj[u] as Edge[]) {
      if (e.type === WW && comp0[u] === comp0[e.to] && !g0Comps.has(comp0[u] as number)) {
        g0Comps.add(comp0[u] as number);
        const cycle = closeCycle(adj, u, e, WW, comp0);
        report(`g0:${comp0[u]}`, { type: 'G0', message: `write cycle: ${describeCycle(cycle)}`, txns: cycleTxns(cycle) });
      }
      if (e.type === WR && comp1[u] === comp1[e.to] && !g1cComps.has(comp1[u] as number)) {
        g1cComps.add(comp1[u] as number);
        const cycle = closeCycle(adj, u, e, WW | WR, comp1);
        report(`g1c:${comp1[u]}`, { type: 'G1c', message: `circular information flow: ${describeCycle(cycle)}`, txns: cycleTxns(cycle) });
      }
    }
  }
  // G-single: an rw edge u→v closed by a ww/wr path v→…→u (only possible inside one SCC of the full graph).
  const cyclicComps = new Set<number>();
  for (let u = 0; u < adj.length; u++) {
    for (const e of adj[u] as Edge[]) {
      if (comp2[u] !== comp2[e.to]) continue;
      cyclicComps.add(comp2[u] as number);
      if (e.type !== RW || gsComps.has(comp2[u] as number)) continue;
      const path = findPath(adj, e.to, u, WW | WR, comp2);
      if (path === null) continue;
      gsComps.add(comp2[u] as number);
      const cycle = [{ from: u, edge: e }, ...path];
      report(`gs:${comp2[u]}`, {
        type: 'G-single',
        message: `read skew (one anti-dependency, forbidden under SI): ${describeCycle(cycle)}`,
        txns: cycleTxns(cycle),
      });
    }
  }
  // Cyclic components with none of the forbidden cycles above need two or more rw edges: G2.
  const forbidden = new Set<number>(gsComps);
  for (let u = 0; u < adj.length; u++) {
    if (g0Comps.has(comp0[u] as number) || g1cComps.has(comp1[u] as number)) forbidden.add(comp2[u] as number);
  }
  let g2Cycles = 0;
  for (const c of cyclicComps) if (!forbidden.has(c)) g2Cycles++;

  let okCount = 0;
  let failed = 0;
  let info = 0;
  let readOnly = 0;
  for (const t of byId.values()) {
    if (t.readOnly === true) readOnly++;
    if (t.outcome === 'ok') okCount++;
    else if (t.outcome === 'fail') failed++;
    else info++;
  }
  return {
    anomalies,
    committed,
    stats: { ok: okCount, failed, info, infoCommitted: proven.size, readOnly, keys: keys.size, versions, edges: counts, g2Cycles },
  };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function show(v: Version): string {
  return `{n: ${v.n}, tail: [${v.tail.join(', ')}]${v.value === undefined ? '' : `, value: ${v.value}`}}`;
}

/**
 * Tarjan's strongly connected components over the edges whose type is in `mask`, iterative (a
 * long ww chain would overflow the call stack). Returns each node's component number.
 */
function stronglyConnected(adj: readonly (readonly Edge[])[], mask: number): Int32Array {
  const n = adj.length;
  const comp = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const num = new Int32Array(n).fill(-1);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  const work: [number, number][] = [];
  let counter = 0;
  let comps = 0;
  for (let root = 0; root < n; root++) {
    if (num[root] !== -1) continue;
    work.push([root, 0]);
    while (work.length > 0) {
      const frame = work[work.length - 1] as [number, number];
      const [v, i] = frame;
      if (i === 0 && num[v] === -1) {
        num[v] = low[v] = counter++;
        stack.push(v);
        onStack[v] = 1;
      }
      const edges = adj[v] as readonly Edge[];
      let pushed = false;
      for (let j = frame[1]; j < edges.length; j++) {
        const e = edges[j] as Edge;
        frame[1] = j + 1;
        if ((e.type & mask) === 0) continue;
        const w = e.to;
        if (num[w] === -1) {
          work.push([w, 0]);
          pushed = true;
          break;
        }
        if (onStack[w] === 1) low[v] = Math.min(low[v] as number, num[w] as number);
      }
      if (pushed) continue;
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low[parent[0]] = Math.min(low[parent[0]] as number, low[v] as number);
      if (low[v] === num[v]) {
        for (;;) {
          const w = stack.pop() as number;
          onStack[w] = 0;
          comp[w] = comps;
          if (w === v) break;
        }
        comps++;
      }
    }
  }
  return comp;
}

/** Shortest path from `from` to `to` over `mask` edges inside from's component, as (node, edge) steps. */
function findPath(
  adj: readonly (readonly Edge[])[],
  from: number,
  to: number,
  mask: number,
  comp: Int32Array,
): { from: number; edge: Edge }[] | null {
  if (from === to) return [];
  const prev = new Map<number, { from: number; edge: Edge }>();
  const queue = [from];
  prev.set(from, { from: -1, edge: { to: from, type: 0, key: '' } });
  for (let qi = 0; qi < queue.length; qi++) {
    const u = queue[qi] as number;
    for (const e of adj[u] as readonly Edge[]) {
      if ((e.type & mask) === 0 || comp[e.to] !== comp[from] || prev.has(e.to)) continue;
      prev.set(e.to, { from: u, edge: e });
      if (e.to === to) {
        const path: { from: number; edge: Edge }[] = [];
        for (let x = to; x !== from;) {
          const step = prev.get(x) as { from: number; edge: Edge };
          path.unshift(step);
          x = step.from;
        }
        return path;
      }
      queue.push(e.to);
    }
  }
  return null;
}

/** A cycle through edge u→e.to, closed by a `mask` path back to u (exists: both are in one SCC). */
function closeCycle(adj: readonly (readonly Edge[])[], u: number, e: Edge, mask: number, comp: Int32Array): { from: number; edge: Edge }[] {
  return [{ from: u, edge: e }, ...(findPath(adj, e.to, u, mask, comp) ?? [])];
}
