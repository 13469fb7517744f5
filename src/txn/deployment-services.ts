/**
 * Where a `bigtable://` store's deployment keeps its shared services: the one timestamp oracle and
 * the lock service every client process of that store must use (one oracle per deployment: two
 * would hand out the same timestamps). Read by `Percolator.open` and by the crash checkers, whose
 * supervisor and workers join the deployment's oracle rather than run one beside it.
 */
import { type HostPort, parseBigtableUrl, parseHostPort } from '../store/bigtable/url.js';

/** Where a deployment service listens, and where that address came from (for error messages). */
export interface ServiceAddress extends HostPort {
  readonly source: string;
  /** `?oracleTimeoutMs=N` (the oracle's only): the client's `timeoutMs`; undefined for its default. */
  readonly timeoutMs?: number;
}

/**
 * The oracle and lock service of a `bigtable://` store's deployment; null for embedded stores
 * (`memory:`, `file:`), whose oracle is in-process. `?oracle=HOST:PORT` and `?lockService=HOST:PORT`
 * name them; otherwise a `percolator serve` at HOST:PORT hosts them — its oracle on PORT+2 (its
 * default `--oracle-port`, which a client cannot see: `--port 0` or `--oracle-port P` need
 * `?oracle=`) and its lock service on PORT itself (docs/server.md). Google's emulator
 * (`?emulator=1`) and Cloud Bigtable host neither: no oracle (null) unless named, and an
 * in-process lock service (null) unless named. `?oracleTimeoutMs=N` rides on the oracle's address
 * as `timeoutMs` (parseBigtableUrl refuses it where there is no oracle).
 */
export function deploymentServices(
  url: string,
): { oracle: ServiceAddress | null; lockService: string | null; lockServiceSeesLeases: boolean } | null {
  if (!url.startsWith('bigtable://')) return null;
  const u = parseBigtableUrl(url);
  const served = u.host !== undefined && !u.emulator ? parseHostPort(u.host) : null;
  const timeout = u.oracleTimeoutMs !== undefined ? { timeoutMs: u.oracleTimeoutMs } : {};
  let oracle: ServiceAddress | null = null;
  if (u.oracle !== undefined) {
    oracle = { ...(parseHostPort(u.oracle) as HostPort), source: `named by ?oracle= in ${url}`, ...timeout };
  } else if (served !== null) {
    oracle = {
      host: served.host,
      port: served.port + 2,
      source: `PORT+2 of ${url}, the default; set ?oracle=HOST:PORT if the server's oracle listens elsewhere (serve --port 0 or --oracle-port)`,
      ...timeout,
    };
  }
  return {
    oracle,
    lockService: u.lockService ?? (served !== null ? (u.host as string) : null),
    // Only the server of this very store reads the workers' leases (a `percolator serve` elsewhere
    // reads its own store's: docs/server.md › The lock service).
    lockServiceSeesLeases: served !== null && (u.lockService === undefined || u.lockService === u.host),
  };
}
