/**
 * `percolator check durability [--crash]`: proves that every write the store acknowledged
 * survives `kill -9` of the process that made it (DESIGN §9: `acknowledged`, `lost`, `kills`;
 * `lost` must be 0).
 *
 * How (and why it cannot pass by accident):
 * - A writer child (durability-writer.ts) writes through the real Store on `file:DIR` and reports
 *   each write's row keys over IPC only after the store resolved it. The parent counts a key as
 *   acknowledged only when that report arrives, so everything it counts was acknowledged before
 *   the kill, whenever the kill lands (mid-batch, mid-fsync, mid-compaction).
 * - After the child reported that it is writing, the parent waits a random 50–700 ms and sends
 *   SIGKILL (with `crash`; otherwise it asks the child to stop and close gracefully), waits for
 *   the process and its IPC channel to close (so reports already in the pipe are counted), and
 *   starts the next child on the same directory, whose open is LevelDB's crash recovery. This
 *   repeats until `seconds` have passed and at least 3 children were killed.
 * - Then the parent opens the store itself and scans the table: an acknowledged key that is
 *   missing is `lost`; a row (acknowledged or not) whose cells are not exactly the two cells its
 *   key determines is `corrupted` (wrong bytes, or one cell without the other: a torn row).
 *   Rows present but never acknowledged are fine (the ack died with the child) and are reported
 *   as `unacknowledgedFound`.
 * - With `fullDisk`, while a child writes the parent squeezes it: again and again it lowers the
 *   child's file-size limit (RLIMIT_FSIZE, through util-linux `prlimit`) to just above the size of
 *   the store's current log, so LevelDB's appends, flushes and compactions fail part-way as on a
 *   full disk, then gives the room back after a random 20–220 ms. The child treats IO_ERRORs as
 *   expected (their keys are not acknowledged) and asks the store to resume writing; the kills land
 *   anywhere in that, mid-refusal and mid-reopen included. `squeezes` and `refusedWrites` count it.
 * - `beforeVerify` lets a test damage the store first, proving the verifier can fail.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { refuseStoreInUse } from './check-store.js';
import { scratchDir } from './scratch-dir.js';
import { hasPrlimit, squeeze } from './squeeze.js';
import { COLUMNS, cellValue, DURABILITY_FAMILY, DURABILITY_TABLE, type ParentMessage, type WriterMessage } from './durability-protocol.js';

export interface DurabilityOptions {
  /** The store directory (`file:DIR`). Default: a fresh temporary directory, removed if the check passes. */
  readonly dataDir?: string;
  /** Minimum run time in seconds (the check also always kills/stops at least 3 children). */
  readonly seconds: number;
  /** true: SIGKILL the writer at random moments; false: stop it gracefully. */
  readonly crash: boolean;
  /** Progress lines. */
  readonly log?: (s: string) => void;
  /** Concurrent write loops in each child (default 8). */
  readonly writers?: number;
  /** Minimum number of kills (or graceful stops). Default 3. */
  readonly minCycles?: number;
  /** Squeeze the writer's file-size limit at random moments, as a disk filling up and emptying (needs `prlimit`). */
  readonly fullDisk?: boolean;
  /** Runs after the last child is gone and the parent opened the store, before the scan. */
  readonly beforeVerify?: (ctx: { store: Store; table: string; acknowledged: ReadonlySet<string> }) => Promise<void>;
}

export interface DurabilityResult {
  readonly acknowledged: number;
  readonly lost: number;
  readonly corrupted: number;
  readonly kills: number;
  /** Graceful stops (without --crash). */
  readonly stops: number;
  readonly unacknowledgedFound: number;
  /** With fullDisk: how often the writer's file-size limit was lowered, and the writes that failed for it. */
  readonly squeezes: number;
  readonly refusedWrites: number;
  readonly rowsScanned: number;
  readonly seconds: number;
  readonly dataDir: string;
  /** Whether `dataDir` is gone: a temporary directory (none given) is removed once the check passes. */
  readonly dataDirRemoved: boolean;
  readonly mode: 'crash' | 'graceful';
  /** First few lost / corrupted keys, for investigation. */
  readonly examples: readonly string[];
}

/** The compiled writer: next to this file in dist/, or dist/ when running from src/ (tests). */
export function writerScript(): string {
  const candidates = [
    fileURLToPath(new URL('./durability-writer.js', import.meta.url)),
    fileURLToPath(new URL('../../dist/check/durability-writer.js', import.meta.url)),
  ];
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined) throw new Error(`durability-writer.js not found (looked in ${candidates.join(', ')}): run npm run build`);
  return found;
}

