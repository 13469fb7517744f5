/**
 * Evaluation of Bigtable v2 RowFilters over one row's cells (docs/store-semantics.md, "Filters
 * and GC rules", lists every variant).
 *
 * Invariants the rest of the store relies on:
 * - Input and output are in canonical order (family, qualifier bytes, timestamp desc). Per-cell
 *   filters preserve order; interleave and sink merge canonical lists stably, so no re-sort.
 * - Duplicates are kept: an interleave whose branches both emit a cell emits it twice, and a
 *   sunk cell also appears again if it reaches the normal output. Offsets and limits count
 *   each copy, as documented.
 * - `sink` is real: cells reaching it go to the final output, bypassing every enclosing
 *   chain/interleave, and the sink emits nothing to its parent. Final output = normal output
 *   merged with all sunk cells. (The emulator ignores sink.)
 * - Every filter was validated by compileFilter, so evaluation never throws for bad input,
 *   except the defensive one-label-per-cell check (unreachable for label-free input).
 * - Nothing allocates when a filter keeps everything: filters return their input array. Hence
 *   `apply` may return `cells` itself; callers must treat results as read-only.
 * - Adjacent per-cell predicates in a chain (family/qualifier regex, column/value/timestamp
 *   ranges) are fused into one pass: the transaction layer's hot path is exactly such chains.
 */
import { compareBytes, EMPTY_BYTES } from '../bytes.js';
import { CellRecord } from '../cells.js';
import { StoreError } from '../errors.js';
import type { Cell, ColumnRange, RowFilter, TimestampRange, ValueRange } from '../types.js';
import { filterFamilies } from './filter-families.js';
import { compileRegex } from './re2-regex.js';
import { filterKind, validateFilter } from './validate-filter.js';

export interface CompiledFilter {
  /**
   * cells: one row's cells in canonical order (family name asc, qualifier bytes asc, timestamp
   * desc), labels empty. Returns the filtered cells in canonical order. The result may be
   * `cells` itself (when nothing was removed or changed): do not mutate it.
   */
  apply(rowKey: Uint8Array, cells: readonly Cell[], random?: () => number): Cell[];
  /**
   * The set of family names this filter can possibly output cells from, or null if it may
   * output any family. Conservative (null is always allowed). Used to skip locality groups
   * whose families cannot appear.
   */
  readonly families: ReadonlySet<string> | null;
}

interface Ctx {
  readonly rowKey: Uint8Array;
  readonly random: () => number;
  /** Canonical lists of cells that reached a sink, in evaluation order. */
  sunk: (readonly Cell[])[] | null;
}

type CellPred = (c: Cell) => boolean;
type Run = (cells: readonly Cell[], ctx: Ctx) => readonly Cell[];

/** Compiled node: a fusable per-cell predicate, or a general row transformation. */
type Node = { readonly preds: readonly CellPred[]; readonly run?: undefined } | { readonly preds?: undefined; readonly run: Run };

const NONE: readonly Cell[] = Object.freeze([]);
const PASS: Node = { run: (cells) => cells };
const BLOCK: Node = { run: () => NONE };

/** Validates the whole tree (StoreError INVALID_FILTER / INVALID_REGEX) and compiles it. */
export function compileFilter(filter: RowFilter): CompiledFilter {
  validateFilter(filter);
  const root = toRun(compile(filter));
  const families = filterFamilies(filter);
  return {
    families,
    apply(rowKey: Uint8Array, cells: readonly Cell[], random: () => number = Math.random): Cell[] {
      if (cells.length === 0) return [];
      const ctx: Ctx = { rowKey, random, sunk: null };
      let out = root(cells, ctx);
      if (ctx.sunk !== null) for (const s of ctx.sunk) out = merge(out, s);
      return out === NONE ? [] : (out as Cell[]);
    },
  };
}

