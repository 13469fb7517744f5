/**
 * The LevelDB engine against the KvEngine contract (kv-engine.ts), plus what only a durable
 * engine has: group commit, persistence across reopen, the directory lock, and corruption
 * detection (each corruption the engine claims to catch is injected into real files here; what
 * it cannot catch is pinned down by a test too, so docs/durability.md stays true).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isStoreError, type StoreError } from '../errors.js';
import type { KvEngine, KvEntry, KvOp } from '../kv-engine.js';
import { CORRUPTION_MARKER, type LevelEngine, type LevelEngineOptions, openLevelEngine } from './level-engine.js';
import { applyVersionEdit, crc32c, newManifestState, readLogRecords } from './level-format.js';
import { verifyLevelDir } from './level-verify.js';

const dirs: string[] = [];
const engines: KvEngine[] = [];

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'level-engine-'));
  dirs.push(d);
  return d;
}

async function open(dir: string, options?: LevelEngineOptions): Promise<LevelEngine> {
  const e = await openLevelEngine(dir, options);
  engines.push(e);
  return e;
}

afterEach(async () => {
  vi.restoreAllMocks();
  for (const e of engines.splice(0)) await e.close().catch(() => undefined);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const b = (...bytes: number[]): Uint8Array => Uint8Array.from(bytes);
const s = (str: string): Uint8Array => Buffer.from(str);
const hex = (u: Uint8Array): string => Buffer.from(u).toString('hex');
const put = (key: Uint8Array, value: Uint8Array): KvOp => ({ type: 'put', key, value });
const del = (key: Uint8Array): KvOp => ({ type: 'del', key });

async function all(it: AsyncIterable<readonly KvEntry[]>): Promise<KvEntry[]> {
  const out: KvEntry[] = [];
  for await (const batch of it) {
    expect(batch.length).toBeGreaterThan(0);
    out.push(...batch);
  }
  return out;
}

async function expectCode(p: Promise<unknown> | (() => unknown), code: StoreError['code']): Promise<StoreError> {
  let err: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    err = e;
  }
  expect(isStoreError(err), `expected StoreError ${code}, got ${String(err)}`).toBe(true);
  expect((err as StoreError).code).toBe(code);
  return err as StoreError;
}

function files(dir: string, re: RegExp): string[] {
  return readdirSync(dir)
    .filter((n) => re.test(n))
    .sort();
}

/**
 * The tables the MANIFEST lists (LevelDB's live files). A compaction that a close cut short
 * leaves its output behind, unlisted, until the next open deletes it: no check reads that file.
 */
function liveTables(dir: string): string[] {
  const manifest = readFileSync(join(dir, 'CURRENT'), 'latin1').trim();
  const state = newManifestState();
  for (const rec of readLogRecords(readFileSync(join(dir, manifest)), manifest, [])) applyVersionEdit(rec, state);
  return [...state.live.keys()].map((n) => `${String(n).padStart(6, '0')}.ldb`).sort();
}

function flipByte(path: string, at: number): void {
  const buf = readFileSync(path);
  buf[at] ^= 0x5a;
  writeFileSync(path, buf);
}

/** Writes `n` rows of random (incompressible) 100-byte values; returns them by key hex. */
async function fill(e: KvEngine, n: number, prefix = 'k'): Promise<Map<string, Uint8Array>> {
  const rows = new Map<string, Uint8Array>();
  const ops: KvOp[] = [];
  for (let i = 0; i < n; i++) {
    const key = s(`${prefix}${String(i).padStart(6, '0')}`);
    const value = randomBytes(100);
    rows.set(hex(key), value);
    ops.push(put(key, value));
  }
  for (let i = 0; i < ops.length; i += 500) await e.write(ops.slice(i, i + 500));
  return rows;
}

/** Data that sits in a table file (.ldb), not only in the log: LevelDB flushes the log on reopen. */
async function tableDir(n = 2000): Promise<{ dir: string; rows: Map<string, Uint8Array> }> {
  const dir = tempDir();
  const e = await openLevelEngine(dir);
  const rows = await fill(e, n);
  await e.close();
  await (await openLevelEngine(dir)).close();
  expect(files(dir, /\.ldb$/).length).toBeGreaterThan(0);
  return { dir, rows };
}