interface Child {
  readonly proc: ChildProcess;
  /** Resolves on the child's first acknowledged write. */
  readonly writing: Promise<void>;
  /** Resolves when the process exited and its IPC channel closed (all its messages handled). */
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  error: { code: string; message: string } | null;
  stderr: string;
  /** Writes that failed with IO_ERROR (the full-disk mode). */
  refused: number;
}

function startWriter(
  script: string,
  url: string,
  runId: string,
  generation: number,
  writers: number,
  fullDisk: boolean,
  acked: Set<string>,
): Child {
  const args = [url, runId, String(generation), String(writers), ...(fullDisk ? ['full-disk'] : [])];
  const proc = fork(script, args, {
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'json',
    // Not the parent's flags (e.g. --input-type, test-runner loaders): the writer is plain JS.
    execArgv: [],
  });
  let onWriting!: () => void;
  let onWritingFailed!: (e: Error) => void;
  const writing = new Promise<void>((res, rej) => {
    onWriting = res;
    onWritingFailed = rej;
  });
  writing.catch(() => undefined);
  const child: Child = {
    proc,
    writing,
    closed: new Promise((res) => proc.once('close', (code, signal) => res({ code, signal }))),
    error: null,
    stderr: '',
    refused: 0,
  };
  proc.stderr?.on('data', (d: Buffer) => {
    child.stderr = (child.stderr + d.toString()).slice(-4000);
  });
  proc.on('message', (m: WriterMessage) => {
    switch (m.t) {
      case 'ack':
        for (const k of m.keys) acked.add(k);
        break;
      case 'writing':
        onWriting();
        break;
      case 'error':
        child.error = { code: m.code, message: m.message };
        break;
      case 'refused':
        child.refused++;
        break;
      case 'stopped':
        break;
    }
  });
  void child.closed.then(({ code, signal }) =>
    onWritingFailed(new Error(`writer exited (code ${code}, signal ${signal}) before it was writing`)),
  );
  return child;
}

