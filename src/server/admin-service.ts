/**
 * The admin subset that the official clients and `cbt` use.
 *
 * `google.bigtable.admin.v2.BigtableTableAdmin`: CreateTable, DeleteTable, ListTables (with
 * paging), GetTable (views NAME_ONLY / SCHEMA_VIEW / REPLICATION_VIEW / FULL),
 * ModifyColumnFamilies, DropRowRange, GenerateConsistencyToken / CheckConsistency (always
 * consistent: there is one replica).
 * `google.bigtable.admin.v2.BigtableInstanceAdmin`: GetInstance, ListInstances, GetCluster,
 * ListClusters, describing one synthetic instance and cluster. Everything else answers
 * UNIMPLEMENTED.
 *
 * Name mapping: any `projects/P/instances/I` is accepted and all of them share the store's
 * tables (`…/tables/T` is store table T). Responses name resources under the request's P and I.
 *
 * Locality groups (not expressible in the v2 admin API): request metadata
 * `percolator-locality-groups: {"family":"group",…}` (JSON) on CreateTable and
 * ModifyColumnFamilies assigns the created families' groups; GetTable, CreateTable and
 * ModifyColumnFamilies answer with the same header (initial metadata) when some family is not
 * in the default group. Servers that do not know the header ignore it.
 *
 * Concurrency contract: admin operations are serialized by the store; these handlers hold no
 * state of their own.
 */
import { Metadata, type ServerUnaryCall, status, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Store } from '../store/store.js';
import type { FamilyModification, FamilySpec, TableSpec } from '../store/types.js';
import {
  CLUSTER_ID,
  familySpecFromWire,
  parseInstanceName,
  parseTableName,
  type TableView,
  tableResourceName,
  tableToWire,
} from './convert.js';
import { type HandlerContext, unary } from './handlers.js';
import type { WireColumnFamily, WireTable } from './protos.js';
import { invalidArgument, ServerError } from './status.js';

export const LOCALITY_GROUPS_METADATA = 'percolator-locality-groups';
/** The one instance ListInstances reports (any instance name is accepted everywhere). */
export const INSTANCE_ID = 'percolator';

export interface AdminServiceContext extends HandlerContext {
  readonly store: Store;
}

type Call = ServerUnaryCall<unknown, unknown>;