describe('LevelEngine: the KvEngine contract', () => {
  it('put, get, del; get returns undefined for absent keys', async () => {
    const e = await open(tempDir());
    expect(e.get(s('a'))).toBeUndefined();
    await e.write([put(s('a'), s('1')), put(s('b'), s('2'))]);
    expect(hex(e.get(s('a')) as Uint8Array)).toBe(hex(s('1')));
    await e.write([del(s('a')), put(s('b'), s('3'))]);
    expect(e.get(s('a'))).toBeUndefined();
    expect(hex(e.get(s('b')) as Uint8Array)).toBe(hex(s('3')));
    // Empty values are values, not absence.
    await e.write([put(s('c'), new Uint8Array(0))]);
    expect(e.get(s('c'))?.byteLength).toBe(0);
  });

  it('ops in one write apply in order (a put then a del of the same key deletes it)', async () => {
    const e = await open(tempDir());
    await e.write([put(s('x'), s('1')), del(s('x')), put(s('y'), s('1')), put(s('y'), s('2'))]);
    expect(e.get(s('x'))).toBeUndefined();
    expect(Buffer.from(e.get(s('y')) as Uint8Array).toString()).toBe('2');
  });

  it('a write is all or nothing: a bad op rejects the whole call, and only that call', async () => {
    const e = await open(tempDir());
    const good1 = e.write([put(s('g1'), s('v'))]);
    const bad = e.write([put(s('b1'), s('v')), { type: 'put', key: s('b2'), value: 'not bytes' as unknown as Uint8Array }]);
    const good2 = e.write([put(s('g2'), s('v'))]);
    await expectCode(bad, 'INVALID_ARGUMENT');
    await good1;
    await good2;
    expect(e.get(s('g1'))).toBeDefined();
    expect(e.get(s('g2'))).toBeDefined();
    expect(e.get(s('b1'))).toBeUndefined();
    await expectCode(e.write([{ type: 'nope', key: s('z') } as unknown as KvOp]), 'INVALID_ARGUMENT');
  });

  it('a scan never sees half of a batch (batches are atomic to snapshots)', async () => {
    const e = await open(tempDir());
    let stop = false;
    const writer = (async () => {
      for (let i = 0; !stop; i++) {
        const id = String(i).padStart(6, '0');
        await e.write([put(s(`a${id}`), s('x')), put(s(`b${id}`), s('x'))]);
      }
    })();
    for (let round = 0; round < 30; round++) {
      const entries = await all(e.iterate({}));
      const as = entries.filter((x) => x.key[0] === 0x61).length;
      const bs = entries.filter((x) => x.key[0] === 0x62).length;
      expect(as).toBe(bs);
    }
    stop = true;
    await writer;
  });

  it('iterates in unsigned byte order, forward and reverse, with 0x00 and 0xff keys', async () => {
    const e = await open(tempDir());
    const keys = [
      b(0xff, 0xff),
      b(0x00),
      b(0x7f),
      b(0x80),
      b(0x00, 0x00),
      b(0xff),
      b(0x00, 0xff),
      b(0x01),
      b(0xff, 0x00),
      b(0x00, 0x00, 0x00),
    ];
    await e.write(keys.map((k, i) => put(k, b(i))));
    const sorted = [...keys].sort(Buffer.compare).map(hex);
    expect((await all(e.iterate({}))).map((x) => hex(x.key))).toEqual(sorted);
    expect((await all(e.iterate({ reverse: true }))).map((x) => hex(x.key))).toEqual([...sorted].reverse());
    // Values come with their keys.
    for (const x of await all(e.iterate({}))) expect(x.value[0]).toBe(keys.findIndex((k) => hex(k) === hex(x.key)));
  });

  it('honours gte (inclusive) and lt (exclusive) bounds in both directions', async () => {
    const e = await open(tempDir());
    const keys = [b(0x00), b(0x00, 0x00), b(0x01), b(0x01, 0x00), b(0x02), b(0xfe), b(0xff), b(0xff, 0xff)];
    await e.write(keys.map((k) => put(k, b(1))));
    const sorted = [...keys].sort(Buffer.compare).map(hex);
    const range = async (gte?: Uint8Array, lt?: Uint8Array, reverse = false) =>
      (await all(e.iterate({ gte, lt, reverse }))).map((x) => hex(x.key));
    const expectRange = (gte?: Uint8Array, lt?: Uint8Array) =>
      sorted.filter((k) => (gte === undefined || k >= hex(gte)) && (lt === undefined || Buffer.compare(Buffer.from(k, 'hex'), lt) < 0));
    const cases: [Uint8Array | undefined, Uint8Array | undefined][] = [
      [b(0x01), b(0x02)],
      [b(0x00, 0x00), b(0xff)],
      [undefined, b(0x01)],
      [b(0xfe), undefined],
      [b(0xff), b(0xff, 0xff)],
      [b(0x01, 0x00), b(0x01, 0x00)],
      [b(0x02), b(0x01)],
    ];
    for (const [gte, lt] of cases) {
      expect(await range(gte, lt)).toEqual(expectRange(gte, lt));
      expect(await range(gte, lt, true)).toEqual(expectRange(gte, lt).reverse());
    }
  });

  it('yields non-empty batches that grow, and reads a snapshot taken when iteration starts', async () => {
    const e = await open(tempDir());
    await fill(e, 5000);
    const sizes: number[] = [];
    let seen = 0;
    for await (const batch of e.iterate({})) {
      if (sizes.length === 0) await e.write([put(s('k999999'), s('late')), del(s('k000100'))]);
      sizes.push(batch.length);
      seen += batch.length;
    }
    expect(seen).toBe(5000); // neither the late put nor the delete is visible to this scan
    expect(sizes[0]).toBeLessThanOrEqual(64);
    expect(Math.max(...sizes)).toBeGreaterThan(64);
  });

  it('takes an expected count as the first batch size, then grows as usual', async () => {
    const e = await open(tempDir());
    await fill(e, 500);
    for (const expected of [1, 5]) {
      const sizes: number[] = [];
      for await (const batch of e.iterate({ expect: expected })) sizes.push(batch.length);
      expect(sizes[0]).toBe(expected);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(500); // a hint, not a cap
      expect(sizes[1]).toBeGreaterThanOrEqual(64);
    }
  });

  it('an early break closes the iterator, and close() then succeeds', async () => {
    const e = await open(tempDir());
    await fill(e, 3000);
    const closes: Promise<unknown>[] = [];
    const orig = ClassicLevel.prototype.iterator;
    vi.spyOn(ClassicLevel.prototype, 'iterator').mockImplementation(function (this: ClassicLevel, ...args: unknown[]) {
      const it = (orig as (...a: unknown[]) => { close(): Promise<void> }).apply(this, args);
      const close = it.close.bind(it);
      it.close = () => {
        const p = close();
        closes.push(p);
        return p;
      };
      return it as never;
    });
    let n = 0;
    for await (const batch of e.iterate({})) {
      n += batch.length;
      break;
    }
    expect(n).toBeGreaterThan(0);
    expect(closes.length).toBe(1);
    await closes[0];
    // An error thrown by the consumer closes it too.
    await expect(
      (async () => {
        for await (const _ of e.iterate({ reverse: true })) throw new Error('consumer failed');
      })(),
    ).rejects.toThrow('consumer failed');
    expect(closes.length).toBe(2);
    await e.close();
  });

  it('clear deletes exactly the range, waits for earlier writes, and is durable', async () => {
    const dir = tempDir();
    const e = await openLevelEngine(dir);
    await fill(e, 100, 'a');
    await fill(e, 100, 'b');
    await fill(e, 100, 'c');
    const pending = e.write([put(s('b999999'), s('written just before clear'))]);
    await e.clear({ gte: s('b'), lt: s('c') });
    await pending;
    expect(e.get(s('b999999'))).toBeUndefined();
    expect((await all(e.iterate({}))).length).toBe(200);
    await e.clear({ gte: s('z'), lt: s('a') }); // empty range: a no-op
    await e.clear({ lt: s('b') }); // from the first key
    await e.close();
    const again = await open(dir);
    const keys = (await all(again.iterate({}))).map((x) => Buffer.from(x.key).toString());
    expect(keys.length).toBe(100);
    expect(keys.every((k) => k.startsWith('c'))).toBe(true);
    await again.clear({});
    expect(await all(again.iterate({}))).toEqual([]);
  });

  it('write([]) is a barrier that resolves after earlier writes are durable', async () => {
    const e = await open(tempDir());
    await e.write([]); // idle: resolves at once
    let done = false;
    const p = e.write([put(s('a'), s('1'))]).then(() => {
      done = true;
    });
    await e.write([]);
    expect(done).toBe(true);
    await p;
  });

  it('persists across reopen', async () => {
    const dir = tempDir();
    const e = await openLevelEngine(dir);
    const rows = await fill(e, 1000);
    await e.write([del(s('k000007'))]);
    rows.delete(hex(s('k000007')));
    await e.close();
    const again = await open(dir);
    const got = await all(again.iterate({}));
    expect(got.length).toBe(rows.size);
    for (const x of got) expect(hex(x.value)).toBe(hex(rows.get(hex(x.key)) as Uint8Array));
  });
});

