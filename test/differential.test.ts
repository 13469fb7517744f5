/**
 * Differential tests: the same seeded random sequences of operations and filters run against
 *   - `memory:` directly (our reference semantics: the Cloud Bigtable documentation),
 *   - Google's emulator through BigtableStore, raw (every filter evaluated by the emulator),
 *   - Google's emulator through BigtableStore with `?emulator=1` (its departures worked around),
 *   - `percolator serve` (over a memory store) through BigtableStore,
 * and every result must be identical after normalization. Operations that hit a documented
 * emulator departure are excluded for that target only (docs/bigtable-backend.md lists each
 * exclusion and why); when such an operation writes, the reference's effect is replayed on the
 * excluded target so the states stay comparable. Every 100 operations, and at the end, the
 * targets' whole tables are compared too.
 *
 * Determinism: one injected clock drives every target (server time "-1", max-age GC on read),
 * and cell timestamps lie in the year 2100 so the emulator's wall-clock GC never collects by age.
 * Time-ranged deletes are not generated for families whose GC rule counts versions: deleting newer
 * versions would make hidden older ones reappear depending on when each server physically
 * reclaimed them (GC is asynchronous), which the documentation leaves open.
 *
 * Skips with a clear message where cbtemulator is not installed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BigtableStore } from '../src/store/bigtable/bigtable-store.js';
import { isStoreError } from '../src/store/errors.js';
import { filterKind } from '../src/store/filter/validate-filter.js';
import { openStore } from '../src/store/open-store.js';
import { collectRows, type Store } from '../src/store/store.js';
import type {
  Bytes,
  Cell,
  CheckAndMutateRequest,
  GcRule,
  MutateRowsEntry,
  Mutation,
  ReadModifyWriteRule,
  ReadRowsOptions,
  Row,
  RowFilter,
  RowRange,
  RowSet,
  TableSpec,
} from '../src/store/types.js';
import { EMULATOR_MISSING, emulatorBinary, type RunningEmulator, startEmulator } from './support/emulator.js';
import { mulberry32 as prng, seedFromEnv } from '../src/util/seeded-random.js';

const binary = emulatorBinary();
if (binary === null) console.warn(EMULATOR_MISSING);

const b = (s: string): Bytes => Buffer.from(s, 'latin1');
const hex = (x: Uint8Array): string => Buffer.from(x).toString('hex');

/** 2100-01-01T00:00:00Z in µs: far in the emulator's future, so it never collects by age. */
const BASE = 4_102_444_800_000_000;

const RULES: Record<string, GcRule | null> = {
  a: null,
  ab: null,
  b: null,
  B: null,
  'a.b': null,
  v2: { maxNumVersions: 2 },
  u: { union: [{ maxNumVersions: 3 }, { maxAgeMicros: 40_000 }] },
  i: { intersection: [{ maxNumVersions: 1 }, { maxAgeMicros: 20_000 }] },
  age: { maxAgeMicros: 30_000 },
};
const FAMILIES = Object.keys(RULES);
/** Families where a time-ranged delete is deterministic (no version-count rule). */
const RANGE_DELETE_FAMILIES = ['a', 'ab', 'b', 'B', 'a.b', 'age'];
const SPEC: TableSpec = {
  families: Object.fromEntries(FAMILIES.map((f) => [f, RULES[f] === null ? {} : { gcRule: RULES[f] as GcRule }])),
};

const KEYS = [
  'a',
  'ab',
  'abc',
  'b',
  'k0',
  'k1',
  'k2',
  'k10',
  'r',
  'r\u0000',
  'r\u00ff',
  'x',
  '\u0000',
  '\u00ff',
  '\u00ff\u00ff',
  'zz',
  'k1\n',
  'mid',
].map(b);
const QUALS = ['', 'q', 'q1', 'q2', 'q10', 'Q', '\u00ff', 'a\nb', 'n'].map(b);
const VALUES = ['', 'v', 'v1', 'v2', 'hello', 'hel\nlo', '\u0000\u00ff', 'abc', 'w', 'x'].map(b);
const COUNTER = (n: bigint): Bytes => {
  const buf = Buffer.alloc(8);
  buf.writeBigInt64BE(BigInt.asIntN(64, n));
  return buf;
};
const LABELS = ['x', 'lab-1', 'z9'];
const KEY_REGEXES = ['a.*', 'k[0-9]', 'k1.*', 'r\\C', '.*b.*', '\\C*', 'r.', '(a|x)', '', 'k\\d+', '[^k].*', '('];
const FAMILY_REGEXES = ['a', 'a.*', 'b|v2', '[a-c]', 'a\\.b', 'B', 'u|i|age', '.*', 'v.', 'zz'];
const QUAL_REGEXES = ['q', 'q.*', 'q[0-9]+', '', '\\C*', 'a.b', 'a\\C*b', '\\xff', 'Q|n'];
const VALUE_REGEXES = ['v.*', 'hel.*', 'hel\\C*', '', '.*', '\\x00\\xff', '[a-w]', 'x|w', '\\C{8}'];

