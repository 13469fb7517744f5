/**
 * The timestamp oracle a check's supervisor and its worker processes share.
 *
 * One oracle per deployment, as for every other client: a check of a `bigtable://` store whose
 * deployment has an oracle (`percolator serve`'s, or the one `?oracle=HOST:PORT` names) takes its
 * timestamps there. An oracle of the check's own beside it would keep its durable mark in the same
 * row as the server's (`_percolator_oracle/mark` of the one store) and overwrite it — lower, if the
 * check's clock is behind the server's, so a restarted server could hand out timestamps again —
 * and a full GC pass run with the server's watermark would not know the check's snapshots.
 *
 * Any other store (`memory:`, `file:`, the emulator with no oracle named) gets an oracle in the
 * supervisor, its mark in the store, served over TCP on 127.0.0.1 for the workers.
 *
 * Returns: the source for the supervisor's `Percolator.open`, and the address workers connect
 * their `OracleClient` to. `close()` ends what this opened (the client, or the oracle and its
 * server). Throws: what `Oracle.open` / `startOracleServer` throw (nothing is left open then).
 */
import { OracleClient } from '../oracle/client.js';
import { StoreMarkStore } from '../oracle/mark-store.js';
import { Oracle } from '../oracle/oracle.js';
import { startOracleServer } from '../oracle/server.js';
import type { TimestampSource } from '../oracle/types.js';
import type { Store } from '../store/store.js';
import { deploymentServices } from '../txn/deployment-services.js';

export interface CheckOracle {
  readonly source: TimestampSource;
  readonly host: string;
  readonly port: number;
  /** The deployment's oracle (true), or one this check runs (false). */
  readonly shared: boolean;
  close(): Promise<void>;
}

export async function openCheckOracle(store: Store): Promise<CheckOracle> {
  const at = deploymentServices(store.url)?.oracle ?? null;
  if (at !== null) {
    const client = new OracleClient({
      host: at.host,
      port: at.port,
      addressSource: at.source,
      ...(at.timeoutMs !== undefined ? { timeoutMs: at.timeoutMs } : {}),
    });
    return { source: client, host: at.host, port: at.port, shared: true, close: () => client.close() };
  }
  const oracle = await Oracle.open({ markStore: new StoreMarkStore(store) });
  try {
    const server = await startOracleServer({ oracle });
    return {
      source: oracle,
      host: '127.0.0.1',
      port: server.port,
      shared: false,
      close: async () => {
        await server.close();
        await oracle.close();
      },
    };
  } catch (e) {
    await oracle.close().catch(() => undefined);
    throw e;
  }
}
