/**
 * Finding work (Percolator §2.4): a scanner walks the notify locality group of a table from a
 * random tablet and a random key, so many scanners spread over the key space instead of all
 * starting at the beginning. For each notified row it takes the row's advisory lock from the
 * lock service; if another scanner (of any worker) holds it, it jumps to a new random place
 * instead of trailing behind that scanner — the paper's answer to "bus clumping". It pauses
 * while the run queue is full, backs off on empty passes (up to EMPTY_PASS_MAX_IDLE_MS; a hint
 * refused because someone holds the row wakes it), and slows to a pass every BACKLOG_PAUSE_MS
 * while its host holds as many queued rows as runners.
 *
 * Invariant: the scanner never decides anything about correctness; it only proposes rows. A row
 * proposed twice (two processes, an expired advisory lock) is safe: the ack protocol decides.
 */
import type { Store } from '../store/store.js';
import { NOTIFY, notifiedColumn } from '../txn/layout.js';

export interface NotifiedCell {
  readonly column: string;
  /** Newest notify cell timestamp seen (everything at or below may be cleared after processing). */
  readonly maxTs: number;
  /** A weak notification is among them. */
  readonly weak: boolean;
  /** A strong notification (a committed write of the column) is among them. */
  readonly strong: boolean;
}

export interface Job {
  readonly table: string;
  readonly row: Uint8Array;
  /** The notifications the scanner saw; absent for a local hint (then: whatever is notified now). */
  readonly cells?: readonly NotifiedCell[];
  /** The advisory lock owner (the scanner that took the row's lock); the runner releases it. */
  readonly lockOwner: string;
}

export interface ScannerHost {
  readonly store: Store;
  readonly rowLockTtlMs: number;
  running(): boolean;
  /** Percolator tables that have observers. */
  tables(): Promise<string[]>;
  /** Whether some observer of this process watches `column` in `table`. */
  observes(table: string, column: string): boolean;
  tryLockRow(table: string, row: Uint8Array, lockOwner: string): Promise<boolean>;
  /**
   * A parked (poison) or backing-off cell is skipped; the row only when all its notified cells are.
   * (Skipping the row for one such cell kept every other observer of the row from running.)
   */
  skip(table: string, row: Uint8Array, column: string, now: number): boolean;
  /** Resolves when the job is queued (waits while the queue is full). */
  enqueue(job: Job): Promise<void>;
  /**
   * The host already holds as much queued work as it has runners (its own hints, rows waiting,
   * rows scanned): a pass now would mostly meet rows it holds. Scanners then pass at most every
   * BACKLOG_PAUSE_MS.
   */
  backlogged(): boolean;
  readonly stats: ScannerStats;
  /**
   * Idle wait between passes. `wakeable` (empty passes): resolves early when new work is hinted.
   * Not after a jump: the work met is someone else's, and a local commit (which wakes idle
   * scanners) says nothing new about it — waking there made scanners spin at the commit rate.
   */
  idle(ms: number, wakeable?: boolean): Promise<void>;
}

export interface ScannerStats {
  rowsScanned: number;
  notificationsFound: number;
  jumps: number;
  emptyPasses: number;
}

export const NOTIFY_FILTER = { familyNameRegexFilter: NOTIFY } as const;
const BATCH = 64;
/**
 * A scanner's pause before each pass while its host is backlogged. A saturated web index ran
 * every one of its observer runs from a hint, while its scanners' passes (a few engine scans
 * each, ~120/s, each skipping the notify group's deleted cells) took 7–19 % of its CPU. Rows only
 * a scanner finds (other processes' commits, dropped hints) wait at most this much longer.
 */