interface Gen {
  rnd: () => number;
  scale: 1 | 1000;
  clock: { now: number };
}

const pick = <T>(g: Gen, xs: readonly T[]): T => xs[Math.floor(g.rnd() * xs.length)] as T;
const chance = (g: Gen, p: number): boolean => g.rnd() < p;
const int = (g: Gen, lo: number, hi: number): number => lo + Math.floor(g.rnd() * (hi - lo + 1));

/** A cell timestamp near the clock: ms multiples at scale 1, any µs at scale 1000. */
function genTs(g: Gen): number {
  const off = g.scale === 1 ? int(g, 0, 80) * 1000 : int(g, 0, 80_000);
  return Math.max(0, g.clock.now - 60_000 + off);
}

function genRange(g: Gen): { startTimestampMicros?: number; endTimestampMicros?: number } {
  const out: { startTimestampMicros?: number; endTimestampMicros?: number } = {};
  let s = chance(g, 0.8) ? genTs(g) : undefined;
  let e = chance(g, 0.7) ? genTs(g) : chance(g, 0.5) ? 0 : undefined;
  if (s !== undefined && e !== undefined && e !== 0 && s > e && chance(g, 0.9)) [s, e] = [e, s];
  if (s !== undefined) out.startTimestampMicros = s;
  if (e !== undefined) out.endTimestampMicros = e;
  return out;
}

function genBounds<K extends string>(g: Gen, pool: readonly Bytes[], names: readonly [K, K, K, K]): Partial<Record<K, Bytes>> {
  const out: Partial<Record<K, Bytes>> = {};
  let lo = pick(g, pool);
  let hi = pick(g, pool);
  if (Buffer.compare(lo, hi) > 0 && chance(g, 0.9)) [lo, hi] = [hi, lo];
  const s = g.rnd();
  if (s < 0.4) out[names[0]] = lo;
  else if (s < 0.7) out[names[1]] = lo;
  const e = g.rnd();
  if (e < 0.4) out[names[2]] = hi;
  else if (e < 0.7) out[names[3]] = hi;
  return out;
}

function genFilter(g: Gen, depth = 0, inCondition = false): RowFilter {
  const composite = depth < 3 && chance(g, 0.35);
  if (composite) {
    const k = g.rnd();
    if (k < 0.4) return { chain: Array.from({ length: int(g, 0, 3) }, () => genFilter(g, depth + 1, inCondition)) };
    if (k < 0.7) return { interleave: Array.from({ length: int(g, 0, 3) }, () => genFilter(g, depth + 1, inCondition)) };
    const c: { predicateFilter: RowFilter; trueFilter?: RowFilter; falseFilter?: RowFilter } = {
      predicateFilter: genFilter(g, depth + 1, true),
    };
    if (chance(g, 0.8)) c.trueFilter = genFilter(g, depth + 1, true);
    if (chance(g, 0.7)) c.falseFilter = genFilter(g, depth + 1, true);
    return { condition: c };
  }
  const r = g.rnd() * 100;
  if (r < 5) return { passAllFilter: true };
  if (r < 8) return { blockAllFilter: true };
  if (r < 16) return { rowKeyRegexFilter: pick(g, KEY_REGEXES) };
  if (r < 26) return { familyNameRegexFilter: pick(g, FAMILY_REGEXES) };
  if (r < 34) return { columnQualifierRegexFilter: pick(g, QUAL_REGEXES) };
  if (r < 44) {
    return {
      columnRangeFilter: {
        familyName: pick(g, FAMILIES),
        ...genBounds(g, QUALS, ['startQualifierClosed', 'startQualifierOpen', 'endQualifierClosed', 'endQualifierOpen']),
      },
    };
  }
  if (r < 54) return { timestampRangeFilter: genRange(g) };
  if (r < 61) return { valueRegexFilter: pick(g, VALUE_REGEXES) };
  if (r < 68) return { valueRangeFilter: genBounds(g, VALUES, ['startValueClosed', 'startValueOpen', 'endValueClosed', 'endValueOpen']) };
  if (r < 73) return { cellsPerRowOffsetFilter: int(g, 0, 4) };
  if (r < 78) return { cellsPerRowLimitFilter: int(g, 0, 4) };
  if (r < 86) return { cellsPerColumnLimitFilter: int(g, 0, 3) };
  if (r < 91) return { stripValueTransformer: true };
  if (r < 96) return { applyLabelTransformer: pick(g, LABELS) };
  return inCondition && chance(g, 0.8) ? { passAllFilter: true } : { sink: true };
}