function compile(f: RowFilter): Node {
  const kind = filterKind(f);
  switch (kind) {
    case 'chain':
      return compileChain((f as { chain: readonly RowFilter[] }).chain);
    case 'interleave':
      return compileInterleave((f as { interleave: readonly RowFilter[] }).interleave);
    case 'condition': {
      const c = (f as Extract<RowFilter, { condition: unknown }>).condition;
      return compileCondition(compile(c.predicateFilter), c.trueFilter && compile(c.trueFilter), c.falseFilter && compile(c.falseFilter));
    }
    case 'sink':
      return {
        run(cells, ctx) {
          if (cells.length > 0) (ctx.sunk ??= []).push(cells);
          return NONE;
        },
      };
    case 'passAllFilter':
      return PASS;
    case 'blockAllFilter':
      return BLOCK;
    case 'rowKeyRegexFilter': {
      const re = compileRegex((f as { rowKeyRegexFilter: Uint8Array | string }).rowKeyRegexFilter);
      return { run: (cells, ctx) => (re.test(ctx.rowKey) ? cells : NONE) };
    }
    case 'rowSampleFilter': {
      const p = (f as { rowSampleFilter: number }).rowSampleFilter;
      return { run: (cells, ctx) => (ctx.random() < p ? cells : NONE) };
    }
    case 'familyNameRegexFilter':
      return { preds: [familyRegexPred((f as { familyNameRegexFilter: string }).familyNameRegexFilter)] };
    case 'columnQualifierRegexFilter':
      return { preds: [qualifierRegexPred((f as { columnQualifierRegexFilter: Uint8Array | string }).columnQualifierRegexFilter)] };
    case 'columnRangeFilter':
      return { preds: [columnRangePred((f as { columnRangeFilter: ColumnRange }).columnRangeFilter)] };
    case 'timestampRangeFilter':
      return { preds: [timestampPred((f as { timestampRangeFilter: TimestampRange }).timestampRangeFilter)] };
    case 'valueRegexFilter': {
      const re = compileRegex((f as { valueRegexFilter: Uint8Array | string }).valueRegexFilter);
      return { preds: [(c) => re.test(c.value)] };
    }
    case 'valueRangeFilter': {
      const inRange = bytesRange((f as { valueRangeFilter: ValueRange }).valueRangeFilter, 'Value');
      return { preds: [(c) => inRange(c.value)] };
    }
    case 'cellsPerRowOffsetFilter': {
      const n = (f as { cellsPerRowOffsetFilter: number }).cellsPerRowOffsetFilter;
      return n === 0 ? PASS : { run: (cells) => (cells.length <= n ? NONE : cells.slice(n)) };
    }
    case 'cellsPerRowLimitFilter': {
      const n = (f as { cellsPerRowLimitFilter: number }).cellsPerRowLimitFilter;
      return n === 0 ? BLOCK : { run: (cells) => (cells.length <= n ? cells : cells.slice(0, n)) };
    }
    case 'cellsPerColumnLimitFilter': {
      const n = (f as { cellsPerColumnLimitFilter: number }).cellsPerColumnLimitFilter;
      return n === 0 ? BLOCK : { run: (cells) => perColumnLimit(cells, n) };
    }
    case 'stripValueTransformer':
      return { run: stripValues };
    case 'applyLabelTransformer': {
      const label = (f as { applyLabelTransformer: string }).applyLabelTransformer;
      const labels = Object.freeze([label]);
      return { run: (cells) => applyLabel(cells, label, labels) };
    }
  }
}

function toRun(node: Node): Run {
  if (node.run !== undefined) return node.run;
  const all = conjunction(node.preds);
  return (cells) => keepWhere(cells, all);
}

function compileChain(filters: readonly RowFilter[]): Node {
  const steps: Node[] = [];
  for (const sub of filters) {
    const node = compile(sub);
    if (node === PASS) continue;
    const last = steps[steps.length - 1];
    if (node.preds !== undefined && last !== undefined && last.preds !== undefined) {
      steps[steps.length - 1] = { preds: [...last.preds, ...node.preds] };
    } else steps.push(node);
  }
  if (steps.length === 0) return PASS;
  if (steps.length === 1) return steps[0] as Node;
  const runs = steps.map(toRun);
  return {
    run(cells, ctx) {
      let cur = cells;
      for (const r of runs) {
        if (cur.length === 0) return NONE; // nothing flows on: later steps can neither emit nor sink
        cur = r(cur, ctx);
      }
      return cur;
    },
  };
}

