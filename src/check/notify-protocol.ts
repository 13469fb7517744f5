/**
 * What the notify checker's supervisor (notify.ts) and its worker processes (notify-worker.ts)
 * agree on: the table layout, the observer's record, the worker configuration and the IPC
 * messages.
 *
 * Invariants the check relies on:
 * - Writers (in the supervisor, never killed) set `c:value` of a row to a change id unique across
 *   the run; writes to one row are serialized by the supervisor, so the order in which it records
 *   a row's committed changes is the row's commit order.
 * - A change is a write of its id to `c:value`, or (a fifth of them) a deletion of `c:value` that
 *   writes its id to `c:deleted` in the same transaction: a deletion is a change observers must
 *   see too, and version GC drops a delete record once no reader needs it — never while its
 *   notification is pending (docs/transactions.md), which these changes put to the test.
 * - The observer (name OBSERVER, on column VALUE) reads `c:value` (or, deleted, `c:deleted`) and
 *   appends the change it saw to the row's `c:processed` log (a JSON array of strings) in the
 *   observer's own transaction —
 *   which is the transaction that also writes the observer's ack. So every observer commit leaves
 *   exactly one log entry and an aborted or killed run leaves none: the log IS the list of
 *   observer commits, in commit order.
 */

export const TABLE = 'notify_check';
export const FAMILY = 'c';
/** The observed column. */
export const VALUE = `${FAMILY}:value`;
/** The id of the row's latest deletion of VALUE (written with it; not observed). */
export const DELETED = `${FAMILY}:deleted`;
/** Changes that delete VALUE instead of writing it. */
export const DELETE_SHARE = 0.2;

/** The change a reader of VALUE and DELETED at one snapshot sees: the value, or the deletion's id. */
export function changeSeen(value: Uint8Array | null | undefined, deleted: Uint8Array | null | undefined): string | null {
  return cellText(value) ?? cellText(deleted);
}

/** A stored cell as text (null: absent). */
export function cellText(v: Uint8Array | null | undefined): string | null {
  return v === null || v === undefined ? null : Buffer.from(v).toString('utf8');
}
/** The observer's per-row record of every commit it made (JSON array of the values it saw). */
export const PROCESSED = `${FAMILY}:processed`;
/** The observer's name (names its ack column). */
export const OBSERVER = 'notify-check';

export function rowKey(i: number): string {
  return `row-${String(i).padStart(4, '0')}`;
}

/** Parses a stored log; throws on anything that is not a JSON array of strings. */
export function decodeProcessed(text: string | null): string[] {
  if (text === null) return [];
  const v = JSON.parse(text) as unknown;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`not a processed log: ${text.slice(0, 200)}`);
  return v as string[];
}

/** The worker's configuration, passed as its one command-line argument (JSON). */
export interface NotifyWorkerConfig {
  /** Unique per started worker process in this run. */
  readonly incarnation: number;
  /** The supervisor's store URL. `bigtable://` workers open it themselves; others use the IPC store. */
  readonly storeUrl: string;
  /** The oracle the supervisor uses (check-oracle.ts): its own, or the deployment's. */
  readonly oracleHost: string;
  readonly oraclePort: number;
  /** Observer runs at once in the process. */
  readonly threads: number;
  /** Scanner tasks in the process. */
  readonly scanners: number;
  readonly leaseMs: number;
  readonly lockTtlMs: number;
  /** Self-kill: arm a random protocol point of the observer's commit after a delay in [min, max] ms; null: never. */
  readonly crash: { readonly armMinMs: number; readonly armMaxMs: number } | null;
  /** Extra time the observer spends between its read and its commit (widens the race windows). */
  readonly observerDelayMs: number;
  /** The store's disk fills up and empties (check notify --full-disk): start again while it refuses writes. */
  readonly fullDisk: boolean;
}

/** The protocol points where workers kill themselves (inside the observer's commit). */
export const CRASH_POINTS = ['after-primary-prewrite', 'before-primary-commit', 'after-primary-commit', 'after-commit'] as const;
export type NotifyCrashPoint = (typeof CRASH_POINTS)[number];

export interface NotifyWorkerMetrics {
  readonly runs: number;
  readonly commits: number;
  readonly skipped: number;
  readonly conflicts: number;
  readonly failures: number;
  readonly parked: number;
  readonly cleared: number;
  readonly rowsScanned: number;
  readonly jumps: number;
}

/** How often a worker sends its metrics (`notify.metrics`). */
export const METRICS_REPORT_MS = 250;

/** Worker → supervisor (the IPC store's own messages travel on the same channel). */
export type NotifyWorkerMessage =
  /** The worker started: its observer is registered and its scanners run. */
  | { readonly t: 'notify.ready' }
  /**
   * Cumulative metrics of this incarnation (sent periodically), and the rows it had queued or
   * running when it sent them (a run waiting to retry after a conflict counts).
   */
  | { readonly t: 'notify.metrics'; readonly metrics: NotifyWorkerMetrics; readonly busy: number }
  /** The worker is about to SIGKILL itself at this protocol point of an observer commit. */
  | { readonly t: 'notify.crash'; readonly point: NotifyCrashPoint }
  /** A graceful stop finished (every earlier message was sent before it). */
  | { readonly t: 'notify.stopped'; readonly metrics: NotifyWorkerMetrics }
  /** An unexpected error; the worker exits 1 after sending it. */
  | { readonly t: 'notify.error'; readonly code: string; readonly message: string };

/** Supervisor → worker: stop gracefully, or disarm the self-kill (the run is winding down). */
export type NotifySupervisorMessage = { readonly t: 'notify.stop' } | { readonly t: 'notify.calm' };