function genMutation(g: Gen, key: Bytes): Mutation {
  const r = g.rnd();
  if (r < 0.02)
    return { setCell: { familyName: 'zz', columnQualifier: pick(g, QUALS), timestampMicros: genTs(g), value: pick(g, VALUES) } };
  if (r < 0.65) {
    const fam = pick(g, FAMILIES);
    const value = chance(g, 0.15) ? COUNTER(BigInt(int(g, -5, 5))) : pick(g, VALUES);
    return { setCell: { familyName: fam, columnQualifier: pick(g, QUALS), timestampMicros: chance(g, 0.06) ? -1 : genTs(g), value } };
  }
  if (r < 0.85) {
    const ranged = chance(g, 0.6);
    const fam = ranged ? pick(g, RANGE_DELETE_FAMILIES) : pick(g, FAMILIES);
    return ranged
      ? { deleteFromColumn: { familyName: fam, columnQualifier: pick(g, QUALS), timeRange: genRange(g) } }
      : { deleteFromColumn: { familyName: fam, columnQualifier: pick(g, QUALS) } };
  }
  if (r < 0.95) return { deleteFromFamily: { familyName: pick(g, FAMILIES) } };
  void key;
  return { deleteFromRow: {} };
}

const genMutations = (g: Gen, key: Bytes, lo: number, hi: number): Mutation[] =>
  Array.from({ length: int(g, lo, hi) }, () => genMutation(g, key));

function genRowSet(g: Gen): RowSet | undefined {
  if (chance(g, 0.35)) return undefined;
  const rowKeys = chance(g, 0.5) ? Array.from({ length: int(g, 0, 3) }, () => pick(g, KEYS)) : [];
  const rowRanges: RowRange[] = chance(g, 0.6)
    ? Array.from(
        { length: int(g, 1, 2) },
        () => genBounds(g, KEYS, ['startKeyClosed', 'startKeyOpen', 'endKeyClosed', 'endKeyOpen']) as RowRange,
      )
    : [];
  return { rowKeys, rowRanges };
}

function genRule(g: Gen): ReadModifyWriteRule {
  const fam = chance(g, 0.8) ? pick(g, ['a', 'b', 'v2', 'u']) : pick(g, FAMILIES);
  const q = chance(g, 0.7) ? b(pick(g, ['n', 'q'])) : pick(g, QUALS);
  return chance(g, 0.5)
    ? { familyName: fam, columnQualifier: q, appendValue: pick(g, VALUES) }
    : { familyName: fam, columnQualifier: q, incrementAmount: BigInt(int(g, -3, 3)) };
}

type Op =
  | { kind: 'mutateRow'; key: Bytes; mutations: Mutation[] }
  | { kind: 'mutateRows'; entries: MutateRowsEntry[] }
  | { kind: 'readRow'; key: Bytes; filter?: RowFilter }
  | { kind: 'readRows'; options: ReadRowsOptions }
  | { kind: 'checkAndMutate'; key: Bytes; request: CheckAndMutateRequest }
  | { kind: 'rmw'; key: Bytes; rules: ReadModifyWriteRule[] }
  | { kind: 'sample' }
  | { kind: 'dropPrefix'; prefix: Bytes }
  | { kind: 'tick'; micros: number }
  | { kind: 'scan' };

