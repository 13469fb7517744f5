/**
 * GC on read for a remote server: a RowFilter that keeps exactly the cells the table's GC rules
 * keep at time `now`, prepended (in a chain) to every read filter and checkAndMutate predicate.
 * Servers collect lazily (the emulator every 0.5–1.5 s, and only after a ModifyColumnFamilies
 * call; intersections never), but our contract says collected cells are never visible and that
 * filters see the row after GC. Evaluating GC on the server, in front of the caller's filter,
 * keeps both promises without reading whole rows to the client.
 *
 * Why a filter can express any GC rule: in a column (newest first) a version is removed by
 *   maxNumVersions N  iff its index ≥ N,     maxAge A  iff ts < now − A,
 * and union/intersection are or/and of those. Cut the timestamp axis at the distinct cutoffs
 * now − A; inside one interval every age test is a constant, so the rule reduces to "removed iff
 * index ≥ T" with T = min (union) / max (intersection) over the sub-rules (N for a version rule,
 * 0 or ∞ for an age rule). The kept cells of the interval are then
 *   chain[cellsPerColumnLimit T, timestampRange(interval)]
 * (the limit runs on the whole column, so indexes are positions in the full column). Intervals
 * are disjoint, so their interleave has no duplicates. Families: one interleave branch per family
 * with a rule (an unbounded `columnRange` of that family) plus one branch for every other family, a
 * regex that matches any name except those (so families created by other clients pass through).
 */
import type { GcRule, RowFilter, TableSpec } from '../types.js';

const INF = Number.POSITIVE_INFINITY;

interface AnyRule {
  readonly maxNumVersions?: number;
  readonly maxAgeMicros?: number;
  readonly union?: readonly GcRule[];
  readonly intersection?: readonly GcRule[];
}

function collectCutoffs(rule: GcRule, now: number, out: Set<number>): void {
  const r = rule as AnyRule;
  if (r.maxAgeMicros !== undefined) out.add(Math.max(0, now - r.maxAgeMicros));
  for (const s of r.union ?? r.intersection ?? []) collectCutoffs(s, now, out);
}

/** Index threshold T (removed iff index ≥ T) for cells whose timestamp lies in [lo, hi). */
function threshold(rule: GcRule, now: number, lo: number): number {
  const r = rule as AnyRule;
  if (r.maxNumVersions !== undefined) return r.maxNumVersions;
  // Within an interval all timestamps compare alike against the cutoff; test its lower end.
  if (r.maxAgeMicros !== undefined) return lo < now - r.maxAgeMicros ? 0 : INF;
  if (r.union !== undefined) {
    let t = INF;
    for (const s of r.union) t = Math.min(t, threshold(s, now, lo));
    return t;
  }
  let t = 0;
  const all = r.intersection ?? [];
  if (all.length === 0) return INF;
  for (const s of all) t = Math.max(t, threshold(s, now, lo));
  return t;
}

/** The keep filter of one family's rule, or 'all' / 'none'. */
function familyKeep(rule: GcRule, now: number): RowFilter | 'all' | 'none' {
  const cuts = new Set<number>();
  collectCutoffs(rule, now, cuts);
  const points = [...cuts].filter((c) => c > 0).sort((a, b) => a - b);
  // Intervals [bounds[i], bounds[i+1]) with the last one open-ended (end 0 = infinity).
  const bounds = [0, ...points];
  const pieces: { lo: number; hi: number; t: number }[] = [];
  for (let i = 0; i < bounds.length; i++) {
    const lo = bounds[i] as number;
    const hi = i + 1 < bounds.length ? (bounds[i + 1] as number) : 0;
    const t = threshold(rule, now, lo);
    const last = pieces[pieces.length - 1];
    if (last !== undefined && last.t === t) last.hi = hi;
    else pieces.push({ lo, hi, t });
  }
  const kept = pieces.filter((p) => p.t > 0);
  if (kept.length === 0) return 'none';
  if (kept.length === 1 && kept[0]?.lo === 0 && kept[0]?.hi === 0 && kept[0]?.t === INF) return 'all';
  const branches: RowFilter[] = kept.map((p) => {
    const parts: RowFilter[] = [];
    if (p.t !== INF) parts.push({ cellsPerColumnLimitFilter: p.t });
    if (p.lo !== 0 || p.hi !== 0) {
      parts.push({
        timestampRangeFilter: {
          ...(p.lo !== 0 ? { startTimestampMicros: p.lo } : {}),
          ...(p.hi !== 0 ? { endTimestampMicros: p.hi } : {}),
        },
      });
    }
    return parts.length === 1 ? (parts[0] as RowFilter) : { chain: parts };
  });
  return branches.length === 1 ? (branches[0] as RowFilter) : { interleave: branches };
}

/** RE2 literal for a family name ([-_.a-zA-Z0-9]); `.` is the only metacharacter possible. */
function lit(s: string): string {
  return s.replace(/[.\\^$|?*+()[\]{}-]/g, (c) => `\\${c}`);
}

interface Trie {
  end: boolean;
  kids: Map<string, Trie>;
}

const ANY = '[\\x00-\\xff]';

function complementOf(t: Trie): string {
  const alts: string[] = [];
  if (!t.end) alts.push('');
  const kids = [...t.kids.keys()].sort();
  alts.push(kids.length === 0 ? `${ANY}+` : `[^${kids.map((k) => (/[\\\]^-]/.test(k) ? `\\${k}` : k)).join('')}]${ANY}*`);
  for (const k of kids) alts.push(`${lit(k)}(${complementOf(t.kids.get(k) as Trie)})`);
  return alts.join('|');
}

/**
 * A family-name regex (full match, no ':' as data.proto demands) matching every name except
 * `names`. Capturing groups only: `(?:` would contain a colon.
 */
export function familyComplementRegex(names: readonly string[]): string {
  const root: Trie = { end: false, kids: new Map() };
  for (const n of names) {
    let node = root;
    for (const ch of n) {
      let next = node.kids.get(ch);
      if (next === undefined) {
        next = { end: false, kids: new Map() };
        node.kids.set(ch, next);
      }
      node = next;
    }
    node.end = true;
  }
  return complementOf(root);
}

/**
 * The filter keeping what the table's GC rules keep at `now` (our µs), or null when no family
 * has a rule that can remove anything.
 */
export function gcKeepFilter(spec: TableSpec, now: number): RowFilter | null {
  const branches: RowFilter[] = [];
  const ruled: string[] = [];
  for (const name of Object.keys(spec.families).sort()) {
    const rule = spec.families[name]?.gcRule;
    if (rule === undefined) continue;
    const keep = familyKeep(rule, now);
    if (keep === 'all') continue;
    ruled.push(name);
    if (keep === 'none') continue;
    // A column range without bounds selects the whole family, with no regex for the server to run.
    branches.push({ chain: [{ columnRangeFilter: { familyName: name } }, keep] });
  }
  if (ruled.length === 0) return null;
  branches.push({ familyNameRegexFilter: familyComplementRegex(ruled) });
  return branches.length === 1 ? (branches[0] as RowFilter) : { interleave: branches };
}

/** Whether any family of the table has a GC rule (reads then need the keep filter). */
export function hasGcRules(spec: TableSpec): boolean {
  return Object.values(spec.families).some((f) => f?.gcRule !== undefined);
}