export const BACKLOG_PAUSE_MS = 200;
/**
 * The longest wait after passes that found nothing (the waits double from 2 ms). A pass over an
 * empty notify group is not free: LevelDB walks the group's deleted cells until a compaction drops
 * them, and an idle worker that had just processed 20 000 rows spent a quarter of a core on
 * passes 50 ms apart (docs/observers.md › Scanning and anti-clumping › Idle passes). A commit of
 * this process hands its notified rows to the workers (Worker.notified), so only another process's
 * work waits up to this long to be found. Apache Fluo's finder sleeps 5 s to 5 min.
 */
export const EMPTY_PASS_MAX_IDLE_MS = 1000;

/**
 * A random key between two keys: their common prefix, then a byte drawn between the two keys'
 * bytes at the first differing position, then bytes drawn within the range the two keys span at
 * each later position. Uniform random bytes would not do: real row keys share prefixes and
 * alphabets (`com.example/…`, `row-0042`), so random bytes almost always sort before or after
 * all of them and every "random" scan would start at the same row.
 */
export function randomKeyBetweenKeys(lo: Uint8Array, hi: Uint8Array, random: () => number = Math.random): Uint8Array {
  let p = 0;
  while (p < lo.length && p < hi.length && lo[p] === hi[p]) p++;
  const len = Math.max(lo.length, hi.length);
  const out = Buffer.alloc(Math.max(len, p));
  out.set(lo.subarray(0, p), 0);
  for (let i = p; i < len; i++) {
    const a = lo[i] ?? hi[i] ?? 0;
    const b = hi[i] ?? lo[i] ?? 0;
    const min = Math.min(a, b);
    out[i] = min + Math.floor(random() * (Math.max(a, b) - min + 1));
  }
  return out;
}

/** A random origin inside the notified part of a tablet, or null if it holds no notification. */
async function randomOrigin(host: ScannerHost, table: string, start: Uint8Array, end: Uint8Array | undefined): Promise<Uint8Array | null> {
  const range = {
    ...(start.byteLength > 0 ? { startKeyClosed: start } : {}),
    ...(end !== undefined && end.byteLength > 0 ? { endKeyOpen: end } : {}),
  };
  const edge = async (reversed: boolean): Promise<Uint8Array | null> => {
    for await (const r of host.store.readRows(table, { rows: { rowRanges: [range] }, filter: NOTIFY_FILTER, rowsLimit: 1, reversed }))
      return r.key;
    return null;
  };
  const first = await edge(false);
  if (first === null) return null;
  const last = (await edge(true)) ?? first;
  return randomKeyBetweenKeys(first, last);
}

/**
 * Groups a row's notify cells into per-column notifications: a column's strong cells (under its
 * qualifier) and its weak ones (under its weak qualifier, layout.ts `weakNotifyQualifier`, or under
 * its own with the value `w`, as builds before 2026-11-28's fourth session wrote them), in the
 * order of the columns' first cells.
 */
export function notificationsOf(cells: readonly { qualifier: Uint8Array; timestamp: number; value: Uint8Array }[]): NotifiedCell[] {
  const byColumn = new Map<string, { column: string; maxTs: number; weak: boolean; strong: boolean }>();
  let lastQ: Uint8Array | null = null;
  let last: { column: string; maxTs: number; weak: boolean; strong: boolean } | null = null;
  let weakQ = false;
  for (const c of cells) {
    // A column's versions are adjacent: decode its qualifier once.
    if (last === null || lastQ === null || Buffer.compare(lastQ, c.qualifier) !== 0) {
      const n = notifiedColumn(c.qualifier);
      weakQ = n.weakQualifier;
      lastQ = c.qualifier;
      last = byColumn.get(n.column) ?? null;
      if (last === null) byColumn.set(n.column, (last = { column: n.column, maxTs: 0, weak: false, strong: false }));
    }
    last.maxTs = Math.max(last.maxTs, c.timestamp);
    if (weakQ || (c.value.byteLength === 1 && c.value[0] === 0x77))
      last.weak = true; // 'w'
    else last.strong = true;
  }
  return [...byColumn.values()];
}