function genOp(g: Gen): Op {
  const r = g.rnd() * 100;
  const key = pick(g, KEYS);
  if (r < 22) return { kind: 'mutateRow', key, mutations: genMutations(g, key, 1, 5) };
  if (r < 29) {
    const entries = Array.from({ length: int(g, 1, 5) }, () => {
      const k = pick(g, KEYS);
      return { key: k, mutations: genMutations(g, k, 1, 4) };
    });
    // One entry a row: MutateRows "may apply entries in arbitrary order (even between entries
    // for the same row)" (bigtable.proto), and the emulator does reorder them now and then, so two
    // entries of one row have no one right outcome to compare (seeds 4, 17 and 38 met it).
    const firstOfRow = new Map<string, (typeof entries)[number]>();
    for (const e of entries) {
      const row = Buffer.from(e.key).toString('latin1');
      if (!firstOfRow.has(row)) firstOfRow.set(row, e);
    }
    return { kind: 'mutateRows', entries: [...firstOfRow.values()] };
  }
  if (r < 43) return chance(g, 0.85) ? { kind: 'readRow', key, filter: genFilter(g) } : { kind: 'readRow', key };
  if (r < 64) {
    const options: { rows?: RowSet; filter?: RowFilter; rowsLimit?: number; reversed?: boolean } = {};
    const rows = genRowSet(g);
    if (rows !== undefined) options.rows = rows;
    if (chance(g, 0.85)) options.filter = genFilter(g);
    if (chance(g, 0.3)) options.rowsLimit = int(g, 1, 5);
    if (chance(g, 0.3)) options.reversed = true;
    return { kind: 'readRows', options };
  }
  if (r < 80) {
    const request: { predicateFilter?: RowFilter; trueMutations?: Mutation[]; falseMutations?: Mutation[] } = {};
    if (chance(g, 0.8)) request.predicateFilter = genFilter(g, 0, false);
    if (chance(g, 0.85)) request.trueMutations = genMutations(g, key, 0, 3);
    if (chance(g, 0.85)) request.falseMutations = genMutations(g, key, 0, 3);
    return { kind: 'checkAndMutate', key, request };
  }
  if (r < 89) return { kind: 'rmw', key, rules: Array.from({ length: int(g, 1, 3) }, () => genRule(g)) };
  if (r < 90) return { kind: 'sample' };
  if (r < 90.7) return { kind: 'dropPrefix', prefix: b(pick(g, ['k1', 'r', 'zz', 'a', '\u00ff'])) };
  return { kind: 'tick', micros: g.scale === 1 ? int(g, 1, 4) * 1000 : int(g, 1, 4000) };
}

// -------------------------------------------------------------------------------------------
// Departures (docs/bigtable-backend.md, "Differential tests")

interface Found {
  sink: boolean;
  perRow: boolean;
  strip: boolean;
  label: boolean;
}

function scanFilter(f: RowFilter, found: Found): void {
  let kind: string;
  try {
    kind = filterKind(f);
  } catch {
    return;
  }
  const v = (f as Record<string, unknown>)[kind];
  if (kind === 'chain' || kind === 'interleave') for (const s of v as RowFilter[]) scanFilter(s, found);
  else if (kind === 'condition') {
    const c = v as { predicateFilter: RowFilter; trueFilter?: RowFilter; falseFilter?: RowFilter };
    scanFilter(c.predicateFilter, found);
    if (c.trueFilter) scanFilter(c.trueFilter, found);
    if (c.falseFilter) scanFilter(c.falseFilter, found);
  } else if (kind === 'sink') found.sink = true;
  else if ((kind === 'cellsPerRowOffsetFilter' || kind === 'cellsPerRowLimitFilter') && (v as number) > 0) found.perRow = true;
  else if (kind === 'stripValueTransformer') found.strip = true;
  else if (kind === 'applyLabelTransformer') found.label = true;
}

/** The documented emulator departure a filter can hit (reads), or null. */
function readDeparture(f: RowFilter | undefined): string | null {
  if (f === undefined) return null;
  const found: Found = { sink: false, perRow: false, strip: false, label: false };
  scanFilter(f, found);
  if (found.sink) return 'sink acts as pass_all';
  if (found.perRow) return 'cells_per_row_offset/limit walk families in random order';
  if (found.strip && found.label) return 'strip_value drops labels';
  return null;
}

