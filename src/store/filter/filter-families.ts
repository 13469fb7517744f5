/**
 * Static analysis: which column families can a (validated) filter output cells from?
 *
 * The answer lets a read skip whole locality groups (DESIGN §3: a scan that touches one group
 * must not read the others). It must be conservative — never omit a family the filter could
 * emit — so `null` ("any family") is the answer whenever we cannot be sure. Only two variants
 * narrow the set: `columnRangeFilter` (exactly its family) and `familyNameRegexFilter` (its
 * matches among a known set, or the literal alternatives of a pattern like `lock|write`).
 * `sink` matters: what reaches a sink is emitted even if the enclosing chain later drops it.
 * A condition's predicate never contributes output, only its true/false branches do.
 */
import type { RowFilter } from '../types.js';
import { compileRegex } from './re2-regex.js';
import { filterKind } from './validate-filter.js';

/** null = any family. */
type Families = ReadonlySet<string> | null;

const NO_FAMILIES: ReadonlySet<string> = new Set();

export function filterFamilies(filter: RowFilter): Families {
  const acc: { sunk: Families } = { sunk: NO_FAMILIES };
  const out = analyze(filter, null, acc);
  return union(out, acc.sunk);
}

function analyze(f: RowFilter, input: Families, acc: { sunk: Families }): Families {
  if (input !== null && input.size === 0) return NO_FAMILIES;
  const kind = filterKind(f);
  switch (kind) {
    case 'chain': {
      let cur = input;
      for (const sub of (f as { chain: readonly RowFilter[] }).chain) cur = analyze(sub, cur, acc);
      return cur;
    }
    case 'interleave': {
      let out: Families = NO_FAMILIES;
      for (const sub of (f as { interleave: readonly RowFilter[] }).interleave) out = union(out, analyze(sub, input, acc));
      return out;
    }
    case 'condition': {
      const c = (f as Extract<RowFilter, { condition: unknown }>).condition;
      const t = c.trueFilter === undefined ? NO_FAMILIES : analyze(c.trueFilter, input, acc);
      const e = c.falseFilter === undefined ? NO_FAMILIES : analyze(c.falseFilter, input, acc);
      return union(t, e);
    }
    case 'sink':
      acc.sunk = union(acc.sunk, input);
      return NO_FAMILIES;
    case 'blockAllFilter':
      return NO_FAMILIES;
    case 'columnRangeFilter': {
      const fam = (f as { columnRangeFilter: { familyName: string } }).columnRangeFilter.familyName;
      return input === null || input.has(fam) ? new Set([fam]) : NO_FAMILIES;
    }
    case 'familyNameRegexFilter': {
      const pattern = (f as { familyNameRegexFilter: string }).familyNameRegexFilter;
      const known = input ?? literalAlternatives(pattern);
      if (known === null) return null;
      const re = compileRegex(pattern);
      return new Set([...known].filter((fam) => re.testString(fam)));
    }
    default:
      return input; // every other variant emits a subset of its input's families
  }
}

function union(a: Families, b: Families): Families {
  if (a === null || b === null) return null;
  if (a.size === 0) return b;
  if (b.size === 0) return a;
  return new Set([...a, ...b]);
}

/**
 * Candidate family names for patterns made only of literal alternatives, e.g. `lock`,
 * `^(data|write)$`, `a\.b|c`; null for anything else. The candidates are re-checked against
 * the real regex by the caller, so this only has to be a superset for the patterns it accepts.
 */
export function literalAlternatives(pattern: string): ReadonlySet<string> | null {
  let p = pattern;
  if (p.startsWith('^')) p = p.slice(1);
  if (p.endsWith('$') && !p.endsWith('\\$')) p = p.slice(0, -1);
  if (p.startsWith('(') && p.endsWith(')')) p = p.slice(1, -1); // `(?:` is impossible: ':' is banned
  const out = new Set<string>();
  for (const alt of p.split('|')) {
    let lit = '';
    for (let i = 0; i < alt.length; i++) {
      const ch = alt[i] as string;
      if (/[A-Za-z0-9_-]/.test(ch)) lit += ch;
      else if (ch === '\\' && i + 1 < alt.length && /[.\-_]/.test(alt[i + 1] as string)) {
        lit += alt[i + 1];
        i++;
      } else return null;
    }
    out.add(lit);
  }
  return out;
}
