/**
 * In-memory state of one table and the persisted catalog that holds all tables' metadata
 * (docs/format.md). The catalog is one JSON value under CATALOG_KEY, rewritten atomically on every
 * admin change. Data operations read `TableState` without locks; admin operations replace it
 * while holding the table's write barrier (engine-store.ts).
 */
import { StoreError } from './errors.js';
import { gcRuleHasMaxAge } from './gc-rule.js';
import { groupPrefix } from './key-layout.js';
import { Tablets, type TabletsJson } from './tablets.js';
import type { GcRule, Mutation, TableSpec } from './types.js';

const NO_GROUPS: readonly number[] = Object.freeze([]);

export const DEFAULT_GROUP = 'default';

export interface TableJson {
  readonly name: string;
  readonly id: number;
  readonly spec: TableSpec;
  /** Locality group name → id (ids are never reused within a table). */
  readonly groups: Record<string, number>;
  readonly tablets: TabletsJson;
  /** Families dropped whose cells may still be on disk: [family, groupId]. */
  readonly purges: [string, number][];
}

export interface CatalogJson {
  readonly version: 1;
  readonly nextTableId: number;
  readonly tables: TableJson[];
}

export class TableState {
  readonly name: string;
  readonly id: number;
  readonly spec: TableSpec;
  readonly groups: Record<string, number>;
  readonly tablets: Tablets;
  readonly purges: [string, number][];
  /** family → group id */
  readonly familyGroup = new Map<string, number>();
  /** group id → engine key prefix */
  readonly prefixes = new Map<number, Uint8Array>();
  readonly rules = new Map<string, GcRule>();
  /** Families whose rule depends on time (maxAge): even a lone version may expire. */
  readonly timeRules = new Set<string>();
  readonly groupIds: number[];
  /** Point reads asked of the engine for this table (its rows' cache misses), by group id: [found, absent]. */
  readonly engineReads = new Map<number, [number, number]>();
  /** Writes in flight (admin operations wait for zero). */
  inflight = 0;
  /** Writes entered, ever (`AtomicRowsStore.writeActivity`). */
  entered = 0;
  barrier: Promise<void> | null = null;
  onDrained: (() => void) | null = null;

  constructor(json: TableJson, tablets?: Tablets) {
    this.name = json.name;
    this.id = json.id;
    this.spec = json.spec;
    this.groups = json.groups;
    this.tablets = tablets ?? new Tablets(json.tablets);
    this.purges = json.purges;
    for (const [family, fs] of Object.entries(json.spec.families)) {
      const gid = json.groups[fs.localityGroup ?? DEFAULT_GROUP];
      if (gid === undefined)
        throw new StoreError('DATA_CORRUPTED', `catalog: family ${family} of table ${json.name} has no locality group id`, {
          table: json.name,
          family,
        });
      this.familyGroup.set(family, gid);
      if (fs.gcRule !== undefined) {
        this.rules.set(family, fs.gcRule);
        if (gcRuleHasMaxAge(fs.gcRule)) this.timeRules.add(family);
      }
    }
    this.groupIds = [...new Set(this.familyGroup.values())].sort((a, b) => a - b);
    for (const gid of Object.values(json.groups)) this.prefixes.set(gid, groupPrefix(this.id, gid));
  }

  toJSON(): TableJson {
    return { name: this.name, id: this.id, spec: this.spec, groups: this.groups, tablets: this.tablets.toJSON(), purges: this.purges };
  }

  /** Group ids that hold any of `families` (all groups when null). Unknown families are ignored. */
  groupsFor(families: Iterable<string> | null): readonly number[] {
    if (families === null) return this.groupIds;
    const acc = new GroupAccumulator();
    for (const f of families) acc.add(this.familyGroup.get(f));
    return acc.result(this);
  }

  /**
   * groupsFor, remembered per families array (callers pass a constant one: the transaction
   * layer's point reads). A schema change replaces the TableState, so the memo never goes stale.
   */
  groupsForList(families: readonly string[]): readonly number[] {
    if (families === this.lastList) return this.lastGroups;
    let g = this.listGroups.get(families);
    if (g === undefined) this.listGroups.set(families, (g = this.groupsFor(families)));
    this.lastList = families;
    this.lastGroups = g;
    return g;
  }
  private readonly listGroups = new WeakMap<readonly string[], readonly number[]>();
  /** The last array asked and its groups: point reads ask with the same one over and over. */
  private lastList: readonly string[] | null = null;
  private lastGroups: readonly number[] = [];

  /** The groups a list of mutations writes to (all groups for deleteFromRow). No Set per call. */
  groupsForMutations(mutations: readonly Mutation[]): readonly number[] {
    const acc = new GroupAccumulator();
    for (const m of mutations) {
      const family =
        'setCell' in m
          ? m.setCell.familyName
          : 'deleteFromColumn' in m
            ? m.deleteFromColumn.familyName
            : 'deleteFromFamily' in m
              ? m.deleteFromFamily.familyName
              : null;
      if (family === null) return this.groupIds;
      acc.add(this.familyGroup.get(family));
    }
    return acc.result(this);
  }

  private readonly singles = new Map<number, readonly number[]>();
  /** A shared frozen one-element array: usually every family touched is in one group. */
  singleGroup(g: number): readonly number[] {
    let a = this.singles.get(g);
    if (a === undefined) this.singles.set(g, (a = Object.freeze([g])));
    return a;
  }

  prefix(gid: number): Uint8Array {
    return this.prefixes.get(gid) as Uint8Array;
  }

  /** The group's key prefix as latin1 (row-cache keys). */
  prefixLatin1(gid: number): string {
    let p = this.prefixStrings.get(gid);
    if (p === undefined) this.prefixStrings.set(gid, (p = Buffer.from(this.prefix(gid)).toString('latin1')));
    return p;
  }
  private readonly prefixStrings = new Map<number, string>();
}

/** Assigns group ids for a spec, keeping existing ids. */
export function assignGroups(spec: TableSpec, existing: Record<string, number> = {}): Record<string, number> {
  const groups: Record<string, number> = { ...existing };
  let next = Math.max(-1, ...Object.values(groups)) + 1;
  for (const fs of Object.values(spec.families)) {
    const g = fs.localityGroup ?? DEFAULT_GROUP;
    if (groups[g] === undefined) groups[g] = next++;
  }
  return groups;
}

/** Distinct group ids, sorted; one group (the usual case) needs no array at all. */
class GroupAccumulator {
  private only = -1;
  private more: number[] | null = null;

  add(g: number | undefined): void {
    if (g === undefined || g === this.only) return;
    if (this.only === -1) this.only = g;
    else if (this.more === null) this.more = [this.only, g];
    else if (!this.more.includes(g)) this.more.push(g);
  }

  result(t: TableState): readonly number[] {
    if (this.more !== null) return this.more.sort((a, b) => a - b);
    return this.only === -1 ? NO_GROUPS : t.singleGroup(this.only);
  }
}
