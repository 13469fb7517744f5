/**
 * The official client's gapic layer (`@google-cloud/bigtable` 6.5.x: `v2.BigtableClient` and
 * `v2.BigtableTableAdminClient`), configured the way the `Bigtable` class does it (endpoint,
 * insecure channel for a local HOST:PORT, scopes, grpc-gcp channel pool for data), with
 * client-side metrics off. The gapic layer takes raw v2 protos: RowFilters, mutations and cells
 * with labels pass through untouched.
 *
 * Why not `new Bigtable(...).options` (used until 2026-12-02): the package's entry point loads its
 * whole handwritten layer and its client-side metrics exporters (OpenTelemetry, Cloud Monitoring),
 * ~0.45 s of every bigtable:// client's open, to compute two option objects. `gapicOptions`
 * computes them as the constructor does (build/src/index.js); test/bigtable-client-options.test.ts
 * holds it to the constructor's result, so an upgrade that changes them fails there.
 */
import { createRequire } from 'node:module';
import type { v2 } from '@google-cloud/bigtable';
import type { BigtableUrl } from './url.js';

/**
 * Channel options for a local server (HOST:PORT). grpc-js waits at least a second (growing 1.6×)
 * before it connects again after a failed connection attempt, and fails every call meanwhile at
 * once (UNAVAILABLE, "No connection established"): a reset that caught a connection while it was
 * being made cost a second of failed calls, longer than the store's resends wait (READ_RETRIES,
 * CONNECTION_RETRIES in bigtable-store.ts). A local server is cheap to connect to again.
 */
export const LOCAL_CHANNEL_OPTIONS = { 'grpc.initial_reconnect_backoff_ms': 100 } as const;

// The gapic clients, google-gax and grpc-gcp as the package itself resolves them (one grpc-js for
// credentials and channels); type-only import above: nothing of the entry point is loaded.
const packageRequire = createRequire(createRequire(import.meta.url).resolve('@google-cloud/bigtable'));

export interface BigtableClients {
  readonly data: v2.BigtableClient;
  readonly admin: v2.BigtableTableAdminClient;
  /** `projects/P/instances/I` */
  readonly instanceName: string;
  close(): Promise<void>;
}

type Options = Record<string, unknown>;

interface Library {
  readonly gapic: typeof v2;
  readonly grpc: { credentials: { createInsecure(): unknown } };
  /** grpc-gcp bound to google-gax's grpc-js, once per process as the package's entry point binds it. */
  readonly grpcGcp: Record<string, unknown> & { createGcpApiConfig(config: object): unknown };
  readonly version: string;
}
let library: Library | null = null;

function loadLibrary(): Library {
  if (library === null) {
    const { grpc } = packageRequire('google-gax') as { grpc: Library['grpc'] };
    library = {
      gapic: packageRequire('./v2/index.js') as typeof v2,
      grpc,
      grpcGcp: (packageRequire('grpc-gcp') as (grpc: unknown) => Library['grpcGcp'])(grpc),
      version: (packageRequire('../../package.json') as { version: string }).version,
    };
  }
  return library;
}

/** What `new Bigtable(options)` sets as `options.BigtableClient` and `options.BigtableTableAdminClient` (6.5.x). */
export function gapicOptions(options: Options): { data: Options; admin: Options } {
  const { gapic, grpc, grpcGcp, version } = loadLibrary();
  const scopes: string[] = [];
  for (const client of [gapic.BigtableClient, gapic.BigtableInstanceAdminClient, gapic.BigtableTableAdminClient]) {
    for (const scope of client.scopes) if (!scopes.includes(scope)) scopes.push(scope);
  }
  const customEndpoint = (options.apiEndpoint as string | undefined) || process.env.BIGTABLE_EMULATOR_HOST;
  let customEndpointBaseUrl: string | undefined;
  let customEndpointPort: number | undefined;
  let sslCreds: unknown;
  if (customEndpoint) {
    const parts = customEndpoint.split(':');
    customEndpointBaseUrl = parts[0];
    customEndpointPort = Number(parts[1]);
    sslCreds = grpc.credentials.createInsecure();
  }
  const base = {
    libName: 'gccl',
    libVersion: version,
    port: customEndpointPort || 443,
    sslCreds,
    scopes,
    'grpc.keepalive_time_ms': 30000,
    'grpc.keepalive_timeout_ms': 10000,
  };
  const universe = (gaxOpts: unknown): string | undefined => {
    const g = gaxOpts as { universeDomain?: string; universe_domain?: string } | undefined;
    return (
      g?.universeDomain ?? g?.universe_domain ?? (options.universeDomain as string | undefined) ?? process.env.GOOGLE_CLOUD_UNIVERSE_DOMAIN
    );
  };
  const universeOptions = (gaxOpts: unknown) => {
    const u = universe(gaxOpts);
    return u ? { universeDomain: u } : null;
  };
  const domain = (prefix: string, gaxOpts: unknown) => `${prefix}.${universe(gaxOpts) || 'googleapis.com'}`;
  const data = Object.assign(
    {},
    base,
    universeOptions(options.BigtableClient),
    {
      servicePath: customEndpointBaseUrl || domain('bigtable', options.BigtableClient),
      'grpc.callInvocationTransformer': grpcGcp.gcpCallInvocationTransformer,
      'grpc.channelFactoryOverride': grpcGcp.gcpChannelFactoryOverride,
      'grpc.gcpApiConfig': grpcGcp.createGcpApiConfig({
        channelPool: { minSize: 2, maxSize: 4, maxConcurrentStreamsLowWatermark: 10, debugHeaderIntervalSecs: 600 },
      }),
    },
    options,
  );
  const admin = Object.assign(
    {},
    base,
    universeOptions(options.BigtableTableAdminClient),
    { servicePath: customEndpointBaseUrl || domain('bigtableadmin', options.BigtableTableAdminClient) },
    options,
  );
  return { data, admin };
}

/** The `Bigtable` constructor's options for `cfg`. */
export function bigtableOptions(cfg: BigtableUrl): Options {
  return {
    projectId: cfg.project,
    ...(cfg.host !== undefined ? { apiEndpoint: cfg.host } : {}),
    ...(cfg.appProfileId !== undefined ? { appProfileId: cfg.appProfileId } : {}),
    metricsEnabled: false,
  };
}

export function createClients(cfg: BigtableUrl): BigtableClients {
  if (cfg.host !== undefined) {
    // A local server has no metadata server; do not let google-auth probe for one.
    process.env.METADATA_SERVER_DETECTION ??= 'none';
  }
  const { gapic } = loadLibrary();
  const options = gapicOptions(bigtableOptions(cfg));
  const local = cfg.host !== undefined ? LOCAL_CHANNEL_OPTIONS : {};
  const data = new gapic.BigtableClient({ ...options.data, ...local } as ConstructorParameters<typeof gapic.BigtableClient>[0]);
  const admin = new gapic.BigtableTableAdminClient({ ...options.admin, ...local } as ConstructorParameters<
    typeof gapic.BigtableTableAdminClient
  >[0]);
  let closing: Promise<void> | null = null;
  return {
    data,
    admin,
    instanceName: `projects/${cfg.project}/instances/${cfg.instance}`,
    close(): Promise<void> {
      closing ??= Promise.allSettled([data.close(), admin.close()]).then(() => undefined);
      return closing;
    },
  };
}
