/**
 * bigtable:// backend behaviour beyond the shared conformance suite, against Google's emulator:
 * timestamp mapping end to end, millisecond checks, request batching and coalescing, resuming
 * interrupted streams, retrying transient per-entry failures, openStore wiring.
 * Skips with a clear message where cbtemulator is not installed.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BigtableStore } from '../src/store/bigtable/bigtable-store.js';
import { openStore } from '../src/store/open-store.js';
import { collectRows, type Store } from '../src/store/store.js';
import type { Mutation, Row } from '../src/store/types.js';
import { EMULATOR_MISSING, emulatorBinary, type RunningEmulator, startEmulator } from './support/emulator.js';

const binary = emulatorBinary();
if (binary === null) console.warn(EMULATOR_MISSING);

const b = (s: string): Uint8Array => Buffer.from(s, 'latin1');
const set = (family: string, q: string, ts: number, v: string): Mutation => ({
  setCell: { familyName: family, columnQualifier: b(q), timestampMicros: ts, value: b(v) },
});
const show = (rows: readonly Row[]): string[] =>
  rows.map(
    (r) =>
      `${Buffer.from(r.key).toString('latin1')}:${r.cells.map((c) => `${c.family}/${Buffer.from(c.qualifier).toString('latin1')}@${c.timestamp}=${Buffer.from(c.value).toString('latin1')}`).join(',')}`,
  );

type Fn = (...args: unknown[]) => unknown;
/** Wraps a method of the store's gapic data client (test-only access). */
function wrapData(store: BigtableStore, method: string, wrap: (orig: Fn) => Fn): void {
  const data = (store as unknown as { clients: { data: Record<string, Fn> } }).clients.data;
  const orig = (data[method] as Fn).bind(data);
  data[method] = wrap(orig);
}

/** Wraps the store's ReadRows call (test-only access): `orig` resolves to the call's stream of responses. */
function wrapReadRows(store: BigtableStore, wrap: (orig: Fn) => Fn): void {
  const s = store as unknown as { readRowsCall: Fn };
  const orig = s.readRowsCall.bind(store);
  s.readRowsCall = wrap(orig);
}