describe('LevelEngine: group commit', () => {
  it('groups concurrent writes into fewer synced batches; each is visible when it resolves', async () => {
    const e = await open(tempDir());
    const n = 2000;
    const checks: Promise<void>[] = [];
    for (let i = 0; i < n; i++) {
      const key = s(`w${String(i).padStart(5, '0')}`);
      checks.push(
        e.write([put(key, s(String(i)))]).then(() => {
          expect(Buffer.from(e.get(key) as Uint8Array).toString()).toBe(String(i));
        }),
      );
    }
    await Promise.all(checks);
    const st = e.stats();
    expect(st.writes).toBe(n);
    expect(st.ops).toBe(n);
    // Keys are 6 bytes ("w" + 5 digits), values the decimal i.
    let valueBytes = 0;
    for (let i = 0; i < n; i++) valueBytes += String(i).length;
    expect(st.bytes).toBe(6 * n + valueBytes);
    expect(st.batches).toBeLessThan(n / 10);
    expect(st.batches).toBeGreaterThan(0);
    // Each check read its key once from LevelDB.
    expect(st.reads).toBe(n);
  });

  it('keeps writers that loop on their own acknowledgements grouped (closed-loop clients)', async () => {
    const e = await open(tempDir());
    const writers = 50;
    const perWriter = 40;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let i = 0; i < perWriter; i++) await e.write([put(s(`w${w}-${i}`), s('v'))]);
      }),
    );
    const st = e.stats();
    expect(st.writes).toBe(writers * perWriter);
    expect(st.batches).toBeLessThan(st.writes / 10);
  });

  it('applies concurrent writes to one key in call order', async () => {
    const e = await open(tempDir());
    const ps: Promise<void>[] = [];
    for (let i = 0; i < 500; i++) ps.push(e.write([put(s('same'), s(String(i)))]));
    await Promise.all(ps);
    expect(Buffer.from(e.get(s('same')) as Uint8Array).toString()).toBe('499');
  });

  it('seals a group at maxGroupOps but never splits one call', async () => {
    const e = await open(tempDir(), { maxGroupOps: 10 });
    const big = Array.from({ length: 25 }, (_, i) => put(s(`big${i}`), s('v')));
    await Promise.all([e.write([put(s('a'), s('v'))]), e.write(big), e.write([put(s('z'), s('v'))])]);
    expect(e.stats().batches).toBe(3);
    expect((await all(e.iterate({}))).length).toBe(27);
  });

  it('a scan interrupted by close() fails with STORE_CLOSED', async () => {
    const e = await openLevelEngine(tempDir());
    await fill(e, 3000);
    const err = await expectCode(
      (async () => {
        for await (const _ of e.iterate({})) await e.close();
      })(),
      'STORE_CLOSED',
    );
    expect(err.details.dir).toBeDefined();
  });

  it('close() waits for queued writes; later calls throw STORE_CLOSED', async () => {
    const e = await openLevelEngine(tempDir());
    const writes = Array.from({ length: 100 }, (_, i) => e.write([put(s(`k${i}`), s('v'))]));
    const closing = e.close();
    await expectCode(e.write([put(s('late'), s('v'))]), 'STORE_CLOSED');
    await Promise.all(writes);
    await closing;
    await e.close(); // idempotent
    await expectCode(() => e.get(s('k1')), 'STORE_CLOSED');
    await expectCode(e.write([put(s('x'), s('v'))]), 'STORE_CLOSED');
    await expectCode(e.clear({}), 'STORE_CLOSED');
    await expectCode(all(e.iterate({})), 'STORE_CLOSED');
  });
});