function compileInterleave(filters: readonly RowFilter[]): Node {
  if (filters.length === 0) return BLOCK;
  if (filters.length === 1) return compile(filters[0] as RowFilter);
  const nodes = filters.map(compile);
  if (nodes.every((n) => n.preds !== undefined)) {
    // Every branch only keeps cells (Percolator's reads: exact lock and write columns): one pass.
    // A cell matching k branches is emitted k times, adjacent — exactly what merging the
    // branches' canonical outputs gives, since equal cells sort together.
    const branches = nodes.map((n) => conjunction(n.preds as readonly CellPred[]));
    return { run: (cells) => keepCounted(cells, branches) };
  }
  const runs = nodes.map(toRun);
  return {
    run(cells, ctx) {
      let out: readonly Cell[] = NONE;
      for (const r of runs) out = merge(out, r(cells, ctx));
      return out;
    },
  };
}

function compileCondition(pred: Node, onTrue: Node | undefined, onFalse: Node | undefined): Node {
  // The predicate cannot contain a sink (validated), so only whether it emits anything matters.
  let matches: (cells: readonly Cell[], ctx: Ctx) => boolean;
  if (pred.preds !== undefined) {
    const all = conjunction(pred.preds);
    matches = (cells) => cells.some(all);
  } else {
    const run = pred.run;
    matches = (cells, ctx) => run(cells, ctx).length > 0;
  }
  const t = onTrue === undefined ? undefined : toRun(onTrue);
  const f = onFalse === undefined ? undefined : toRun(onFalse);
  return {
    run(cells, ctx) {
      const branch = matches(cells, ctx) ? t : f;
      return branch === undefined ? NONE : branch(cells, ctx);
    },
  };
}

function conjunction(preds: readonly CellPred[]): CellPred {
  if (preds.length === 1) return preds[0] as CellPred;
  if (preds.length === 2) {
    const [p, q] = preds as [CellPred, CellPred];
    return (c) => p(c) && q(c);
  }
  const p = preds[0] as CellPred;
  const rest = conjunction(preds.slice(1));
  return (c) => p(c) && rest(c);
}

/** Cells satisfying `p`, in order; the input itself when all do. */
function keepWhere(cells: readonly Cell[], p: CellPred): readonly Cell[] {
  const n = cells.length;
  let i = 0;
  while (i < n && p(cells[i] as Cell)) i++;
  if (i === n) return cells;
  const out = cells.slice(0, i);
  for (i++; i < n; i++) {
    const c = cells[i] as Cell;
    if (p(c)) out.push(c);
  }
  return out;
}

/** Stable merge of two canonical lists; on equal (family, qualifier, timestamp) `a` comes first. */
function merge(a: readonly Cell[], b: readonly Cell[]): readonly Cell[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const out: Cell[] = new Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let o = 0;
  while (i < a.length && j < b.length) {
    if (cellOrder(b[j] as Cell, a[i] as Cell) < 0) out[o++] = b[j++] as Cell;
    else out[o++] = a[i++] as Cell;
  }
  while (i < a.length) out[o++] = a[i++] as Cell;
  while (j < b.length) out[o++] = b[j++] as Cell;
  return out;
}

/** Canonical order (as compareCells in cells.ts, with the fast byte comparison). */
function cellOrder(a: Cell, b: Cell): number {
  if (a.family !== b.family) return a.family < b.family ? -1 : 1;
  const q = a.qualifier === b.qualifier ? 0 : cmp(a.qualifier, b.qualifier);
  return q !== 0 ? q : b.timestamp - a.timestamp;
}

function sameColumn(a: Cell, b: Cell): boolean {
  return a.family === b.family && (a.qualifier === b.qualifier || cmp(a.qualifier, b.qualifier) === 0);
}

/**
 * Unsigned lexicographic comparison. Qualifiers and small values are compared in JS: the native
 * Buffer.compare costs ~100 ns per call here, several times a short loop.
 */