describe.skipIf(binary === null)('bigtable:// backend on the emulator', () => {
  let emu: RunningEmulator;
  const stores: Store[] = [];
  let n = 0;
  const open = async (query: string, options: ConstructorParameters<typeof Object>[0] = {}): Promise<BigtableStore> => {
    const s = await BigtableStore.open(emu.url(query), options as never);
    stores.push(s);
    return s;
  };
  const table = async (s: Store, families: string[] = ['f', 'g']): Promise<string> => {
    const t = `b${++n}`;
    await s.createTable(t, { families: Object.fromEntries(families.map((f) => [f, {}])) });
    return t;
  };

  beforeAll(async () => {
    emu = await startEmulator(binary as string);
  });
  afterAll(async () => {
    for (const s of stores) await s.close().catch(() => undefined);
    await emu?.stop();
  });

  it('openStore("bigtable://…") opens this backend', async () => {
    const s = await openStore(emu.url());
    stores.push(s);
    expect(s).toBeInstanceOf(BigtableStore);
    expect(s.url).toBe(emu.url());
    await expect(openStore('bigtable://nowhere')).rejects.toMatchObject({ code: 'INVALID_STORE_URL' });
  });

  it('timestampScale=1000 stores any µs timestamp exactly (wire = ×1000) and filters by µs', async () => {
    const s = await open('timestampScale=1000');
    const t = await table(s);
    const t1 = 1_700_000_000_123_457; // not a multiple of 1000
    const t2 = t1 + 1;
    await s.mutateRow(t, b('r'), [set('f', 'q', t1, 'one'), set('f', 'q', t2, 'two'), set('f', 'max', Number.MAX_SAFE_INTEGER, 'max')]);
    expect(show(await collectRows(s.readRows(t)))).toEqual([`r:f/max@${Number.MAX_SAFE_INTEGER}=max,f/q@${t2}=two,f/q@${t1}=one`]);
    const only = await s.readRow(t, b('r'), { timestampRangeFilter: { startTimestampMicros: t1, endTimestampMicros: t2 } });
    expect(only?.cells.map((c) => c.timestamp)).toEqual([t1]);
    await s.mutateRow(t, b('r'), [
      {
        deleteFromColumn: { familyName: 'f', columnQualifier: b('q'), timeRange: { startTimestampMicros: t2, endTimestampMicros: t2 + 1 } },
      },
    ]);
    expect((await s.readRow(t, b('r'), { columnQualifierRegexFilter: 'q' }))?.cells.map((c) => c.timestamp)).toEqual([t1]);
    // The emulator holds ×1000: a client with the wrong scale fails loudly instead of misreading.
    const wrongScale = await open('timestampScale=1');
    await expect(wrongScale.readRow(t, b('r'), { columnQualifierRegexFilter: 'q' })).rejects.toMatchObject({ code: 'DATA_CORRUPTED' });
    // Server time (-1) is stamped by the client in ms × 1000 of its clock.
    const before = Date.now() * 1000;
    await s.mutateRow(t, b('now'), [set('g', 'q', -1, 'x')]);
    const ts = (await s.readRow(t, b('now')))?.cells[0]?.timestamp ?? 0;
    expect(ts % 1000).toBe(0);
    expect(ts).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(ts).toBeLessThanOrEqual(Date.now() * 1000);
  });

  it('timestampScale=1 on a millisecond server: non-ms setCell is INVALID_TIMESTAMP (nothing written); ranges are exact', async () => {
    const s = await open('timestampScale=1');
    const t = await table(s);
    await expect(s.mutateRow(t, b('r'), [set('f', 'ok', 1000, 'x'), set('f', 'q', 1500, 'x')])).rejects.toMatchObject({
      code: 'INVALID_TIMESTAMP',
    });
    expect(await s.readRow(t, b('r'))).toBeNull();
    const res = await s.mutateRows(t, [
      { key: b('a'), mutations: [set('f', 'q', 2500, 'x')] },
      { key: b('b'), mutations: [set('f', 'q', 2000, 'x'), set('f', 'q', 3000, 'y')] },
    ]);
    expect(res.map((r) => r.error?.code ?? 'OK')).toEqual(['INVALID_TIMESTAMP', 'OK']);
    // [1001, 3000) holds 2000 only; [2001, 2999) nothing: bounds are rounded up, exactly.
    expect(
      (await s.readRow(t, b('b'), { timestampRangeFilter: { startTimestampMicros: 1001, endTimestampMicros: 3000 } }))?.cells.map(
        (c) => c.timestamp,
      ),
    ).toEqual([2000]);
    expect(await s.readRow(t, b('b'), { timestampRangeFilter: { startTimestampMicros: 2001, endTimestampMicros: 2999 } })).toBeNull();
    await s.mutateRow(t, b('b'), [
      {
        deleteFromColumn: { familyName: 'f', columnQualifier: b('q'), timeRange: { startTimestampMicros: 2001, endTimestampMicros: 3001 } },
      },
    ]);
    expect((await s.readRow(t, b('b')))?.cells.map((c) => c.timestamp)).toEqual([2000]);
  });

  it('mutateRows splits big batches (≤ maxMutationsPerRequest per request) and keeps per-entry results', async () => {
    const s = await open('', { maxMutationsPerRequest: 7 });
    const t = await table(s);
    let requests = 0;
    const sizes: number[] = [];
    wrapData(s, 'mutateRows', (orig) => (req, opts) => {
      requests++;
      sizes.push((req as { entries: { mutations: unknown[] }[] }).entries.reduce((a, e) => a + e.mutations.length, 0));
      return orig(req, opts);
    });
    const entries = Array.from({ length: 20 }, (_, i) => ({
      key: b(`k${String(i).padStart(2, '0')}`),
      mutations: i === 5 ? [set('nope', 'q', 1000, 'x')] : [set('f', 'q', 1000, `v${i}`), set('g', 'q', 1000, `w${i}`)],
    }));
    const res = await s.mutateRows(t, entries);
    expect(res.map((r) => r.index)).toEqual(entries.map((_, i) => i));
    expect(res.filter((r) => r.error !== undefined).map((r) => [r.index, r.error?.code])).toEqual([[5, 'FAMILY_NOT_FOUND']]);
    expect(requests).toBe(Math.ceil(38 / 6));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(7);
    expect(await collectRows(s.readRows(t))).toHaveLength(19);
  });

  it('retries transient per-entry failures of idempotent entries', async () => {
    const s = await open('');
    const t = await table(s);
    let calls = 0;
    wrapData(s, 'mutateRows', (orig) => (req, opts) => {
      calls++;
      if (calls > 1) return orig(req, opts);
      // First attempt: pretend entry 1 was UNAVAILABLE (and do not apply it).
      const r = req as { entries: unknown[] };
      const stream = orig({ ...r, entries: [r.entries[0]] }, opts) as AsyncIterable<{
        entries: { index: number; status: { code: number } }[];
      }>;
      return (async function* () {
        for await (const resp of stream) yield { entries: [...resp.entries, { index: 1, status: { code: 14, message: 'try again' } }] };
      })();
    });
    const res = await s.mutateRows(t, [
      { key: b('a'), mutations: [set('f', 'q', 1000, 'a')] },
      { key: b('b'), mutations: [set('f', 'q', 1000, 'b')] },
    ]);
    expect(res.map((r) => r.error?.code ?? 'OK')).toEqual(['OK', 'OK']);
    expect(calls).toBe(2);
    expect(show(await collectRows(s.readRows(t)))).toEqual(['a:f/q@1000=a', 'b:f/q@1000=b']);
  });

  it('resumes a ReadRows stream broken by UNAVAILABLE after the last row received (forward, reversed, limited)', async () => {
    const s = await open('');
    const t = await table(s);
    const keys = Array.from({ length: 12 }, (_, i) => `r${String(i).padStart(2, '0')}`);
    await s.mutateRows(
      t,
      keys.map((k) => ({ key: b(k), mutations: [set('f', 'q', 1000, k)] })),
    );
    let breakNext = true;
    wrapReadRows(s, (orig) => async (req, reversed) => {
      const stream = (await orig(req, reversed)) as AsyncIterable<unknown>;
      if (!breakNext) return stream;
      breakNext = false;
      return (async function* () {
        let sent = 0;
        for await (const resp of stream) {
          yield resp;
          if (++sent === 4) throw Object.assign(new Error('14 UNAVAILABLE: connection reset'), { code: 14, details: 'connection reset' });
        }
      })();
    });
    const keysOf = (rows: Row[]): string[] => rows.map((r) => Buffer.from(r.key).toString());
    expect(keysOf(await collectRows(s.readRows(t)))).toEqual(keys);
    breakNext = true;
    expect(keysOf(await collectRows(s.readRows(t, { reversed: true })))).toEqual([...keys].reverse());
    breakNext = true;
    expect(keysOf(await collectRows(s.readRows(t, { rowsLimit: 7, rows: { rowRanges: [{ startKeyOpen: b('r01') }] } })))).toEqual(
      keys.slice(2, 9),
    );
    breakNext = true;
    expect(
      keysOf(await collectRows(s.readRows(t, { rows: { rowKeys: [b('r03'), b('r11'), b('r00'), b('r07'), b('r05'), b('r09')] } }))),
    ).toEqual(['r00', 'r03', 'r05', 'r07', 'r09', 'r11']);
  });

  it('coalesces concurrent readRow calls with the same filter into one ReadRows', async () => {
    const s = await open('');
    const t = await table(s);
    await s.mutateRows(
      t,
      Array.from({ length: 30 }, (_, i) => ({ key: b(`k${i}`), mutations: [set('f', 'q', 1000, `v${i}`), set('g', 'q', 1000, `w${i}`)] })),
    );
    await s.readRow(t, b('k0')); // schema cached
    let requests = 0;
    wrapReadRows(s, (orig) => (req, reversed) => {
      requests++;
      return orig(req, reversed);
    });
    const filter = { familyNameRegexFilter: 'g' };
    const rows = await Promise.all([
      ...Array.from({ length: 40 }, (_, i) => s.readRow(t, b(`k${i}`), filter)),
      s.readRow(t, b('k3'), filter),
    ]);
    expect(requests).toBe(1);
    expect(rows.map((r) => (r === null ? null : show([r])[0]))).toEqual([
      ...Array.from({ length: 40 }, (_, i) => (i < 30 ? `k${i}:g/q@1000=w${i}` : null)),
      'k3:g/q@1000=w3',
    ]);
    requests = 0;
    const mixed = await Promise.all([s.readRow(t, b('k1')), s.readRow(t, b('k1'), filter), s.readRow(t, b('k2'))]);
    expect(requests).toBe(2);
    expect(mixed.map((r) => r?.cells.length)).toEqual([2, 1, 2]);
  });

  it('sends concurrent conditional mutations one call each where the server has no batch service', async () => {
    const s = await open('');
    const t = await table(s);
    await s.mutateRow(t, b('held'), [set('f', 'lock', 1000, 'x')]);
    const matched = await Promise.all(
      ['held', 'free1', 'free2', 'held'].map((row) =>
        s.checkAndMutateRow(t, b(row), { predicateFilter: { familyNameRegexFilter: 'f' }, falseMutations: [set('g', 'w', 1000, row)] }),
      ),
    );
    expect(matched).toEqual([true, false, false, true]);
    expect(s.conditionalWrites.batching).toBe(false); // the emulator answered UNIMPLEMENTED
    expect(s.conditionalWrites.stats).toMatchObject({ batches: 1, singles: 4 });
    expect(show(await collectRows(s.readRows(t, { filter: { familyNameRegexFilter: 'g' } })))).toEqual([
      'free1:g/w@1000=free1',
      'free2:g/w@1000=free2',
    ]);
    // Known from then on: no batch is tried again.
    await Promise.all(['free3', 'free4'].map((row) => s.checkAndMutateRow(t, b(row), { falseMutations: [set('g', 'w', 1000, row)] })));
    expect(s.conditionalWrites.stats).toMatchObject({ batches: 1, singles: 6 });
  });

  it('native readModifyWriteRow (no injected clock, scale 1) uses the server and its clock', async () => {
    const s = await open('');
    const t = await table(s);
    let rmw = 0;
    wrapData(s, 'readModifyWriteRow', (orig) => (req, opts) => {
      rmw++;
      return orig(req, opts);
    });
    const before = Date.now() * 1000;
    const r = await s.readModifyWriteRow(t, b('c'), [
      { familyName: 'g', columnQualifier: b('n'), incrementAmount: 5n },
      { familyName: 'f', columnQualifier: b('s'), appendValue: b('ab') },
    ]);
    expect(rmw).toBe(1);
    expect(r.cells.map((c) => c.family)).toEqual(['f', 'g']);
    expect(Buffer.from(r.cells[1]?.value ?? []).readBigInt64BE(0)).toBe(5n);
    expect(r.cells[0]?.timestamp).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
  });

  it("a local server that is down fails fast with IO_ERROR (not after gax's Cloud-sized retry budget)", async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const s = await BigtableStore.open(`bigtable://127.0.0.1:${port}`);
    stores.push(s);
    const t0 = Date.now();
    await expect(s.listTables()).rejects.toMatchObject({ code: 'IO_ERROR' });
    await expect(s.mutateRow('t', b('r'), [set('f', 'q', 1000, 'v')])).rejects.toMatchObject({ code: 'IO_ERROR' });
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('Percolator transactions run unchanged over bigtable:// (emulator, timestampScale=1000)', async () => {
    // Oracle timestamps are µs and not multiples of 1000: only the ×1000 mapping can store them.
    const { Percolator } = await import('../src/txn/percolator.js');
    const { Oracle } = await import('../src/oracle/oracle.js');
    const { MemoryMarkStore } = await import('../src/oracle/mark-store.js');
    const url = `bigtable://${emu.host}:${emu.port}/bank/b1?emulator=1&timestampScale=1000`;
    // The emulator hosts no oracle: a shared store without one named is refused, not guessed.
    await expect(Percolator.open({ store: url })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    const oracle = await Oracle.open({ markStore: new MemoryMarkStore() });
    const db = await Percolator.open({ store: url, oracle, lockWaitMs: 500, leaseMs: 2000 });
    try {
      await db.createTable('bank');
      const accounts = Array.from({ length: 6 }, (_, i) => `acct${i}`);
      await db.transaction(async (tx) => {
        for (const a of accounts) tx.set('bank', a, 'c:bal', '100');
      });
      const transfer = async (i: number): Promise<void> => {
        const from = accounts[i % accounts.length] as string;
        const to = accounts[(i * 7 + 3) % accounts.length] as string;
        if (from === to) return;
        await db.transaction(async (tx) => {
          const a = Number(await tx.getString('bank', from, 'c:bal'));
          const c = Number(await tx.getString('bank', to, 'c:bal'));
          tx.set('bank', from, 'c:bal', String(a - 1));
          tx.set('bank', to, 'c:bal', String(c + 1));
        });
      };
      await Promise.all(Array.from({ length: 24 }, (_, i) => transfer(i)));
      const snap = await db.snapshot();
      let total = 0;
      for (const a of accounts) total += Number(await snap.getString('bank', a, 'c:bal'));
      snap.release();
      expect(total).toBe(600);
    } finally {
      await db.close();
      await oracle.close();
    }
  }, 60_000);

  it('the emulator with ?oracle=HOST:PORT: Percolator.open takes its timestamps from the oracle the URL names', async () => {
    const { Percolator } = await import('../src/txn/percolator.js');
    const { MemoryMarkStore } = await import('../src/oracle/mark-store.js');
    const { startOracleServer } = await import('../src/oracle/server.js');
    const url = `bigtable://${emu.host}:${emu.port}/named/o1?emulator=1&timestampScale=1000`;
    await expect(Percolator.open({ store: url })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('?oracle=HOST:PORT'),
    });
    const server = await startOracleServer({ port: 0, markStore: new MemoryMarkStore() });
    const db = await Percolator.open({ store: `${url}&oracle=127.0.0.1:${server.port}`, lockWaitMs: 500, leaseMs: 2000 });
    try {
      await db.createTable('named');
      await db.transaction(async (tx) => tx.set('named', 'r', 'c:v', 'x'));
      expect(await db.getString('named', 'r', 'c:v')).toBe('x');
      expect(server.stats().timestamps).toBeGreaterThan(0);
    } finally {
      await db.close();
      await server.close();
    }
  }, 60_000);

  it('sampleRowKeys ends with the empty key', async () => {
    const s = await open('');
    const t = await table(s);
    expect((await s.sampleRowKeys(t)).at(-1)?.key.length).toBe(0);
    await s.mutateRows(
      t,
      Array.from({ length: 50 }, (_, i) => ({ key: b(`k${i}`), mutations: [set('f', 'q', 1000, 'x'.repeat(100))] })),
    );
    const samples = await s.sampleRowKeys(t);
    expect(samples.at(-1)?.key.length).toBe(0);
    expect(samples.at(-1)?.offsetBytes).toBeGreaterThan(0);
  });
});
