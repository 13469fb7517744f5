/**
 * The writer child of `percolator check durability` (started by durability.ts as
 * `node dist/check/durability-writer.js STORE_URL RUN_ID GENERATION WORKERS [full-disk]` with an IPC
 * channel).
 *
 * It opens the store (after a kill -9 of its predecessor, this is where LevelDB recovery runs),
 * creates the table if missing, and runs WORKERS concurrent write loops through the real Store API
 * — `mutateRows` batches, single `mutateRow`s, `checkAndMutateRow`s (false branch on a fresh
 * row), and deferred writes followed by a durable one — so group commit, row latches, the row
 * codec and the deferred-write overlay are all on the path being killed.
 *
 * Contract with the parent (durability-protocol.ts): an `ack` names keys whose write promise has
 * resolved, and is sent only then. It may be lost to the kill (the parent then simply does not
 * count those keys), never sent early. Any unexpected outcome (a per-row error, a predicate that
 * matched a row that cannot exist) is reported as `error` and the child exits 1: the parent fails
 * the check instead of guessing. With `full-disk` (the parent squeezes this process's file-size
 * limit), an IO_ERROR is expected instead: the keys of that write are not acknowledged, the
 * failure is reported as `refused`, and the loop asks the store to resume before it writes on.
 */
import { isStoreError } from '../store/errors.js';
import { openStore } from '../store/open-store.js';
import { atomicRowsOf, type Store } from '../store/store.js';
import type { MutateRowsEntry } from '../store/types.js';
import {
  DURABILITY_FAMILY,
  DURABILITY_TABLE,
  type ParentMessage,
  rowKey,
  rowMutations,
  type WriterMessage,
} from './durability-protocol.js';
import { failureMessage } from './worker-failure.js';

let stopping = false;

function send(m: WriterMessage, then?: () => void): void {
  if (process.send !== undefined && process.connected) process.send(m, undefined, {}, () => then?.());
  else then?.();
}

function fail(e: unknown): void {
  const code = typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : 'WRITER_FAILED';
  // A typed error's message says what happened (NOT_A_STORE, DATA_CORRUPTED, STORE_LOCKED at the
  // open); the stack is the evidence only for a bug. The parent shows the first line.
  const message = failureMessage(e);
  process.stderr.write(`durability-writer: ${code}: ${message}\n`);
  // Exit once the message is flushed to the parent.
  send({ t: 'error', code, message }, () => process.exit(1));
}

async function ensureTable(store: Store): Promise<void> {
  if ((await store.listTables()).includes(DURABILITY_TABLE)) return;
  try {
    await store.createTable(DURABILITY_TABLE, { families: { [DURABILITY_FAMILY]: {} } });
  } catch (e) {
    if (!isStoreError(e, 'TABLE_EXISTS')) throw e;
  }
}

async function writeLoop(
  store: Store,
  runId: string,
  generation: number,
  worker: number,
  fullDisk: boolean,
  onFirstAck: () => void,
): Promise<void> {
  let seq = 0;
  const next = (): string => rowKey(runId, generation, worker, seq++);
  while (!stopping) {
    let keys: string[];
    try {
      keys = await writeSome(store, next);
    } catch (e) {
      if (!fullDisk || !isStoreError(e, 'IO_ERROR')) throw e;
      send({ t: 'refused' });
      // Writing resumes once the parent gave the room back; until then, a short pause a try.
      if ((await atomicRowsOf(store)?.resumeWrites()) !== null) await new Promise((r) => setTimeout(r, 10));
      continue;
    }
    send({ t: 'ack', keys });
    onFirstAck();
  }
}

/** One write of a random kind; the keys it wrote once the store acknowledged them. */
async function writeSome(store: Store, next: () => string): Promise<string[]> {
  const r = Math.random();
  let keys: string[];
  if (r < 0.1) {
    // Deferred writes resolve before they are durable; the durable write issued after them is
    // acknowledged only when they are durable too (the store's log is ordered). So all these
    // keys are acknowledged together, once the durable one resolved.
    const n = 1 + Math.floor(Math.random() * 8);
    keys = Array.from({ length: n + 1 }, next);
    const deferred = keys
      .slice(0, n)
      .map((k) => store.mutateRow(DURABILITY_TABLE, Buffer.from(k), rowMutations(k), { durability: 'deferred' }));
    await Promise.all(deferred);
    const last = keys[n] as string;
    await store.mutateRow(DURABILITY_TABLE, Buffer.from(last), rowMutations(last));
  } else if (r < 0.7) {
    const n = 1 + Math.floor(Math.random() * 64);
    keys = Array.from({ length: n }, next);
    const entries: MutateRowsEntry[] = keys.map((k) => ({ key: Buffer.from(k), mutations: rowMutations(k) }));
    const results = await store.mutateRows(DURABILITY_TABLE, entries);
    const failed = results.find((x) => x.error !== undefined);
    if (failed !== undefined) throw failed.error;
    if (results.length !== n) throw new Error(`mutateRows returned ${results.length} results for ${n} entries`);
  } else if (r < 0.9) {
    const k = next();
    keys = [k];
    await store.mutateRow(DURABILITY_TABLE, Buffer.from(k), rowMutations(k));
  } else {
    // The row is fresh, so the default predicate ("has a cell") is false: the false branch writes it.
    const k = next();
    keys = [k];
    const matched = await store.checkAndMutateRow(DURABILITY_TABLE, Buffer.from(k), {
      trueMutations: [{ deleteFromRow: {} }],
      falseMutations: rowMutations(k),
    });
    if (matched) throw new Error(`checkAndMutateRow: the predicate matched fresh row ${k}`);
  }
  return keys;
}

async function main(): Promise<void> {
  const [url, runId, genText, workersText, mode] = process.argv.slice(2);
  if (url === undefined || runId === undefined || genText === undefined) {
    throw new Error('usage: durability-writer STORE_URL RUN_ID GENERATION [WORKERS [full-disk]]');
  }
  const generation = Number(genText);
  const workers = Number(workersText ?? '8');
  process.on('message', (m: ParentMessage) => {
    if (m.t === 'stop') stopping = true;
  });
  // The parent went away: nobody is counting any more.
  process.on('disconnect', () => {
    stopping = true;
  });

  const store = await openStore(url, { gcIntervalMs: 0 });
  await ensureTable(store);
  let announced = false;
  const onFirstAck = (): void => {
    if (announced) return;
    announced = true;
    send({ t: 'writing' });
  };
  const fullDisk = mode === 'full-disk';
  await Promise.all(Array.from({ length: workers }, (_, w) => writeLoop(store, runId, generation, w, fullDisk, onFirstAck)));
  await store.close();
  send({ t: 'stopped' }, () => {
    if (process.connected) process.disconnect();
  });
}

main().catch(fail);