function cmp(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  if (n > 64) return compareBytes(a, b);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

function perColumnLimit(cells: readonly Cell[], n: number): readonly Cell[] {
  let out: Cell[] | null = null;
  let run = 0;
  for (let i = 0; i < cells.length; i++) {
    const c = cells[i] as Cell;
    run = i > 0 && sameColumn(c, cells[i - 1] as Cell) ? run + 1 : 1;
    if (run <= n) {
      if (out !== null) out.push(c);
    } else out ??= cells.slice(0, i);
  }
  return out ?? cells;
}

function stripValues(cells: readonly Cell[]): readonly Cell[] {
  let i = 0;
  while (i < cells.length && (cells[i] as Cell).value.length === 0) i++;
  if (i === cells.length) return cells;
  const out = cells.slice(0, i);
  for (; i < cells.length; i++) {
    const c = cells[i] as Cell;
    out.push(c.value.length === 0 ? c : new CellRecord(c.family, c.qualifier, c.timestamp, EMPTY_BYTES, c.labels));
  }
  return out;
}

function applyLabel(cells: readonly Cell[], label: string, labels: readonly string[]): readonly Cell[] {
  return cells.map((c) => {
    if (c.labels.length > 0) {
      throw new StoreError(
        'INVALID_FILTER',
        `cannot apply label "${label}": a cell may carry only one label, it already has "${c.labels[0]}"`,
        {
          label,
          existing: c.labels,
        },
      );
    }
    return new CellRecord(c.family, c.qualifier, c.timestamp, c.value, labels);
  });
}

function familyRegexPred(pattern: string): CellPred {
  const re = compileRegex(pattern);
  const memo = new Map<string, boolean>(); // a table has few families
  return (c) => {
    let r = memo.get(c.family);
    if (r === undefined) {
      r = re.testString(c.family);
      memo.set(c.family, r);
    }
    return r;
  };
}

function qualifierRegexPred(pattern: Uint8Array | string): CellPred {
  const re = compileRegex(pattern);
  // The versions of one column are adjacent: remember the last qualifier's verdict. The memo
  // keeps its own copy, so a caller reusing a qualifier buffer cannot make it stale.
  let lastQ: Uint8Array | null = null;
  let lastR = false;
  return (c) => {
    const q = c.qualifier;
    if (lastQ === null || cmp(q, lastQ) !== 0) {
      lastR = re.test(q);
      lastQ = q.slice();
    }
    return lastR;
  };
}

/** Cells matched by any branch, each as many times as branches match it, in order. */
function keepCounted(cells: readonly Cell[], branches: readonly CellPred[]): readonly Cell[] {
  let out: Cell[] | null = null;
  for (let i = 0; i < cells.length; i++) {
    const c = cells[i] as Cell;
    let k = 0;
    for (const b of branches) if (b(c)) k++;
    if (k === 1 && out === null) continue; // still an unchanged prefix of the input
    if (out === null) out = cells.slice(0, i) as Cell[];
    for (; k > 0; k--) out.push(c);
  }
  if (out === null) return cells.length === 0 ? NONE : cells; // every cell matched exactly once
  return out.length === 0 ? NONE : out;
}

function columnRangePred(r: ColumnRange): CellPred {
  const fam = r.familyName;
  const exact = r.startQualifierClosed;
  if (exact !== undefined && r.endQualifierClosed !== undefined && r.startQualifierOpen === undefined && r.endQualifierOpen === undefined) {
    if (cmp(exact, r.endQualifierClosed) === 0) {
      // One exact column (the transaction layer's reads): an equality test, length first.
      const n = exact.length;
      return (c) => c.family === fam && c.qualifier.length === n && cmp(c.qualifier, exact) === 0;
    }
  }
  const inRange = bytesRange(r, 'Qualifier');
  return (c) => c.family === fam && inRange(c.qualifier);
}

function timestampPred(r: TimestampRange): CellPred {
  const start = r.startTimestampMicros ?? 0;
  const end = r.endTimestampMicros ?? 0;
  if (end === 0) return (c) => c.timestamp >= start;
  return (c) => c.timestamp >= start && c.timestamp < end;
}

/** Byte-range test for ColumnRange (`…Qualifier…`) and ValueRange (`…Value…`) bounds. */
function bytesRange(r: ColumnRange | ValueRange, what: 'Qualifier' | 'Value'): (b: Uint8Array) => boolean {
  const o = r as unknown as Record<string, Uint8Array | undefined>;
  const sc = o[`start${what}Closed`];
  const so = o[`start${what}Open`];
  const ec = o[`end${what}Closed`];
  const eo = o[`end${what}Open`];
  return (b) => {
    if (sc !== undefined && cmp(b, sc) < 0) return false;
    if (so !== undefined && cmp(b, so) <= 0) return false;
    if (ec !== undefined && cmp(b, ec) > 0) return false;
    if (eo !== undefined && cmp(b, eo) >= 0) return false;
    return true;
  };
}
