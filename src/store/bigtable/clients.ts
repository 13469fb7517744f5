/**
 * The official client's gapic layer (`@google-cloud/bigtable` 6.5.x: `v2.BigtableClient` and
 * `v2.BigtableTableAdminClient`), configured the way the `Bigtable` class does it (endpoint,
 * insecure channel for a local HOST:PORT, scopes), with client-side metrics off. The gapic layer
 * takes raw v2 protos: RowFilters, mutations and cells with labels pass through untouched.
 */
import { Bigtable, v2 } from '@google-cloud/bigtable';
import type { BigtableUrl } from './url.js';

/**
 * Channel options for a local server (HOST:PORT). grpc-js waits at least a second (growing 1.6×)
 * before it connects again after a failed connection attempt, and fails every call meanwhile at
 * once (UNAVAILABLE, "No connection established"): a reset that caught a connection while it was
 * being made cost a second of failed calls, longer than the store's resends wait (READ_RETRIES,
 * CONNECTION_RETRIES in bigtable-store.ts). A local server is cheap to connect to again.
 */
export const LOCAL_CHANNEL_OPTIONS = { 'grpc.initial_reconnect_backoff_ms': 100 } as const;

export interface BigtableClients {
  readonly data: v2.BigtableClient;
  readonly admin: v2.BigtableTableAdminClient;
  /** `projects/P/instances/I` */
  readonly instanceName: string;
  close(): Promise<void>;
}

export function createClients(cfg: BigtableUrl): BigtableClients {
  if (cfg.host !== undefined) {
    // A local server has no metadata server; do not let google-auth probe for one.
    process.env.METADATA_SERVER_DETECTION ??= 'none';
  }
  const bt = new Bigtable({
    projectId: cfg.project,
    ...(cfg.host !== undefined ? { apiEndpoint: cfg.host } : {}),
    ...(cfg.appProfileId !== undefined ? { appProfileId: cfg.appProfileId } : {}),
    metricsEnabled: false,
  });
  const local = cfg.host !== undefined ? LOCAL_CHANNEL_OPTIONS : {};
  const data = new v2.BigtableClient({ ...bt.options.BigtableClient, ...local });
  const admin = new v2.BigtableTableAdminClient({ ...bt.options.BigtableTableAdminClient, ...local });
  let closing: Promise<void> | null = null;
  return {
    data,
    admin,
    instanceName: `projects/${cfg.project}/instances/${cfg.instance}`,
    close(): Promise<void> {
      closing ??= Promise.allSettled([data.close(), admin.close(), bt.close()]).then(() => undefined);
      return closing;
    },
  };
}
