/**
 * Garbage-collection rules (Bigtable §5.3; v2 admin GcRule), evaluated per column.
 *
 * Semantics (Cloud Bigtable admin API):
 * - `maxNumVersions: N` removes every version but the newest N of the column.
 * - `maxAgeMicros: A` removes versions "older than the given age": timestamp < now − A. A
 *   version exactly A old survives (as in the emulator). Future timestamps never expire.
 * - `union` removes a version if ANY sub-rule removes it; `intersection` only if ALL do.
 *   Sub-rules judge the same column independently: a version's fate under maxNumVersions is
 *   its position in the whole column, not among the survivors of a sibling rule.
 * Validation choices: N is an int32 ≥ 1 and A a safe integer ≥ 1 µs (Cloud additionally
 * demands A ≥ 1 ms; we do not, so tests can use short ages). An empty union removes nothing
 * and is allowed; an empty intersection is rejected, because its literal meaning ("removed by
 * every one of no rules") would silently delete all data.
 *
 * GC is lazy: readers apply `collectColumn` so expired versions are invisible at once, and a
 * compaction/sweeper drops them physically later. Hence collectColumn returns its input array
 * when nothing is removed (the common case costs no allocation).
 */
import { StoreError } from './errors.js';
import type { GcRule } from './types.js';

const INT32_MAX = 0x7fffffff;

/** A rule viewed with all variant fields optional (properties set to undefined count as absent). */
interface AnyRule {
  readonly maxNumVersions?: number;
  readonly maxAgeMicros?: number;
  readonly union?: readonly GcRule[];
  readonly intersection?: readonly GcRule[];
}

function bad(message: string, details: Record<string, unknown>): StoreError {
  return new StoreError('INVALID_ARGUMENT', `invalid GC rule: ${message}`, details);
}

/** Throws StoreError INVALID_ARGUMENT if `rule` is not a valid GcRule (undefined = keep all). */
export function validateGcRule(rule: GcRule | undefined): void {
  if (rule === undefined) return;
  check(rule, 'gcRule', 0);
}

function check(rule: unknown, path: string, depth: number): void {
  if (depth > 32) throw bad('rules nest too deeply', { path });
  if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) throw bad('a rule must be an object', { path });
  const r = rule as Record<string, unknown>;
  const keys = Object.keys(r).filter((k) => r[k] !== undefined);
  if (keys.length !== 1) throw bad(`a rule must set exactly one property, found ${keys.length === 0 ? 'none' : keys.join(', ')}`, { path });
  const k = keys[0] as string;
  const v = r[k];
  switch (k) {
    case 'maxNumVersions':
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > INT32_MAX) {
        throw bad('maxNumVersions must be an integer in [1, 2^31-1]', { path, value: v });
      }
      return;
    case 'maxAgeMicros':
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1)
        throw bad('maxAgeMicros must be a positive safe integer', { path, value: v });
      return;
    case 'union':
    case 'intersection':
      if (!Array.isArray(v)) throw bad(`${k} must be an array of rules`, { path });
      if (k === 'intersection' && v.length === 0) throw bad('an intersection needs at least one rule', { path });
      for (let i = 0; i < v.length; i++) check(v[i], `${path}.${k}[${i}]`, depth + 1);
      return;
    default:
      throw bad(`unknown rule property "${k}"`, { path });
  }
}

/**
 * The versions of one column that survive `rule` at time `nowMicros`. `versionsNewestFirst`
 * must be sorted by timestamp descending; the result keeps that order and is the input array
 * itself when nothing is removed. The rule is assumed valid (validateGcRule).
 */
export function collectColumn<T extends { readonly timestamp: number }>(
  rule: GcRule | undefined,
  versionsNewestFirst: readonly T[],
  nowMicros: number,
): readonly T[] {
  const n = versionsNewestFirst.length;
  if (rule === undefined || n === 0) return versionsNewestFirst;
  const r = rule as AnyRule;
  // Fast paths for the simple rules: survivors are a prefix.
  if (r.maxNumVersions !== undefined) return n <= r.maxNumVersions ? versionsNewestFirst : versionsNewestFirst.slice(0, r.maxNumVersions);
  if (r.maxAgeMicros !== undefined) {
    const cutoff = nowMicros - r.maxAgeMicros;
    let i = n;
    while (i > 0 && (versionsNewestFirst[i - 1] as T).timestamp < cutoff) i--;
    return i === n ? versionsNewestFirst : versionsNewestFirst.slice(0, i);
  }
  let out: T[] | null = null;
  for (let i = 0; i < n; i++) {
    const v = versionsNewestFirst[i] as T;
    if (removes(rule, i, v.timestamp, nowMicros)) out ??= versionsNewestFirst.slice(0, i);
    else if (out !== null) out.push(v);
  }
  return out ?? versionsNewestFirst;
}

/** Whether `rule` removes the version at `index` (0 = newest) with `timestamp`. */
function removes(rule: GcRule, index: number, timestamp: number, now: number): boolean {
  const r = rule as AnyRule;
  if (r.maxNumVersions !== undefined) return index >= r.maxNumVersions;
  if (r.maxAgeMicros !== undefined) return timestamp < now - r.maxAgeMicros;
  if (r.union !== undefined) {
    for (const sub of r.union) if (removes(sub, index, timestamp, now)) return true;
    return false;
  }
  const all = r.intersection ?? [];
  for (const sub of all) if (!removes(sub, index, timestamp, now)) return false;
  return all.length > 0;
}

/** Whether the rule's verdict can change with time alone (the sweeper only revisits those tables). */
export function gcRuleHasMaxAge(rule: GcRule | undefined): boolean {
  if (rule === undefined) return false;
  const r = rule as AnyRule;
  if (r.maxAgeMicros !== undefined) return true;
  return (r.union ?? r.intersection ?? []).some(gcRuleHasMaxAge);
}