/** Departures that can change whether a predicate matches (labels and values do not). */
function predicateDeparture(f: RowFilter | undefined): string | null {
  if (f === undefined) return null;
  const found: Found = { sink: false, perRow: false, strip: false, label: false };
  scanFilter(f, found);
  if (found.sink) return 'predicate: sink acts as pass_all';
  if (found.perRow) return 'predicate: cells_per_row_offset/limit walk families in random order';
  return null;
}

// -------------------------------------------------------------------------------------------
// Targets and normalization

interface Target {
  readonly name: string;
  readonly store: Store;
  readonly table: string;
  /** Why `op` cannot be compared on this target (a documented departure), or null. */
  readonly exclude: (op: Op, expected: string) => string | null;
  compared: number;
  excluded: Map<string, number>;
}

function fmtCell(c: Cell): string {
  return `${c.family}:${hex(c.qualifier)}@${c.timestamp}=${hex(c.value)}${c.labels.length > 0 ? `[${c.labels.join(',')}]` : ''}`;
}

/** Cells in returned order, except that the order among equal (family, qualifier, ts) is unspecified. */
function fmtRow(r: Row | null): string {
  if (r === null) return 'null';
  const cells = r.cells.map((c, i) => ({ c, i }));
  const runs: string[] = [];
  let i = 0;
  while (i < cells.length) {
    let j = i + 1;
    const ci = (cells[i] as { c: Cell }).c;
    while (j < cells.length) {
      const cj = (cells[j] as { c: Cell }).c;
      if (cj.family !== ci.family || Buffer.compare(cj.qualifier, ci.qualifier) !== 0 || cj.timestamp !== ci.timestamp) break;
      j++;
    }
    runs.push(
      ...cells
        .slice(i, j)
        .map((x) => fmtCell(x.c))
        .sort(),
    );
    i = j;
  }
  return `${hex(r.key)}{${runs.join(' ')}}`;
}

async function outcome(fn: () => Promise<string>): Promise<string> {
  try {
    return await fn();
  } catch (e) {
    if (isStoreError(e)) return `ERROR ${e.code}`;
    throw e;
  }
}

async function execute(t: Target, op: Op): Promise<string> {
  const s = t.store;
  switch (op.kind) {
    case 'mutateRow':
      return outcome(async () => {
        await s.mutateRow(t.table, op.key, op.mutations);
        return 'ok';
      });
    case 'mutateRows':
      return outcome(async () => (await s.mutateRows(t.table, op.entries)).map((r) => `${r.index}:${r.error?.code ?? 'OK'}`).join(','));
    case 'readRow':
      return outcome(async () => fmtRow(await s.readRow(t.table, op.key, op.filter)));
    case 'readRows':
      return outcome(async () => (await collectRows(s.readRows(t.table, op.options))).map(fmtRow).join('\n'));
    case 'checkAndMutate':
      return outcome(async () => String(await s.checkAndMutateRow(t.table, op.key, op.request)));
    case 'rmw':
      return outcome(async () => fmtRow(await s.readModifyWriteRow(t.table, op.key, op.rules)));
    case 'sample':
      return outcome(async () => {
        const samples = await s.sampleRowKeys(t.table);
        // Tablet boundaries are the server's business: compare only the contract.
        const last = samples[samples.length - 1];
        const monotone = samples.every((x, i) => i === 0 || x.offsetBytes >= (samples[i - 1] as { offsetBytes: number }).offsetBytes);
        return `lastEmpty=${last !== undefined && last.key.length === 0} monotone=${monotone}`;
      });
    case 'dropPrefix':
      return outcome(async () => {
        await s.dropRowRange(t.table, { rowKeyPrefix: op.prefix });
        return 'ok';
      });
    case 'scan':
      return outcome(async () => (await collectRows(s.readRows(t.table))).map(fmtRow).join('\n'));
    case 'tick':
      return 'ok';
  }
}

