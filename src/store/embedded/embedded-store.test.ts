/**
 * The embedded `file:DIR` backend against the shared Store conformance suite. Each `open` gets a
 * fresh temporary directory; `reopen` closes the store and opens the same directory again with
 * the same options, so the suite's persistence tests run. Below it, what only this backend does:
 * tablet splits placed by LevelDB's size estimates (tablet-split-bisect.ts).
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../util/seeded-random.js';
import { EngineStore } from '../engine-store.js';
import { openStore } from '../open-store.js';
import { type Store, type StoreOptions, collectRows } from '../store.js';
import { describeStoreConformance } from '../store-conformance.js';

const dirs: string[] = [];
const opened = new WeakMap<Store, { dir: string; options: StoreOptions | undefined }>();

async function openIn(dir: string, options: StoreOptions | undefined): Promise<Store> {
  const store = await openStore(`file:${dir}`, options);
  opened.set(store, { dir, options });
  return store;
}

describeStoreConformance('file:DIR (embedded)', {
  async open(options) {
    const dir = await mkdtemp(join(tmpdir(), 'percolator-conformance-'));
    dirs.push(dir);
    return openIn(dir, options);
  },
  async reopen(previous) {
    const info = opened.get(previous);
    if (info === undefined) throw new Error('reopen: store was not opened by this factory');
    await previous.close();
    return openIn(info.dir, info.options);
  },
});

describe('file:DIR tablet splits', () => {
  it('place the boundary by the engine size estimates once rows are in table files, near half the real bytes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'percolator-split-'));
    dirs.push(dir);
    const splitBytes = 256 * 1024;
    // A 64 KiB memtable: most of every tablet is in table files, where the estimates see it.
    const store = await openStore(`file:${dir}`, {
      tabletSplitBytes: splitBytes,
      level: { writeBufferSize: 64 * 1024, mmapBallast: false },
    });
    try {
      if (!(store instanceof EngineStore)) throw new Error('file: should open an EngineStore');
      await store.createTable('t', { families: { f: {} } });
      const rnd = mulberry32(9);
      const bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(rnd() * 256));
      // ~2 MiB of incompressible values under random keys sharing a long prefix.
      for (let batch = 0; batch < 70; batch++) {
        const entries = Array.from({ length: 100 }, () => ({
          key: Buffer.from(`https://www.example.com/${Buffer.from(bytes(8)).toString('hex')}`),
          mutations: [{ setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: bytes(300) } }],
        }));
        expect((await store.mutateRows('t', entries)).filter((r) => r.error !== undefined)).toEqual([]);
      }
      // Splits run in the background: wait until no tablet is charged more than the threshold.
      const charged = async () => {
        const samples = await store.sampleRowKeys('t');
        return samples.map((s, i) => s.offsetBytes - (i === 0 ? 0 : (samples[i - 1] as { offsetBytes: number }).offsetBytes));
      };
      for (const deadline = Date.now() + 20_000; (await charged()).some((b) => b > splitBytes) && Date.now() < deadline;) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect((await charged()).every((b) => b <= splitBytes)).toBe(true);
      expect(store.splits.measured).toBe(0);
      expect(store.splits.estimated).toBeGreaterThanOrEqual(4);
      // Every tablet's real bytes: no sliver (a split far from half leaves one).
      const samples = await store.sampleRowKeys('t');
      let from: Uint8Array = new Uint8Array(0);
      for (const s of samples) {
        const range = s.key.length === 0 ? { startKeyClosed: from } : { startKeyClosed: from, endKeyOpen: s.key };
        const rows = await collectRows(store.readRows('t', { rows: { rowRanges: [range] } }));
        const real = rows.reduce((n, r) => n + r.key.length + r.cells.reduce((m, c) => m + c.value.length, 0), 0);
        expect(real).toBeGreaterThan(splitBytes / 4);
        from = s.key;
      }
    } finally {
      await store.close();
    }
  });
});

// Runs after the suite's own afterAll, which closes every store it opened.
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('file:DIR opened only to read', () => {
  it('writes nothing: the close logs no catalog, so no command that reads leaves a table behind', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'percolator-readonly-'));
    dirs.push(dir);
    const logBytes = async (): Promise<number> => {
      let n = 0;
      for (const name of await readdir(dir)) if (name.endsWith('.log')) n += (await stat(join(dir, name))).size;
      return n;
    };
    let store = await openIn(dir, undefined);
    await store.createTable('t', { families: { f: {} } });
    await store.mutateRow('t', Buffer.from('r'), [
      { setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.from('v') } },
    ]);
    await store.close();
    // The first reopen flushes that session's log into a table; from then on, reads write nothing.
    await (await openIn(dir, undefined)).close();
    for (let i = 0; i < 3; i++) {
      store = await openIn(dir, undefined);
      expect((await collectRows(store.readRows('t'))).length).toBe(1);
      await store.close();
      expect(await logBytes(), `open ${i}`).toBe(0);
    }
    // A write still reaches the catalog: a new table is there after a reopen.
    store = await openIn(dir, undefined);
    await store.createTable('u', { families: { f: {} } });
    await store.close();
    store = await openIn(dir, undefined);
    expect((await store.listTables()).sort()).toEqual(['t', 'u']);
    await store.close();
  });
});

describe('file:DIR gives deleted data back to the disk', () => {
  const FAMILY_BYTES = 4 * 1024 * 1024;

  async function dirBytes(dir: string): Promise<number> {
    let n = 0;
    for (const name of await readdir(dir)) n += (await stat(join(dir, name))).size;
    return n;
  }

  /**
   * Runs `body` on a store with ~4 MiB of incompressible cells in `t` (families d and e) and one
   * row in `keep`, all in table files; then checks `keep` is intact and closes the store.
   */
  async function withFilledStore(body: (dir: string, store: Store) => Promise<void>): Promise<void> {
    const dir = await mkdtemp(join(tmpdir(), 'percolator-reclaim-'));
    dirs.push(dir);
    let store = await openIn(dir, undefined);
    await store.createTable('t', { families: { d: {}, e: {} } });
    await store.createTable('keep', { families: { f: {} } });
    await store.mutateRow('keep', Buffer.from('k'), [
      { setCell: { familyName: 'f', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: Buffer.from('kept') } },
    ]);
    const rnd = mulberry32(21);
    const bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(rnd() * 256));
    for (let batch = 0; batch < 40; batch++) {
      const entries = Array.from({ length: 100 }, (_, i) => ({
        key: Buffer.from(`${batch % 2 === 0 ? 'a' : 'b'}/${batch}/${i}`),
        mutations: [
          { setCell: { familyName: 'd', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: bytes(FAMILY_BYTES / 4000) } },
          { setCell: { familyName: 'e', columnQualifier: Buffer.from('q'), timestampMicros: 1000, value: bytes(8) } },
        ],
      }));
      expect((await store.mutateRows('t', entries)).filter((r) => r.error !== undefined)).toEqual([]);
    }
    await store.close();
    store = await openIn(dir, undefined);
    try {
      expect(await dirBytes(dir)).toBeGreaterThan(FAMILY_BYTES);
      await body(dir, store);
      const rows = await collectRows(store.readRows('keep'));
      expect(rows.map((r) => Buffer.from(r.cells[0]?.value ?? []).toString())).toEqual(['kept']);
    } finally {
      await store.close();
    }
  }

  it('deleteTable: the table files no longer hold the rows once it resolves', async () => {
    await withFilledStore(async (dir, store) => {
      await store.deleteTable('t');
      expect(await dirBytes(dir)).toBeLessThan(FAMILY_BYTES / 8);
    });
  });

  it('dropRowRange: a prefix dropped gives its half back, the other half stays readable', async () => {
    await withFilledStore(async (dir, store) => {
      await store.dropRowRange('t', { rowKeyPrefix: Buffer.from('a/') });
      const after = await dirBytes(dir);
      expect(after).toBeLessThan((FAMILY_BYTES * 5) / 8);
      expect(after).toBeGreaterThan(FAMILY_BYTES / 2 - FAMILY_BYTES / 8);
      const rows = await collectRows(store.readRows('t'));
      expect(rows.length).toBe(2000);
      expect(rows.every((r) => Buffer.from(r.key).toString().startsWith('b/'))).toBe(true);
    });
  });

  it('dropping a column family gives its cells back; the other family stays', async () => {
    await withFilledStore(async (dir, store) => {
      await store.modifyColumnFamilies('t', [{ id: 'd', drop: true }]);
      expect(await dirBytes(dir)).toBeLessThan(FAMILY_BYTES / 4);
      const rows = await collectRows(store.readRows('t'));
      expect(rows.length).toBe(4000);
      expect(rows.every((r) => r.cells.length === 1 && r.cells[0]?.family === 'e')).toBe(true);
    });
  });
});