function childFailure(c: Child, what: string): Error {
  if (c.error !== null) {
    // Keep the writer's stable code (e.g. DATA_CORRUPTED from the store's open) for the CLI, which
    // prints it before the message: the message does not repeat it.
    return Object.assign(new Error(`durability writer ${what}: ${c.error.message.split('\n')[0]}`), {
      code: c.error.code,
      writerMessage: c.error.message,
    });
  }
  return new Error(`durability writer ${what}${c.stderr ? `; its stderr:\n${c.stderr}` : ''}`);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function runDurabilityCheck(opts: DurabilityOptions): Promise<DurabilityResult> {
  const log = opts.log ?? (() => undefined);
  const started = performance.now();
  const script = writerScript(); // before creating any directory
  const fullDisk = opts.fullDisk === true;
  if (fullDisk && !(await hasPrlimit())) {
    throw Object.assign(new Error('check durability --full-disk needs prlimit (util-linux) to squeeze the writer'), { code: 'NO_PRLIMIT' });
  }
  const scratch = opts.dataDir === undefined ? await scratchDir('durability') : null;
  const dataDir = scratch?.path ?? resolve(opts.dataDir ?? '.');
  const url = `file:${dataDir}`;
  const runId = randomBytes(4).toString('hex');
  const writers = opts.writers ?? 8;
  const minCycles = opts.minCycles ?? 3;
  const acked = new Set<string>();
  let kills = 0;
  let stops = 0;
  let squeezes = 0;
  let refusedWrites = 0;
  // A store already there must be a check's; anything else (none yet, a directory of other
  // files) is the writer's to create or refuse, in its own words.
  const given = scratch !== null ? null : await openStore(url, { gcIntervalMs: 0, level: { create: false } }).catch(() => null);
  if (given !== null) {
    try {
      await refuseStoreInUse(given, url);
    } finally {
      await given.close();
    }
  }

  try {
    for (let generation = 0; ; generation++) {
      const elapsed = (performance.now() - started) / 1000;
      if (generation > 0 && kills + stops >= minCycles && elapsed >= opts.seconds) break;
      const child = startWriter(script, url, runId, generation, writers, fullDisk, acked);
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          child.writing,
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('timed out waiting 60 s for the writer to start writing')), 60_000);
          }),
        ]);
      } catch (e) {
        child.proc.kill('SIGKILL');
        await child.closed;
        // The writer's own error, when it sent one, says why; "exited before it was writing" only that it did.
        throw childFailure(child, `generation ${generation} failed to start${child.error === null ? `: ${(e as Error).message}` : ''}`);
      } finally {
        clearTimeout(timer);
      }
      // Longer lives with a full disk: time for the limit to fall and rise, and for writing to resume.
      const wait = fullDisk ? 300 + Math.random() * 1700 : 50 + Math.random() * 650;
      let over = false;
      const squeezing = fullDisk && child.proc.pid !== undefined ? squeeze(child.proc.pid, dataDir, () => over) : null;
      await sleep(wait);
      over = true;
      // A graceful stop gets its room back first (the close writes); a kill lands wherever it lands.
      if (!opts.crash && squeezing !== null) squeezes += await squeezing;
      if (child.error !== null || child.proc.exitCode !== null) {
        child.proc.kill('SIGKILL');
        await child.closed;
        throw childFailure(child, `generation ${generation} failed while writing`);
      }
      if (opts.crash) {
        child.proc.kill('SIGKILL');
        const { signal } = await child.closed;
        if (signal !== 'SIGKILL') throw childFailure(child, `generation ${generation} ended before the kill`);
        kills++;
        if (squeezing !== null) squeezes += await squeezing;
        refusedWrites += child.refused;
        log(`kill ${kills}: generation ${generation} after ${Math.round(wait)} ms writing; ${acked.size} acknowledged so far`);
      } else {
        child.proc.send({ t: 'stop' } satisfies ParentMessage);
        const { code } = await child.closed;
        if (code !== 0) throw childFailure(child, `generation ${generation} did not stop cleanly (exit ${code})`);
        stops++;
        refusedWrites += child.refused;
        log(`stop ${stops}: generation ${generation} after ${Math.round(wait)} ms writing; ${acked.size} acknowledged so far`);
      }
    }
  } catch (e) {
    // Keep the directory as evidence and say where it is.
    if (e instanceof Error) e.message = `${e.message} (store directory kept: ${dataDir})`;
    throw e;
  }

  // Verification: the parent opens the store itself (LevelDB recovery of the last kill).
  const store = await openStore(url, { gcIntervalMs: 0 });
  let lost = 0;
  let corrupted = 0;
  let unacknowledgedFound = 0;
  let rowsScanned = 0;
  const examples: string[] = [];
  try {
    await opts.beforeVerify?.({ store, table: DURABILITY_TABLE, acknowledged: acked });
    const found = new Set<string>();
    const prefix = `${runId}-`;
    for await (const row of store.readRows(DURABILITY_TABLE)) {
      const key = Buffer.from(row.key).toString('latin1');
      if (!key.startsWith(prefix)) continue; // an earlier run in the same --data directory
      rowsScanned++;
      let ok = row.cells.length === COLUMNS.length;
      if (ok) {
        for (let i = 0; i < COLUMNS.length; i++) {
          const c = row.cells[i];
          const col = COLUMNS[i] as string;
          if (c === undefined || c.family !== DURABILITY_FAMILY || Buffer.from(c.qualifier).toString() !== col) {
            ok = false;
            break;
          }
          if (!cellValue(key, col).equals(c.value)) {
            ok = false;
            break;
          }
        }
      }
      if (!ok) {
        corrupted++;
        if (examples.length < 10) examples.push(`corrupted ${key} (${row.cells.length} cells)`);
      }
      if (acked.has(key)) found.add(key);
      else unacknowledgedFound++;
    }
    for (const k of acked) {
      if (!found.has(k)) {
        lost++;
        if (examples.length < 10) examples.push(`lost ${k}`);
      }
    }
  } finally {
    await store.close();
  }
  const seconds = Math.round((performance.now() - started) / 10) / 100;
  const removed = scratch !== null && lost === 0 && corrupted === 0;
  await scratch?.dispose(removed);
  return {
    acknowledged: acked.size,
    lost,
    corrupted,
    kills,
    stops,
    unacknowledgedFound,
    squeezes,
    refusedWrites,
    rowsScanned,
    seconds,
    dataDir,
    dataDirRemoved: removed,
    mode: opts.crash ? 'crash' : 'graceful',
    examples,
  };
}