function localityGroupsOf(call: Call): Record<string, string> {
  const values = call.metadata.get(LOCALITY_GROUPS_METADATA);
  if (values.length === 0) return Object.create(null) as Record<string, string>;
  const raw = values[values.length - 1];
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
  } catch {
    throw invalidArgument(`${LOCALITY_GROUPS_METADATA} must be a JSON object {"family":"group"}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalidArgument(`${LOCALITY_GROUPS_METADATA} must be a JSON object {"family":"group"}`);
  }
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(parsed)) {
    if (typeof v !== 'string') throw invalidArgument(`${LOCALITY_GROUPS_METADATA}: the group of ${JSON.stringify(k)} must be a string`);
    out[k] = v;
  }
  return out;
}

function sendLocalityGroups(call: Call, spec: TableSpec): void {
  const groups: Record<string, string> = {};
  for (const [id, fs] of Object.entries(spec.families))
    if (fs.localityGroup !== undefined && fs.localityGroup !== 'default') groups[id] = fs.localityGroup;
  if (Object.keys(groups).length === 0) return;
  const md = new Metadata();
  md.set(LOCALITY_GROUPS_METADATA, JSON.stringify(groups));
  call.sendMetadata(md);
}

function viewOf(v: unknown, fallback: TableView): TableView {
  if (v === undefined || v === 'VIEW_UNSPECIFIED' || v === 0) return fallback;
  if (v === 'NAME_ONLY' || v === 'SCHEMA_VIEW' || v === 'REPLICATION_VIEW' || v === 'ENCRYPTION_VIEW' || v === 'FULL') return v;
  throw invalidArgument(`unknown table view ${JSON.stringify(v)}`);
}

function checkGranularity(g: unknown): void {
  if (g === undefined || g === 'TIMESTAMP_GRANULARITY_UNSPECIFIED' || g === 'MILLIS' || g === 0 || g === 1) return;
  throw invalidArgument(`unsupported timestamp granularity ${JSON.stringify(g)} (only MILLIS)`);
}

export function tableAdminService(ctx: AdminServiceContext): UntypedServiceImplementation {
  const { store } = ctx;

  async function createTable(req: { parent?: string; tableId?: string; table?: WireTable }, call: Call): Promise<object> {
    const parent = parseInstanceName(req.parent);
    const tableId = req.tableId ?? '';
    if (tableId === '') throw invalidArgument('table_id is required');
    checkGranularity(req.table?.granularity);
    const groups = localityGroupsOf(call);
    const families: Record<string, FamilySpec> = {};
    for (const [id, cf] of Object.entries(req.table?.columnFamilies ?? {})) {
      families[id] = familySpecFromWire(cf, `table.column_families[${JSON.stringify(id)}]`, groups[id]);
    }
    const spec: TableSpec = { families };
    await store.createTable(tableId, spec);
    const created = await store.getTable(tableId).catch(() => spec);
    sendLocalityGroups(call, created);
    return tableToWire(tableResourceName(parent, tableId), created, 'SCHEMA_VIEW');
  }

  async function deleteTable(req: { name?: string }): Promise<object> {
    const t = parseTableName(req.name, 'name');
    await store.deleteTable(t.table);
    return {};
  }

  async function listTables(req: { parent?: string; view?: string; pageSize?: number; pageToken?: string }): Promise<object> {
    const parent = parseInstanceName(req.parent);
    const view = viewOf(req.view, 'NAME_ONLY');
    const pageSize = req.pageSize ?? 0;
    if (!Number.isInteger(pageSize) || pageSize < 0) throw invalidArgument('page_size must be ≥ 0');
    let names = await store.listTables();
    if (req.pageToken) {
      const after = Buffer.from(req.pageToken, 'base64url').toString('utf8');
      names = names.filter((n) => n > after);
    }
    let nextPageToken = '';
    if (pageSize > 0 && names.length > pageSize) {
      names = names.slice(0, pageSize);
      nextPageToken = Buffer.from(names[names.length - 1] as string, 'utf8').toString('base64url');
    }
    const tables: object[] = [];
    for (const name of names) {
      if (view === 'NAME_ONLY') {
        tables.push({ name: tableResourceName(parent, name) });
        continue;
      }
      const spec = await store.getTable(name).catch(() => null);
      if (spec !== null) tables.push(tableToWire(tableResourceName(parent, name), spec, view));
    }
    return { tables, nextPageToken };
  }

  async function getTable(req: { name?: string; view?: string }, call: Call): Promise<object> {
    const t = parseTableName(req.name, 'name');
    const view = viewOf(req.view, 'SCHEMA_VIEW');
    const spec = await store.getTable(t.table);
    sendLocalityGroups(call, spec);
    return tableToWire(t.name, spec, view);
  }

  async function modifyColumnFamilies(
    req: {
      name?: string;
      modifications?: { id?: string; mod?: string; create?: WireColumnFamily; update?: WireColumnFamily; drop?: boolean }[];
    },
    call: Call,
  ): Promise<object> {
    const t = parseTableName(req.name, 'name');
    const groups = localityGroupsOf(call);
    const mods: FamilyModification[] = (req.modifications ?? []).map((m, i) => {
      const id = m.id ?? '';
      const path = `modifications[${i}]`;
      switch (m.mod) {
        case 'create':
          return { id, create: familySpecFromWire(m.create, `${path}.create`, groups[id]) };
        case 'update':
          return { id, update: familySpecFromWire(m.update, `${path}.update`) };
        case 'drop':
          if (m.drop !== true) throw invalidArgument(`${path}.drop must be true`);
          return { id, drop: true };
        default:
          throw invalidArgument(`${path}: a modification must set create, update or drop`);
      }
    });
    if (mods.length === 0) throw invalidArgument('ModifyColumnFamilies needs at least one modification');
    const spec = await store.modifyColumnFamilies(t.table, mods);
    sendLocalityGroups(call, spec);
    return tableToWire(t.name, spec, 'SCHEMA_VIEW');
  }

  async function dropRowRange(req: {
    name?: string;
    target?: string;
    rowKeyPrefix?: Buffer;
    deleteAllDataFromTable?: boolean;
  }): Promise<object> {
    const t = parseTableName(req.name, 'name');
    if (req.target === 'rowKeyPrefix') await store.dropRowRange(t.table, { rowKeyPrefix: req.rowKeyPrefix ?? new Uint8Array(0) });
    else if (req.target === 'deleteAllDataFromTable' && req.deleteAllDataFromTable === true)
      await store.dropRowRange(t.table, { deleteAllDataFromTable: true });
    // "Setting this to false is a no-op" (bigtable_table_admin.proto); the table must still exist.
    else if (req.target === 'deleteAllDataFromTable') await store.getTable(t.table);
    else throw invalidArgument('DropRowRange needs row_key_prefix or delete_all_data_from_table');
    return {};
  }

  async function generateConsistencyToken(req: { name?: string }): Promise<object> {
    const t = parseTableName(req.name, 'name');
    await store.getTable(t.table);
    return { consistencyToken: `percolator-${Date.now()}` };
  }

  async function checkConsistency(req: { name?: string; consistencyToken?: string }): Promise<object> {
    const t = parseTableName(req.name, 'name');
    if (!req.consistencyToken) throw invalidArgument('consistency_token is required');
    await store.getTable(t.table);
    return { consistent: true };
  }

  return {
    CreateTable: unary(ctx, 'CreateTable', createTable),
    DeleteTable: unary(ctx, 'DeleteTable', deleteTable),
    ListTables: unary(ctx, 'ListTables', listTables),
    GetTable: unary(ctx, 'GetTable', getTable),
    ModifyColumnFamilies: unary(ctx, 'ModifyColumnFamilies', modifyColumnFamilies),
    DropRowRange: unary(ctx, 'DropRowRange', dropRowRange),
    GenerateConsistencyToken: unary(ctx, 'GenerateConsistencyToken', generateConsistencyToken),
    CheckConsistency: unary(ctx, 'CheckConsistency', checkConsistency),
  };
}

// ---------------------------------------------------------------------------------------------
// Instance admin: one synthetic instance / cluster, for tools that look before they touch.

const PROJECT_NAME = /^projects\/([^/]+)$/;
const CLUSTER_NAME = /^projects\/([^/]+)\/instances\/([^/]+)\/clusters\/([^/]+)$/;

function instanceMessage(project: string, instance: string): object {
  return { name: `projects/${project}/instances/${instance}`, displayName: instance, state: 'READY', type: 'PRODUCTION', labels: {} };
}

function clusterMessage(project: string, instance: string): object {
  return {
    name: `projects/${project}/instances/${instance}/clusters/${CLUSTER_ID}`,
    location: `projects/${project}/locations/local`,
    state: 'READY',
    serveNodes: 1,
    defaultStorageType: 'SSD',
  };
}

export function instanceAdminService(ctx: HandlerContext): UntypedServiceImplementation {
  return {
    GetInstance: unary(ctx, 'GetInstance', async (req: { name?: string }) => {
      const i = parseInstanceName(req.name, 'name');
      return instanceMessage(i.project, i.instance);
    }),
    ListInstances: unary(ctx, 'ListInstances', async (req: { parent?: string }) => {
      const m = PROJECT_NAME.exec(req.parent ?? '');
      if (m === null) throw invalidArgument(`parent must look like projects/<project>, got ${JSON.stringify(req.parent ?? '')}`);
      return { instances: [instanceMessage(m[1] as string, INSTANCE_ID)], failedLocations: [], nextPageToken: '' };
    }),
    ListClusters: unary(ctx, 'ListClusters', async (req: { parent?: string }) => {
      const i = parseInstanceName(req.parent);
      return {
        clusters: [clusterMessage(i.project, i.instance === '-' ? INSTANCE_ID : i.instance)],
        failedLocations: [],
        nextPageToken: '',
      };
    }),
    GetCluster: unary(ctx, 'GetCluster', async (req: { name?: string }) => {
      const m = CLUSTER_NAME.exec(req.name ?? '');
      if (m === null) throw invalidArgument(`name must look like projects/<project>/instances/<instance>/clusters/<cluster>`);
      if (m[3] !== CLUSTER_ID)
        throw new ServerError(
          status.NOT_FOUND,
          `cluster ${JSON.stringify(m[3])} not found (this server has one cluster, ${JSON.stringify(CLUSTER_ID)})`,
        );
      return clusterMessage(m[1] as string, m[2] as string);
    }),
  };
}