/** Applies, on an excluded target, the effect the reference had (so states stay comparable). */
async function replay(t: Target, op: Op, reference: Target, referenceResult: string): Promise<void> {
  if (op.kind === 'checkAndMutate') {
    if (referenceResult.startsWith('ERROR')) return;
    const muts = referenceResult === 'true' ? op.request.trueMutations : op.request.falseMutations;
    if (muts !== undefined && muts.length > 0) await t.store.mutateRow(t.table, op.key, muts);
    return;
  }
  if (op.kind === 'rmw') {
    // Copy the reference's newest cells of the touched columns.
    const row = await reference.store.readRow(reference.table, op.key);
    for (const rule of op.rules) {
      const c = row?.cells.find((x) => x.family === rule.familyName && Buffer.compare(x.qualifier, rule.columnQualifier) === 0);
      if (c !== undefined) {
        await t.store.mutateRow(t.table, op.key, [
          { setCell: { familyName: c.family, columnQualifier: c.qualifier, timestampMicros: c.timestamp, value: c.value } },
        ]);
      }
    }
  }
}

interface RunResult {
  ops: number;
  perTarget: Record<string, { compared: number; excluded: Record<string, number> }>;
  outcomes?: Record<string, number>;
}

async function runDifferential(
  seed: number,
  count: number,
  scale: 1 | 1000,
  targets: Target[],
  clock: { now: number },
): Promise<RunResult> {
  const g: Gen = { rnd: prng(seed), scale, clock };
  /** What the reference answered, by kind (shows the comparisons are not vacuous). */
  const outcomes = new Map<string, number>();
  const [reference, ...others] = targets as [Target, ...Target[]];
  for (let n = 1; n <= count + 1; n++) {
    const op: Op = n > count ? { kind: 'scan' } : n % 100 === 0 ? { kind: 'scan' } : genOp(g);
    if (op.kind === 'tick') {
      clock.now += op.micros;
      continue;
    }
    const expected = await execute(reference, op);
    reference.compared++;
    const outcome = expected.startsWith('ERROR')
      ? `${op.kind} ${expected}`
      : expected === '' || expected === 'null' || expected === 'false'
        ? `${op.kind} empty/false`
        : `${op.kind} ok/data`;
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    // The targets are independent (own tables): run them side by side.
    const got = await Promise.all(
      others.map(async (t) => {
        const why = t.exclude(op, expected);
        if (why === null) return execute(t, op);
        t.excluded.set(why, (t.excluded.get(why) ?? 0) + 1);
        await replay(t, op, reference, expected);
        return null;
      }),
    );
    others.forEach((t, i) => {
      const result = got[i];
      if (result === null || result === undefined) return;
      t.compared++;
      if (result !== expected) {
        const show = JSON.stringify(op, (_k, v) => (v instanceof Uint8Array ? `0x${hex(v)}` : typeof v === 'bigint' ? `${v}n` : v));
        throw new Error(
          `${t.name} diverged from ${reference.name} at op #${n} (seed ${seed}): ${show}\nexpected: ${expected}\n     got: ${result}`,
        );
      }
    });
  }
  const perTarget: RunResult['perTarget'] = {};
  for (const t of targets) perTarget[t.name] = { compared: t.compared, excluded: Object.fromEntries(t.excluded) };
  return { ops: count, perTarget, outcomes: Object.fromEntries([...outcomes].sort()) };
}

function target(name: string, store: Store, table: string, exclude: (op: Op, expected: string) => string | null = () => null): Target {
  return { name, store, table, exclude, compared: 0, excluded: new Map() };
}

/** Departures of the raw emulator (every filter evaluated by the emulator itself). */
function rawEmulatorExclusions(op: Op): string | null {
  if (op.kind === 'readRow') return readDeparture(op.filter);
  if (op.kind === 'readRows') return readDeparture(op.options.filter);
  if (op.kind === 'checkAndMutate') return predicateDeparture(op.request.predicateFilter);
  return null;
}

/** With `?emulator=1` reads are fixed on the client; conditional writes cannot be. */
function compatEmulatorExclusions(op: Op): string | null {
  if (op.kind === 'checkAndMutate') return predicateDeparture(op.request.predicateFilter);
  return null;
}

// -------------------------------------------------------------------------------------------

const stores: Store[] = [];
let emu: RunningEmulator | null = null;
let serve: { port: number; close(): Promise<void> } | null = null;
let serveMissing = '';
const results: Record<string, RunResult> = {};
/** Operation counts (override for longer hunts: DIFF_OPS, DIFF_OPS_US, DIFF_SEED). */
const OPS = Number(process.env.DIFF_OPS ?? 1500);
const OPS_US = Number(process.env.DIFF_OPS_US ?? 600);

