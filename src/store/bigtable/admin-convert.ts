/**
 * Table schemas and GC rules ↔ the v2 admin protos, and client-side checking of
 * ModifyColumnFamilies lists (so a failing list applies none of its modifications: the emulator
 * applies them one by one and stops at the first error).
 *
 * - `maxAgeMicros` ↔ `maxAge` Duration, exactly (µs ↔ seconds + nanos). The age is NOT scaled by
 *   `timestampScale`: the rule keeps its real meaning for other tools (cbt), and reads apply it
 *   on our side anyway (gc-filter.ts).
 * - Locality groups do not exist in Cloud Bigtable: accepted, validated, not sent, and not
 *   returned by getTable.
 */
import type { protos } from '@google-cloud/bigtable';
import { StoreError } from '../errors.js';
import { validateGcRule } from '../gc-rule.js';
import type { FamilyModification, FamilySpec, GcRule, TableSpec } from '../types.js';
import { validateFamilyName } from '../validate.js';

type ProtoGcRule = protos.google.bigtable.admin.v2.IGcRule;
type ProtoTable = protos.google.bigtable.admin.v2.ITable;
type ProtoModification = protos.google.bigtable.admin.v2.ModifyColumnFamiliesRequest.IModification;

export function gcRuleToProto(rule: GcRule): ProtoGcRule {
  if ('maxNumVersions' in rule) return { maxNumVersions: rule.maxNumVersions };
  if ('maxAgeMicros' in rule) {
    const micros = BigInt(rule.maxAgeMicros);
    return { maxAge: { seconds: (micros / 1_000_000n).toString(), nanos: Number(micros % 1_000_000n) * 1000 } };
  }
  if ('union' in rule) return { union: { rules: rule.union.map(gcRuleToProto) } };
  return { intersection: { rules: rule.intersection.map(gcRuleToProto) } };
}

function int(v: unknown): number {
  if (v === null || v === undefined) return 0;
  return Number(typeof v === 'object' ? String(v) : v);
}

/** A proto rule to ours; undefined for an empty rule (no GC). */
export function gcRuleFromProto(rule: ProtoGcRule | null | undefined): GcRule | undefined {
  if (rule === null || rule === undefined) return undefined;
  const which =
    (rule as { rule?: string }).rule ??
    (rule.maxNumVersions
      ? 'maxNumVersions'
      : rule.maxAge
        ? 'maxAge'
        : rule.union
          ? 'union'
          : rule.intersection
            ? 'intersection'
            : undefined);
  switch (which) {
    case 'maxNumVersions':
      return { maxNumVersions: int(rule.maxNumVersions) };
    case 'maxAge':
      return { maxAgeMicros: int(rule.maxAge?.seconds) * 1_000_000 + Math.trunc(int(rule.maxAge?.nanos) / 1000) };
    case 'union':
      return { union: (rule.union?.rules ?? []).map(gcRuleFromProto).filter((r): r is GcRule => r !== undefined) };
    case 'intersection':
      return { intersection: (rule.intersection?.rules ?? []).map(gcRuleFromProto).filter((r): r is GcRule => r !== undefined) };
    default:
      return undefined;
  }
}

export function columnFamilyToProto(f: FamilySpec): protos.google.bigtable.admin.v2.IColumnFamily {
  return f.gcRule === undefined ? {} : { gcRule: gcRuleToProto(f.gcRule) };
}

export function tableSpecToProto(spec: TableSpec): ProtoTable {
  const columnFamilies: Record<string, protos.google.bigtable.admin.v2.IColumnFamily> = {};
  for (const [name, f] of Object.entries(spec.families)) columnFamilies[name] = columnFamilyToProto(f);
  return { columnFamilies };
}

export function tableSpecFromProto(t: ProtoTable): TableSpec {
  const families: Record<string, FamilySpec> = {};
  for (const name of Object.keys(t.columnFamilies ?? {}).sort()) {
    const rule = gcRuleFromProto(t.columnFamilies?.[name]?.gcRule);
    families[name] = rule === undefined ? {} : { gcRule: rule };
  }
  return { families };
}

/** Validates a family spec as the embedded store does (name, GC rule, locality group name). */
export function validateFamilySpec(table: string, family: string, fs: FamilySpec): void {
  validateFamilyName(family, table);
  if (fs === null || typeof fs !== 'object')
    throw new StoreError('INVALID_ARGUMENT', `family ${family}: spec must be an object`, { table, family });
  validateGcRule(fs.gcRule);
  if (fs.localityGroup !== undefined && (typeof fs.localityGroup !== 'string' || !/^[-_.a-zA-Z0-9]{1,64}$/.test(fs.localityGroup))) {
    throw new StoreError('INVALID_NAME', `invalid locality group name ${JSON.stringify(fs.localityGroup)}`, { table, family });
  }
}

export function validateTableSpec(table: string, spec: TableSpec): void {
  if (spec === null || typeof spec !== 'object' || spec.families === null || typeof spec.families !== 'object') {
    throw new StoreError('INVALID_ARGUMENT', 'a table spec needs a families object', { table });
  }
  for (const [family, fs] of Object.entries(spec.families)) validateFamilySpec(table, family, fs);
}

/**
 * Checks `modifications` in order against `current` exactly as the embedded store does and
 * returns them as protos. Throws (FAMILY_EXISTS, FAMILY_NOT_FOUND, INVALID_NAME, INVALID_ARGUMENT)
 * before anything is sent.
 */
export function checkModifications(table: string, current: TableSpec, modifications: readonly FamilyModification[]): ProtoModification[] {
  if (!Array.isArray(modifications)) throw new StoreError('INVALID_ARGUMENT', 'modifications must be an array', { table });
  const families = new Set(Object.keys(current.families));
  const out: ProtoModification[] = [];
  for (const m of modifications) {
    const id = (m as { id?: unknown })?.id as string;
    if (m !== null && typeof m === 'object' && 'create' in m) {
      validateFamilySpec(table, id, m.create);
      if (families.has(id))
        throw new StoreError('FAMILY_EXISTS', `column family ${id} already exists in table ${table}`, { table, family: id });
      families.add(id);
      out.push({ id, create: columnFamilyToProto(m.create) });
    } else if (m !== null && typeof m === 'object' && 'update' in m) {
      validateFamilySpec(table, id, m.update);
      if (!families.has(id))
        throw new StoreError('FAMILY_NOT_FOUND', `column family ${id} does not exist in table ${table}`, { table, family: id });
      out.push({ id, update: columnFamilyToProto(m.update) });
    } else if (m !== null && typeof m === 'object' && 'drop' in m) {
      if (!families.has(id))
        throw new StoreError('FAMILY_NOT_FOUND', `column family ${id} does not exist in table ${table}`, { table, family: id });
      families.delete(id);
      out.push({ id, drop: true });
    } else {
      throw new StoreError('INVALID_ARGUMENT', 'a modification needs create, update or drop', { table, family: id });
    }
  }
  return out;
}
