/**
 * Parsing of `bigtable://` store URLs (docs/bigtable-backend.md lists them):
 *
 *   bigtable://HOST:PORT                       a local server (`percolator serve`, Google's emulator)
 *   bigtable://HOST:PORT/PROJECT/INSTANCE      the same, naming the project and instance
 *   bigtable://PROJECT/INSTANCE                Cloud Bigtable, with the user's Google credentials
 *
 * Query options (all optional; an unknown one is an error so typos do not pass silently):
 *   timestampScale=1|1000   wire timestamp = ours × scale. Default 1 with a host, 1000 without
 *                           (Cloud Bigtable keeps milliseconds: our µs t travels as t×1000).
 *   emulator[=1|0]          the server is Google's emulator: work around its documented
 *                           departures (client-side evaluation of some filters, ms rounding).
 *   schemaCacheMs=N         how long a table's families and GC rules are cached (default 10000).
 *   appProfile=ID           Cloud Bigtable app profile.
 *   oracle=HOST:PORT        where Percolator.open finds the deployment's timestamp oracle (default:
 *                           PORT+2 of a `percolator serve` HOST:PORT; none for the emulator or Cloud).
 *   oracleTimeoutMs=N       how long the OracleClient Percolator.open makes for that oracle waits for an
 *                           answer, and while the oracle is unreachable, before failing (ORACLE_TIMEOUT /
 *                           ORACLE_UNAVAILABLE): 1 to 2^31-1 ms, default 5000. Only where the URL has an
 *                           oracle (a `percolator serve` host or ?oracle=): elsewhere it is an error.
 *   lockService=HOST:PORT   where it finds the advisory lock service (a `percolator serve` gRPC port;
 *                           default: HOST:PORT of a `percolator serve`, in-process otherwise).
 *                           The store itself uses neither: they name the deployment's other services,
 *                           so that anything taking a store URL (the CLI's --store) can reach them.
 *
 * A host is recognised by its `:PORT` (or a bracketed IPv6 literal); without one the authority
 * is the Cloud project.
 */
import { MAX_TIMER_MS, isTimerMs } from '../../util/timer-ms.js';
import { StoreError } from '../errors.js';

export const DEFAULT_PROJECT = 'percolator';
export const DEFAULT_INSTANCE = 'percolator';
export const DEFAULT_SCHEMA_CACHE_MS = 10_000;

export interface BigtableUrl {
  /** The URL as given. */
  readonly url: string;
  /** `host:port` of a local server; undefined for Cloud Bigtable. */
  readonly host?: string;
  readonly project: string;
  readonly instance: string;
  /** Wire timestamp = our timestamp × scale. */
  readonly timestampScale: 1 | 1000;
  /** Work around the emulator's departures from the documentation. */
  readonly emulator: boolean;
  readonly schemaCacheMs: number;
  readonly appProfileId?: string;
  /** `?oracle=HOST:PORT`: the deployment's timestamp oracle, as given (IPv6 bracketed). */
  readonly oracle?: string;
  /**
   * `?oracleTimeoutMs=N`: the deployment oracle's client timeout (OracleClient `timeoutMs`), ms;
   * undefined for the client's default. Only given with an oracle (a served host, or `?oracle=`).
   */
  readonly oracleTimeoutMs?: number;
  /** `?lockService=HOST:PORT`: the deployment's lock service (a `percolator serve` gRPC port), as given. */
  readonly lockService?: string;
}