async function track<T extends Store>(s: Promise<T>): Promise<T> {
  const st = await s;
  stores.push(st);
  return st;
}

// The tests run side by side: each on tables of its own, sharing the emulator and the server; each
// waits on a round trip per operation most of the time, which the others' fill.
describe.skipIf(binary === null).concurrent('differential: memory vs emulator vs percolator serve', () => {
  beforeAll(async () => {
    emu = await startEmulator(binary as string);
    try {
      const mod = (await import('../src/server/index.js')) as {
        startServer?: (o: Record<string, unknown>) => Promise<{ port: number; close(): Promise<void> }>;
      };
      if (typeof mod.startServer !== 'function') throw new Error('src/server does not export startServer');
      const backing = await track(openStore('memory:', { gcIntervalMs: 0 }));
      serve = await mod.startServer({ store: backing, port: 0, httpPort: null, oraclePort: null, log: () => undefined });
    } catch (e) {
      serveMissing = `percolator serve unavailable, compared without it: ${(e as Error).message}`;
      console.warn(serveMissing);
    }
  });

  afterAll(async () => {
    for (const s of stores) await s.close().catch(() => undefined);
    await serve?.close().catch(() => undefined);
    await emu?.stop();
    if (Object.keys(results).length > 0) console.log(`differential results: ${JSON.stringify(results, null, 2)}`);
  });

  async function setup(label: string, scale: 1 | 1000, clock: { now: number }, withServe: boolean): Promise<Target[]> {
    const nowMicros = (): number => clock.now;
    const e = emu as RunningEmulator;
    const table = `diff_${label}`;
    const mem = await track(openStore('memory:', { nowMicros, gcIntervalMs: 0 }));
    const raw = await track(BigtableStore.open(`bigtable://127.0.0.1:${e.port}?timestampScale=${scale}`, { nowMicros }));
    const compat = await track(BigtableStore.open(e.url(`timestampScale=${scale}`), { nowMicros }));
    const list: Target[] = [
      target('memory', mem, table),
      target('emulator', raw, `${table}_raw`, rawEmulatorExclusions),
      target('emulator?emulator=1', compat, `${table}_compat`, compatEmulatorExclusions),
    ];
    if (withServe && serve !== null) {
      const viaServe = await track(BigtableStore.open(`bigtable://127.0.0.1:${serve.port}`, { nowMicros }));
      list.push(target('percolator serve', viaServe, `${table}_serve`));
    }
    for (const t of list) await t.store.createTable(t.table, SPEC);
    return list;
  }

  it(
    '1500 random operations, ms timestamps (timestampScale=1)',
    async () => {
      const clock = { now: BASE + 60_000 };
      const targets = await setup('s1', 1, clock, true);
      const count = OPS;
      const r = await runDifferential(seedFromEnv('DIFF_SEED', 20251122), count, 1, targets, clock);
      results['timestampScale=1'] = r;
      // Most operations are compared on the raw emulator too; only documented departures are not.
      expect(r.perTarget.emulator?.compared).toBeGreaterThan(count * 0.7);
      if (serve !== null) expect(r.perTarget['percolator serve']?.compared).toBe(r.perTarget.memory?.compared);
    },
    Math.max(55_000, OPS * 40),
  );

  it(
    '600 random operations, µs timestamps on the wire ×1000 (timestampScale=1000)',
    async () => {
      const clock = { now: BASE + 60_000 };
      // percolator serve keeps wire timestamps as µs safe integers: ×1000 of a 2100 date does not fit.
      const targets = await setup('s1000', 1000, clock, false);
      const count = OPS_US;
      const r = await runDifferential(seedFromEnv('DIFF_SEED', 7_777), count, 1000, targets, clock);
      results['timestampScale=1000'] = r;
      expect(r.perTarget.emulator?.compared).toBeGreaterThan(count * 0.7);
    },
    Math.max(30_000, OPS_US * 50),
  );

  it('rows of overlapping ranges that both start at the beginning of the table come back once', async () => {
    // The emulator (and the documentation: a row set is a union) returns each row once. This is
    // A regression test: the reference (memory:) once returned such rows twice.
    const clock = { now: BASE + 60_000 };
    const targets = await setup('overlap', 1, clock, true);
    const entries = ['a', 'm', 'r', 'z'].map((k) => ({
      key: b(k),
      mutations: [{ setCell: { familyName: 'a', columnQualifier: b('q'), timestampMicros: BASE, value: b(k) } }] as Mutation[],
    }));
    for (const t of targets) await t.store.mutateRows(t.table, entries);
    const op: Op = { kind: 'readRows', options: { rows: { rowRanges: [{ endKeyOpen: b('n') }, { endKeyClosed: b('r') }] } } };
    const out: Record<string, string> = {};
    for (const t of targets) out[t.name] = await execute(t, op);
    const once = ['a', 'm', 'r'].map((k) => `${hex(b(k))}{a:${hex(b('q'))}@${BASE}=${hex(b(k))}}`).join('\n');
    expect(out).toEqual(Object.fromEntries(targets.map((t) => [t.name, once])));
  });

  it('native readModifyWriteRow (server clock, no injected clock): same values everywhere', async () => {
    // Without an injected clock and with timestampScale 1 the backend sends ReadModifyWriteRow
    // itself; cells then carry each server's clock, so only values of the newest versions are
    // compared. An increment of a value that is not 8 bytes is not sent to the emulator: it would
    // apply the rules before the bad one (documented departure); the others must reject it whole.
    const e = emu as RunningEmulator;
    const spec: TableSpec = { families: { n: {}, m: {} } };
    const mem = await track(openStore('memory:', { gcIntervalMs: 0 }));
    const raw = await track(BigtableStore.open(`bigtable://127.0.0.1:${e.port}`));
    const list: Target[] = [
      target('memory', mem, 'rmw_native'),
      target('emulator', raw, 'rmw_native_raw', (_op, expected) =>
        expected.startsWith('ERROR') ? 'bad increment is applied in part' : null,
      ),
    ];
    if (serve !== null)
      list.push(target('percolator serve', await track(BigtableStore.open(`bigtable://127.0.0.1:${serve.port}`)), 'rmw_native_serve'));
    for (const t of list) await t.store.createTable(t.table, spec);
    const masked = (x: string): string => x.replace(/@\d+=/g, '@*=');
    const g: Gen = { rnd: prng(4242), scale: 1, clock: { now: 0 } };
    const cols = ['c0', 'c1', 'c2'].map(b);
    let compared = 0;
    let excluded = 0;
    for (let n = 0; n < 250; n++) {
      const key = pick(g, [b('k1'), b('k2')]);
      let op: Op;
      if (chance(g, 0.15)) {
        const counter = chance(g, 0.5);
        const value = counter ? COUNTER(BigInt(int(g, -9, 9))) : pick(g, VALUES);
        op = {
          kind: 'mutateRow',
          key,
          mutations: [
            { setCell: { familyName: counter === chance(g, 0.9) ? 'n' : 'm', columnQualifier: pick(g, cols), timestampMicros: -1, value } },
          ],
        };
      } else {
        op = {
          kind: 'rmw',
          key,
          // Counters live in n, appended strings in m; one rule in ten crosses over.
          rules: Array.from({ length: int(g, 1, 3) }, () => {
            const q = pick(g, cols);
            const cross = chance(g, 0.1);
            return chance(g, 0.5)
              ? { familyName: cross ? 'n' : 'm', columnQualifier: q, appendValue: pick(g, VALUES) }
              : { familyName: cross ? 'm' : 'n', columnQualifier: q, incrementAmount: BigInt(int(g, -4, 4)) };
          }),
        };
      }
      const reads: Op = { kind: 'readRows', options: { filter: { cellsPerColumnLimitFilter: 1 } } };
      for (const step of n % 25 === 24 ? [op, reads] : [op]) {
        const expected = masked(await execute(list[0] as Target, step));
        for (const t of list.slice(1)) {
          if (t.exclude(step, expected) !== null) {
            excluded++;
            continue;
          }
          compared++;
          expect(
            masked(await execute(t, step)),
            `${t.name} at native RMW op #${n}: ${JSON.stringify(step, (_k, v) => (v instanceof Uint8Array ? hex(v) : typeof v === 'bigint' ? String(v) : v))}`,
          ).toBe(expected);
        }
      }
    }
    results['native readModifyWriteRow'] = {
      ops: 250,
      perTarget: { all: { compared, excluded: { 'bad increment is applied in part': excluded } } },
    };
    expect(compared).toBeGreaterThan(200);
  }, 30_000);
});