/**
 * One scanner task: runs until the host stops. Returns after the current batch when stopped.
 */
export async function scanLoop(host: ScannerHost, lockOwner: string): Promise<void> {
  let idleMs = 1;
  let jumpMs = 1;
  while (host.running()) {
    if (host.backlogged()) {
      // Not woken by new work: under a backlog new work arrives all the time.
      await host.idle(BACKLOG_PAUSE_MS, false);
      if (!host.running()) return;
    }
    const tables = await host.tables();
    if (tables.length === 0) {
      idleMs = Math.min(idleMs * 2, EMPTY_PASS_MAX_IDLE_MS);
      await host.idle(idleMs);
      continue;
    }
    const table = tables[Math.floor(Math.random() * tables.length)] as string;
    const samples = await host.store.sampleRowKeys(table);
    const t = Math.floor(Math.random() * samples.length);
    const tabletStart = t === 0 ? new Uint8Array(0) : (samples[t - 1]?.key ?? new Uint8Array(0));
    const tabletEnd = samples[t]?.key;
    // A tablet without notifications still starts a full pass (the others may have some).
    const origin = (await randomOrigin(host, table, tabletStart, tabletEnd)) ?? tabletStart;
    const found = await scanFrom(host, table, origin, lockOwner);
    if (found === 'jumped') {
      // Met another scanner's row: jump elsewhere — but back off when jumps keep failing to find
      // free work (every notified row held by others), instead of spinning over the notify group.
      // The wait also yields to the event loop, which an in-memory store never does by itself.
      await host.idle(jumpMs, false);
      jumpMs = Math.min(jumpMs * 2, 50);
      continue;
    }
    if (found === 0) {
      host.stats.emptyPasses++;
      idleMs = Math.min(idleMs * 2, EMPTY_PASS_MAX_IDLE_MS);
      await host.idle(idleMs);
    } else {
      idleMs = 1;
      jumpMs = 1;
    }
  }
}

/**
 * Scans the whole table once, starting at `origin` and wrapping around. Returns how many rows
 * were queued, or 'jumped' when it met another scanner's row.
 */
async function scanFrom(host: ScannerHost, table: string, origin: Uint8Array, lockOwner: string): Promise<number | 'jumped'> {
  let queued = 0;
  // Two legs: [origin, end) then [start, origin).
  const legs: { start: Uint8Array; end?: Uint8Array }[] = [{ start: origin }];
  if (origin.byteLength > 0) legs.push({ start: new Uint8Array(0), end: origin });
  for (const leg of legs) {
    let pos: Uint8Array = leg.start;
    for (;;) {
      if (!host.running()) return queued;
      const range = {
        ...(pos.byteLength > 0 ? { startKeyClosed: pos } : {}),
        ...(leg.end !== undefined ? { endKeyOpen: leg.end } : {}),
      };
      let n = 0;
      let last: Uint8Array | null = null;
      for await (const r of host.store.readRows(table, { rows: { rowRanges: [range] }, filter: NOTIFY_FILTER, rowsLimit: BATCH })) {
        n++;
        last = r.key;
        host.stats.rowsScanned++;
        const now = Date.now();
        const cells = notificationsOf(r.cells).filter((c) => host.observes(table, c.column) && !host.skip(table, r.key, c.column, now));
        if (cells.length === 0) continue;
        host.stats.notificationsFound++;
        if (!(await host.tryLockRow(table, r.key, lockOwner))) {
          host.stats.jumps++;
          return 'jumped';
        }
        await host.enqueue({ table, row: Uint8Array.prototype.slice.call(r.key) as Uint8Array, cells, lockOwner });
        queued++;
      }
      if (n < BATCH || last === null) break;
      pos = Buffer.concat([last, Buffer.from([0])]);
      // Let timers and I/O run between batches (an in-memory store never yields by itself).
      await new Promise<void>((r) => setImmediate(r));
    }
  }
  return queued;
}