/** A `HOST:PORT` (IPv6 literal in brackets), split; the host without brackets. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/?#@\s]+):(\d{1,5})$/;

/** `HOST:PORT` → its parts, or null when it is not one (port 1–65535). */
export function parseHostPort(s: string): HostPort | null {
  const m = HOST_PORT.exec(s);
  if (m === null) return null;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

const ID = /^[a-z0-9][-a-z0-9_.:]*$/i;

function bad(url: string, message: string): StoreError {
  return new StoreError(
    'INVALID_STORE_URL',
    `${message} (in ${JSON.stringify(url)}); use bigtable://HOST:PORT[/PROJECT/INSTANCE] or bigtable://PROJECT/INSTANCE`,
    { url },
  );
}

function flag(url: string, name: string, v: string): boolean {
  if (v === '' || v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false') return false;
  throw bad(url, `${name} must be 1/true or 0/false, got ${JSON.stringify(v)}`);
}

/**
 * The bearer token a local server was started with (`percolator serve --auth-token`, or
 * PERCOLATOR_AUTH_TOKEN there): read from PERCOLATOR_AUTH_TOKEN here too, and sent with every call
 * to a `bigtable://HOST:PORT` (never to Cloud Bigtable, which takes Google credentials).
 */
export function localAuthToken(): string | undefined {
  return process.env.PERCOLATOR_AUTH_TOKEN || undefined;
}

export function parseBigtableUrl(url: string): BigtableUrl {
  if (typeof url !== 'string' || !url.startsWith('bigtable://')) throw bad(String(url), 'not a bigtable:// URL');
  let rest = url.slice('bigtable://'.length);
  let query = '';
  const q = rest.indexOf('?');
  if (q >= 0) {
    query = rest.slice(q + 1);
    rest = rest.slice(0, q);
  }
  const slash = rest.indexOf('/');
  const authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = (slash >= 0 ? rest.slice(slash + 1) : '').replace(/\/+$/, '');
  const parts = path === '' ? [] : path.split('/');
  if (authority === '') throw bad(url, 'missing host or project');

  let host: string | undefined;
  let project: string;
  let instance: string;
  const isHost = authority.startsWith('[') || authority.includes(':');
  if (isHost) {
    if (parseHostPort(authority) === null) throw bad(url, `bad HOST:PORT ${JSON.stringify(authority)}`);
    host = authority;
    if (parts.length === 0) {
      project = DEFAULT_PROJECT;
      instance = DEFAULT_INSTANCE;
    } else if (parts.length === 2) {
      [project, instance] = parts as [string, string];
    } else {
      throw bad(url, 'after HOST:PORT the path must be /PROJECT/INSTANCE');
    }
  } else {
    if (parts.length !== 1) throw bad(url, 'Cloud Bigtable URLs are bigtable://PROJECT/INSTANCE');
    project = authority;
    instance = parts[0] as string;
  }
  if (!ID.test(project)) throw bad(url, `bad project id ${JSON.stringify(project)}`);
  if (!ID.test(instance)) throw bad(url, `bad instance id ${JSON.stringify(instance)}`);

  let timestampScale: 1 | 1000 = host === undefined ? 1000 : 1;
  let emulator = false;
  let schemaCacheMs = DEFAULT_SCHEMA_CACHE_MS;
  let appProfileId: string | undefined;
  let oracle: string | undefined;
  let oracleTimeoutMs: number | undefined;
  let lockService: string | undefined;
  const params = new URLSearchParams(query);
  for (const [k, v] of params) {
    switch (k) {
      case 'timestampScale':
        if (v !== '1' && v !== '1000') throw bad(url, `timestampScale must be 1 or 1000, got ${JSON.stringify(v)}`);
        timestampScale = v === '1' ? 1 : 1000;
        break;
      case 'emulator':
        emulator = flag(url, k, v);
        break;
      case 'schemaCacheMs': {
        const n = Number(v);
        if (v === '' || !Number.isSafeInteger(n) || n < 0)
          throw bad(url, `schemaCacheMs must be a non-negative integer, got ${JSON.stringify(v)}`);
        schemaCacheMs = n;
        break;
      }
      case 'appProfile':
        if (v === '') throw bad(url, 'appProfile must not be empty');
        appProfileId = v;
        break;
      case 'oracleTimeoutMs': {
        const n = /^\d+$/.test(v) ? Number(v) : NaN;
        if (!isTimerMs(n, 1, true))
          throw bad(url, `oracleTimeoutMs must be an integer of ms from 1 to ${MAX_TIMER_MS}, got ${JSON.stringify(v)}`);
        oracleTimeoutMs = n;
        break;
      }
      case 'oracle':
      case 'lockService':
        if (parseHostPort(v) === null) throw bad(url, `${k} must be HOST:PORT (port 1-65535), got ${JSON.stringify(v)}`);
        if (k === 'oracle') oracle = v;
        else lockService = v;
        break;
      default:
        throw bad(
          url,
          `unknown option ${JSON.stringify(k)} (known: timestampScale, emulator, schemaCacheMs, appProfile, oracle, lockService, oracleTimeoutMs)`,
        );
    }
  }
  if (emulator && host === undefined) throw bad(url, 'emulator needs a HOST:PORT');
  // A timeout for an oracle the URL does not have would be silently ignored: say so instead.
  if (oracleTimeoutMs !== undefined && oracle === undefined && (host === undefined || emulator))
    throw bad(
      url,
      `oracleTimeoutMs needs an oracle: ${host === undefined ? 'Cloud Bigtable' : "Google's emulator"} hosts none, name the deployment's with ?oracle=HOST:PORT`,
    );
  return {
    url,
    ...(host !== undefined ? { host } : {}),
    project,
    instance,
    timestampScale,
    emulator,
    schemaCacheMs,
    ...(appProfileId !== undefined ? { appProfileId } : {}),
    ...(oracle !== undefined ? { oracle } : {}),
    ...(oracleTimeoutMs !== undefined ? { oracleTimeoutMs } : {}),
    ...(lockService !== undefined ? { lockService } : {}),
  };
}