describe('LevelEngine: locking', () => {
  it('a second engine on the same directory gets STORE_LOCKED naming the directory', async () => {
    const dir = tempDir();
    const first = await open(dir);
    const err = await expectCode(openLevelEngine(dir), 'STORE_LOCKED');
    expect(err.message).toContain(dir);
    expect(err.details.dir).toBe(dir);
    await first.close();
    await (await open(dir)).close(); // released on close
  });

  it('create: false opens an existing database, and writes nothing where there is none', async () => {
    const dir = tempDir();
    const e = await openLevelEngine(join(dir, 'absent'), { create: false, mmapBallast: false }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(isStoreError(e, 'NOT_A_STORE')).toBe(true);
    expect((e as StoreError).details).toMatchObject({ absent: true }); // nothing there: how one is made is the caller's to say
    expect(readdirSync(dir)).toEqual([]);
    writeFileSync(join(dir, 'notes.txt'), 'x');
    expect(isStoreError(await openLevelEngine(dir, { create: false }).catch((err: unknown) => err), 'NOT_A_STORE')).toBe(true);
    expect(readdirSync(dir)).toEqual(['notes.txt']);
    const made = tempDir();
    const w = await open(made);
    await w.write([{ type: 'put', key: s('k'), value: s('v') }]);
    await w.close();
    const r = await open(made, { create: false });
    expect(Buffer.from((await r.get(s('k'))) as Uint8Array).toString()).toBe('v');
    await r.close();
    // A store that lost its CURRENT is damaged, not absent: `search` and `scan` must not say "no store".
    unlinkSync(join(made, 'CURRENT'));
    const damaged = await openLevelEngine(made, { create: false }).catch((err: unknown) => err);
    expect(isStoreError(damaged, 'DATA_CORRUPTED'), String(damaged)).toBe(true);
  });

  it("create: 'if-empty' creates only where nothing is, and opens a store among other files", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'notes.txt'), 'x');
    const e = await openLevelEngine(dir, { create: 'if-empty', mmapBallast: false }).catch((err: unknown) => err);
    expect(isStoreError(e, 'NOT_A_STORE')).toBe(true);
    expect((e as StoreError).details).toMatchObject({ dir, foreign: ['notes.txt'] });
    expect(readdirSync(dir)).toEqual(['notes.txt']);
    // Missing or empty: created.
    const fresh = join(tempDir(), 'new');
    const a = await open(fresh, { create: 'if-empty' });
    await a.write([{ type: 'put', key: s('k'), value: s('v') }]);
    await a.close();
    // A store with a file beside it opens.
    writeFileSync(join(fresh, 'notes.txt'), 'x');
    const b = await open(fresh, { create: 'if-empty' });
    expect(Buffer.from((await b.get(s('k'))) as Uint8Array).toString()).toBe('v');
    const empty = tempDir();
    await (await open(empty, { create: 'if-empty' })).close();
    expect(readdirSync(empty)).toContain('CURRENT');
  });

  it("'if-empty' is the default: no database among other files, one over a creation that stopped before CURRENT", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'package.json'), '{}');
    const e = await openLevelEngine(dir, { mmapBallast: false }).catch((err: unknown) => err);
    expect(isStoreError(e, 'NOT_A_STORE')).toBe(true);
    expect(readdirSync(dir)).toEqual(['package.json']);
    // What LevelDB leaves when it stops before writing CURRENT: its lock and its log, no data.
    const stopped = tempDir();
    writeFileSync(join(stopped, 'LOCK'), '');
    writeFileSync(join(stopped, 'LOG'), 'started\n');
    const a = await open(stopped);
    await a.write([{ type: 'put', key: s('k'), value: s('v') }]);
    await a.close();
    expect(readdirSync(stopped)).toContain('CURRENT');
    // A MANIFEST too (LevelDB writes it just before CURRENT), and no table or log: nothing to lose.
    const manifestOnly = tempDir();
    await (await open(manifestOnly)).close();
    for (const name of readdirSync(manifestOnly)) if (!/^(LOCK|LOG(\.old)?|MANIFEST-\d+)$/.test(name)) unlinkSync(join(manifestOnly, name));
    expect(readdirSync(manifestOnly).some((n) => n.startsWith('MANIFEST-'))).toBe(true);
    const m = await open(manifestOnly);
    expect(await m.get(s('k'))).toBeUndefined();
    await m.close();
    // The explicit `true` still creates among other files.
    await (await open(dir, { create: true })).close();
    expect(readdirSync(dir)).toContain('CURRENT');
  });

  it('a MANIFEST that lists data, left without CURRENT, tables or logs, is DATA_CORRUPTED: the evidence stays', async () => {
    const dir = tempDir();
    const w = await open(dir);
    await w.write([{ type: 'put', key: s('k'), value: s('v') }]);
    await w.close();
    await (await open(dir)).close(); // the reopen's recovery records the write in the MANIFEST
    for (const name of readdirSync(dir)) if (!/^(LOCK|LOG(\.old)?|MANIFEST-\d+)$/.test(name)) unlinkSync(join(dir, name));
    const before = readdirSync(dir).sort();
    for (const verify of ['full', 'none'] as const) {
      const e = await openLevelEngine(dir, { verify, mmapBallast: false }).catch((err: unknown) => err);
      expect(isStoreError(e, 'DATA_CORRUPTED'), String(e)).toBe(true);
      expect((e as StoreError).message).toMatch(/CURRENT is missing but MANIFEST-\d+ lists \d+ tables and writes up to sequence [1-9]/);
      expect(readdirSync(dir).sort()).toEqual(before);
    }
  });

  it('a path that is a file is NOT_A_STORE, with the file as it was', async () => {
    const file = join(tempDir(), 'notes.txt');
    writeFileSync(file, 'x');
    for (const create of [true, false, 'if-empty'] as const) {
      const e = await openLevelEngine(file, { create, mmapBallast: false }).catch((err: unknown) => err);
      expect(isStoreError(e, 'NOT_A_STORE'), String(e)).toBe(true);
      expect((e as StoreError).message).toBe(`${file} is not a directory; nothing was created`);
    }
    expect(readFileSync(file, 'utf8')).toBe('x');
  });

  it('database files without CURRENT are DATA_CORRUPTED whatever `create` and `verify` say, and stay as they were', async () => {
    const dir = tempDir();
    const w = await open(dir);
    await w.write([{ type: 'put', key: s('k'), value: s('v') }]);
    await w.close();
    unlinkSync(join(dir, 'CURRENT'));
    const before = readdirSync(dir).sort();
    for (const create of [true, 'if-empty'] as const) {
      const e = await openLevelEngine(dir, { create, verify: 'none', mmapBallast: false }).catch((err: unknown) => err);
      expect(isStoreError(e, 'DATA_CORRUPTED'), String(e)).toBe(true);
      expect((e as StoreError).message).toContain('CURRENT is missing');
      expect(readdirSync(dir).sort()).toEqual(before);
    }
  });

  it('another process holding the directory gives STORE_LOCKED', async () => {
    const dir = tempDir();
    await (await openLevelEngine(dir)).close();
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { ClassicLevel } from 'classic-level'; const db = new ClassicLevel(${JSON.stringify(dir)}); await db.open(); console.log('open'); setInterval(() => {}, 1000);`,
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('open') && resolve());
        child.on('exit', (code) => reject(new Error(`child exited ${code}`)));
      });
      const err = await expectCode(openLevelEngine(dir), 'STORE_LOCKED');
      expect(err.message).toContain(dir);
    } finally {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
    await (await open(dir)).close(); // the kernel released the lock with the process
  });
});

describe('LevelEngine: corruption', () => {
  it('verifyLevelDir passes real databases: many tables, compactions, compressed and not', async () => {
    for (const compression of [true, false]) {
      const dir = tempDir();
      const e = await openLevelEngine(dir, { writeBufferSize: 64 * 1024, maxFileSize: 1024 * 1024, compression });
      for (let round = 0; round < 6; round++) {
        const ops: KvOp[] = [];
        for (let i = 0; i < 4000; i++) {
          // half compressible, half random values; overwrites force compactions to merge
          const v = i % 2 === 0 ? Buffer.alloc(120, i & 0xff) : randomBytes(120);
          // Even keys are overwritten every round (compactions merge them); odd keys are new each
          // round, so the live data (~1.4 MB) outgrows one 1 MiB table file whatever compaction did.
          const k = i % 2 === 0 ? `k${String((i * 7919) % 10000).padStart(6, '0')}` : `n${round}-${String(i).padStart(6, '0')}`;
          ops.push(put(s(k), v));
        }
        for (let i = 0; i < ops.length; i += 1000) await e.write(ops.slice(i, i + 1000));
      }
      await e.close();
      const report = await verifyLevelDir(dir);
      expect(report.problems).toEqual([]);
      expect(report.tables).toBeGreaterThanOrEqual(2);
      expect(report.manifest).toMatch(/^MANIFEST-/);
      // And a clean reopen passes the same check.
      await (await openLevelEngine(dir)).close();
    }
  });

  it('verifyLevelDir finds a flipped byte in whichever table holds it, however large the tables read before it', async () => {
    // Tables are read one after another into one reused buffer: each must be checked as itself,
    // not with bytes of a larger table read before it.
    const dir = tempDir();
    const e = await openLevelEngine(dir, { writeBufferSize: 64 * 1024, maxFileSize: 256 * 1024, compression: false });
    for (let round = 0; round < 4; round++) {
      const ops: KvOp[] = [];
      for (let i = 0; i < 1500 * (round + 1); i++)
        ops.push(put(s(`r${round}-${String(i).padStart(6, '0')}`), randomBytes(60 + 40 * round)));
      for (let i = 0; i < ops.length; i += 1000) await e.write(ops.slice(i, i + 1000));
    }
    await e.close();
    const tables = liveTables(dir);
    const present = files(dir, /\.ldb$/);
    expect(tables.every((t) => present.includes(t))).toBe(true);
    expect(new Set(tables.map((t) => statSync(join(dir, t)).size)).size).toBeGreaterThan(1);
    expect((await verifyLevelDir(dir)).problems).toEqual([]);
    for (const table of tables) {
      const path = join(dir, table);
      const before = readFileSync(path);
      flipByte(path, Math.floor(before.length / 3));
      const { problems } = await verifyLevelDir(dir);
      expect(problems.length, table).toBe(1);
      expect(problems[0]).toContain(table);
      writeFileSync(path, before);
    }
  });

  it('computes CRC32C (Castagnoli) correctly', () => {
    expect(crc32c(s('123456789')).toString(16)).toBe('e3069283');
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
  });

  it('a flipped byte in the middle of the log: DATA_CORRUPTED, and the log is left untouched', async () => {
    const dir = tempDir();
    const e = await openLevelEngine(dir);
    await fill(e, 2000);
    await e.close();
    const [log] = files(dir, /\.log$/);
    const path = join(dir, log);
    const size = statSync(path).size;
    flipByte(path, Math.floor(size / 2));
    const before = readFileSync(path);
    const err = await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED');
    expect(err.message).toContain(dir);
    expect(err.message).toContain(log);
    expect(readFileSync(path).equals(before)).toBe(true); // LevelDB never saw it
    await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED'); // and it stays detected
  });

  it('a flipped byte in the middle of a table file: DATA_CORRUPTED at open', async () => {
    const { dir } = await tableDir();
    const [table] = files(dir, /\.ldb$/);
    flipByte(join(dir, table), Math.floor(statSync(join(dir, table)).size / 2));
    const err = await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED');
    expect(err.message).toContain(table);
    expect(err.details.dir).toBe(dir);
  });

  it('a truncated table file: DATA_CORRUPTED', async () => {
    const { dir } = await tableDir();
    const [table] = files(dir, /\.ldb$/);
    truncateSync(join(dir, table), Math.floor(statSync(join(dir, table)).size / 2));
    await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED');
    await expectCode(openLevelEngine(dir, { verify: 'logs' }), 'DATA_CORRUPTED'); // the size check catches it too
  });

  it('a deleted table file, a corrupted MANIFEST, a missing CURRENT: DATA_CORRUPTED', async () => {
    {
      const { dir } = await tableDir();
      unlinkSync(join(dir, files(dir, /\.ldb$/)[0]));
      await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED');
    }
    {
      const { dir } = await tableDir();
      const [manifest] = files(dir, /^MANIFEST-/);
      flipByte(join(dir, manifest), 12);
      await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED');
    }
    {
      const { dir } = await tableDir();
      unlinkSync(join(dir, 'CURRENT')); // LevelDB alone would start an empty database here
      await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED');
    }
  });

  it("a MANIFEST whose last edit reads as preallocated zeros: DATA_CORRUPTED naming the MANIFEST, not only LevelDB's words", async () => {
    // An open writes a new MANIFEST: a snapshot of the files, then one edit with the next file
    // number, log number and last sequence. Zeroed, that edit's header reads as preallocation,
    // which the log reader skips silently; LevelDB then refuses the MANIFEST ("no meta-nextfile").
    const dir = tempDir();
    const e = await openLevelEngine(dir);
    await fill(e, 100);
    await e.close();
    const [manifest] = files(dir, /^MANIFEST-/);
    const path = join(dir, manifest);
    const buf = readFileSync(path);
    let last = 0;
    for (let pos = 0; pos + 7 <= buf.length; pos += 7 + (buf[pos + 4] | (buf[pos + 5] << 8))) last = pos;
    expect(last).toBeGreaterThan(0); // a snapshot record before it
    buf.fill(0, last);
    writeFileSync(path, buf);
    const err = await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED');
    expect(err.message).toContain(manifest);
    expect(err.message).toContain('no meta-nextfile entry');
  });

  it('a deleted current log (acknowledged writes LevelDB would silently forget): DATA_CORRUPTED', async () => {
    const dir = tempDir();
    const e = await openLevelEngine(dir);
    await fill(e, 100);
    await e.close();
    const [log] = files(dir, /\.log$/);
    unlinkSync(join(dir, log));
    const err = await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED');
    expect(err.message).toContain(log);
  });

  it('with verify off, LevelDB itself would return a flipped value (why verification exists)', async () => {
    const { dir, rows } = await tableDir(500);
    const [table] = files(dir, /\.ldb$/);
    const buf = readFileSync(join(dir, table));
    // Random values are incompressible, so LevelDB stores their blocks raw: find one value.
    const [keyHex, value] = [...rows.entries()][250];
    const at = buf.indexOf(Buffer.from(value));
    expect(at).toBeGreaterThan(0);
    buf[at + 50] ^= 0xff;
    writeFileSync(join(dir, table), buf);
    const e = await open(dir, { verify: 'none' });
    const got = e.get(Buffer.from(keyHex, 'hex')) as Uint8Array;
    expect(hex(got)).not.toBe(hex(value)); // silently wrong: LevelDB skips block CRCs on reads
    await e.close();
    await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED'); // the default verification catches it
  });

  it('with verify off, records LevelDB drops during recovery are still reported, and stay reported', async () => {
    const dir = tempDir();
    const e = await openLevelEngine(dir);
    await fill(e, 2000);
    await e.close();
    const [log] = files(dir, /\.log$/);
    flipByte(join(dir, log), Math.floor(statSync(join(dir, log)).size / 2));
    const err = await expectCode(openLevelEngine(dir, { verify: 'none' }), 'DATA_CORRUPTED');
    expect(err.message).toMatch(/dropp/);
    // LevelDB has deleted the bad log by now; the marker keeps the finding.
    expect(readdirSync(dir)).toContain(CORRUPTION_MARKER);
    await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED');
    unlinkSync(join(dir, CORRUPTION_MARKER)); // the operator accepts the loss
    await (await openLevelEngine(dir)).close();
  });

  it('NOT detectable: a log cut short looks like a crash mid-append; what remains is a prefix, never wrong data', async () => {
    const dir = tempDir();
    const e = await openLevelEngine(dir);
    const n = 300;
    for (let i = 0; i < n; i++) await e.write([put(s(`k${String(i).padStart(4, '0')}`), s(`v${i}`))]);
    await e.close();
    const [log] = files(dir, /\.log$/);
    const size = statSync(join(dir, log)).size;
    truncateSync(join(dir, log), Math.floor(size * 0.6) + 3); // mid-record
    const again = await open(dir);
    const got = await all(again.iterate({}));
    expect(got.length).toBeGreaterThan(0);
    expect(got.length).toBeLessThan(n);
    got.forEach((x, i) => {
      expect(Buffer.from(x.key).toString()).toBe(`k${String(i).padStart(4, '0')}`);
      expect(Buffer.from(x.value).toString()).toBe(`v${i}`);
    });
  });

  it('a flipped bit in a record length of the last block: DATA_CORRUPTED, not taken for a torn append', async () => {
    // LevelDB reads a length running past the end of the log as a crash mid-append and drops that
    // record and every acknowledged one after it. Records here: a, b, c — each a write, all in one block.
    for (const victim of [0, 1, 2]) {
      const dir = tempDir();
      const e = await openLevelEngine(dir);
      for (const k of ['a', 'b', 'c']) await e.write([put(s(k), randomBytes(300))]);
      await e.close();
      const [log] = files(dir, /\.log$/);
      const path = join(dir, log);
      const buf = readFileSync(path);
      expect(buf.length).toBeLessThan(32768);
      let pos = 0;
      for (let i = 0; i < victim; i++) pos += 7 + (buf[pos + 4] | (buf[pos + 5] << 8));
      buf[pos + 5] ^= 0x40; // +16 KiB: past the end of the file
      writeFileSync(path, buf);
      const err = await expectCode(openLevelEngine(dir), 'DATA_CORRUPTED');
      expect(err.message).toContain('a damaged length, not a torn append');
      expect(readFileSync(path).equals(buf)).toBe(true); // LevelDB never saw it
    }
  });

  it('accepts a torn final record (what kill -9 during an append leaves)', async () => {
    const dir = tempDir();
    const e = await openLevelEngine(dir);
    await e.write([put(s('a'), s('1'))]);
    await e.write([put(s('b'), randomBytes(1000))]);
    await e.close();
    const [log] = files(dir, /\.log$/);
    truncateSync(join(dir, log), statSync(join(dir, log)).size - 10);
    const again = await open(dir);
    expect(again.get(s('a'))).toBeDefined();
    expect(again.get(s('b'))).toBeUndefined();
  });
});

describe('deferred writes', () => {
  it('resolve before the group is written, and get, iterate and a reopen all see them', async () => {
    const dir = tempDir();
    const e = await open(dir);
    await e.write([put(s('a'), s('old')), put(s('gone'), s('x'))]);
    const before = e.stats().batches;
    await e.write([put(s('a'), s('new')), put(s('b'), s('1')), del(s('gone'))], { deferred: true });
    // Nothing was written to LevelDB yet: these answers come from the overlay, not LevelDB reads.
    expect(e.stats().batches).toBe(before);
    const reads = e.stats().reads;
    expect(hex(e.get(s('a')) as Uint8Array)).toBe(hex(s('new')));
    expect(hex(e.get(s('b')) as Uint8Array)).toBe(hex(s('1')));
    expect(e.get(s('gone'))).toBeUndefined();
    expect(e.stats().reads).toBe(reads);
    expect(e.get(s('never'))).toBeUndefined();
    expect(e.stats().reads).toBe(reads + 1);
    const scanned = await all(e.iterate({}));
    expect(scanned.map((x) => Buffer.from(x.key).toString())).toEqual(['a', 'b']);
    expect(scanned.map((x) => Buffer.from(x.value).toString())).toEqual(['new', '1']);
    await e.close();
    const again = await open(dir);
    expect(Buffer.from(again.get(s('a')) as Uint8Array).toString()).toBe('new');
    expect(again.get(s('gone'))).toBeUndefined();
  });

  it('a durable write issued after deferred ones is acknowledged only once they are durable too', async () => {
    const dir = tempDir();
    const e = await open(dir);
    const deferred = Array.from({ length: 50 }, (_, i) => e.write([put(s(`d${i}`), s(`v${i}`))], { deferred: true }));
    await Promise.all(deferred);
    const batches = e.stats().batches;
    await e.write([put(s('durable'), s('1'))]);
    // The durable write's group (or an earlier one) carried the deferred ops to disk.
    expect(e.stats().batches).toBeGreaterThan(batches);
    for (let i = 0; i < 50; i++) expect(Buffer.from(e.get(s(`d${i}`)) as Uint8Array).toString()).toBe(`v${i}`);
  });

  it('a later durable write to the same key wins once acknowledged; an unacknowledged one stays invisible', async () => {
    const e = await open(tempDir());
    await e.write([put(s('k'), s('deferred'))], { deferred: true });
    const durable = e.write([put(s('k'), s('durable'))]);
    // Until the durable write resolves, readers see the acknowledged deferred value or the
    // durable one (LevelDB applies a group right after its fsync), never anything else.
    expect(['deferred', 'durable']).toContain(Buffer.from(e.get(s('k')) as Uint8Array).toString());
    await durable;
    expect(Buffer.from(e.get(s('k')) as Uint8Array).toString()).toBe('durable');
  });
});

describe('seals (bytes a clean close leaves for the next open)', () => {
  const payload = (n: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (i * 7) & 0xff);
  /** Opens the directory as LevelDB itself, as a build or tool that knows nothing of seals. */
  async function raw(dir: string, body: (db: ClassicLevel<string, string>) => Promise<void>): Promise<void> {
    const db = new ClassicLevel<string, string>(dir);
    await db.open();
    try {
      await body(db);
    } finally {
      await db.close();
    }
  }

  it('come back once, to the next open only, even after writes that moved LevelDB to new logs and tables', async () => {
    const dir = tempDir();
    const e = await open(dir, { writeBufferSize: 64 * 1024 });
    for (let i = 0; i < 40; i++) await e.write(Array.from({ length: 50 }, (_, j) => put(s(`k${i}-${j}`), randomBytes(200))));
    await e.write([put(s('last'), s('deferred'))], { deferred: true }); // still in flight when close starts
    await e.close(payload(5000));
    expect(files(dir, /^\d+\.ldb$/).length).toBeGreaterThan(0); // the flushes happened
    const again = await open(dir);
    expect(hex(again.takeSealed() ?? b())).toBe(hex(payload(5000)));
    expect(again.takeSealed()).toBeNull();
    expect(Buffer.from(again.get(s('last')) as Uint8Array).toString()).toBe('deferred');
    await again.close(); // no seal given: none left
    const third = await open(dir);
    expect(third.takeSealed()).toBeNull();
  });

  it('are refused once anything wrote after them, and kept when something only opened the database', async () => {
    const dir = tempDir();
    const e = await open(dir);
    await e.write([put(s('a'), s('1'))]);
    await e.close(payload(10));
    const sealed = readFileSync(join(dir, 'PERCOLATOR-SEAL'));

    await raw(dir, async () => undefined); // opened and closed, nothing written
    const kept = await open(dir);
    expect(hex(kept.takeSealed() ?? b())).toBe(hex(payload(10)));
    await kept.close(payload(11));

    await raw(dir, (db) => db.put('b', '2')); // one write by a build that knows no seals
    const refused = await open(dir);
    expect(refused.takeSealed()).toBeNull();
    await refused.close();

    // A seal file left behind by a crash (the engine closed without sealing) is refused too.
    const crashed = await open(dir);
    await crashed.write([put(s('c'), s('3'))]);
    await crashed.close();
    writeFileSync(join(dir, 'PERCOLATOR-SEAL'), sealed);
    const afterCrash = await open(dir);
    expect(afterCrash.takeSealed()).toBeNull();
    await afterCrash.close(payload(12));

    // A damaged seal file is refused, never misread.
    const good = readFileSync(join(dir, 'PERCOLATOR-SEAL'));
    const bad = Buffer.from(good);
    bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 1;
    writeFileSync(join(dir, 'PERCOLATOR-SEAL'), bad);
    const damaged = await open(dir);
    expect(damaged.takeSealed()).toBeNull();
    expect(Buffer.from(damaged.get(s('c')) as Uint8Array).toString()).toBe('3');
  });
});
