/** Durable marks: round trips, corruption is reported (never read as 0), locking, the Store-backed mark. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../store/open-store.js';
import { decodeMark, encodeMark, FileMarkStore, StoreMarkStore } from './mark-store.js';
import { Oracle } from './oracle.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'oracle-mark-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('mark record', () => {
  it('round-trips and rejects anything not exactly valid', () => {
    for (const m of [1, 1_700_000_000_000_000, Number.MAX_SAFE_INTEGER]) expect(decodeMark(encodeMark(m), 'x')).toBe(m);
    const good = encodeMark(123456789);
    const bad = [
      '',
      'garbage\n',
      good.slice(0, -1), // no newline: torn write
      good.slice(0, 20),
      good.replace('123456789', '123456788'), // a flipped digit fails the checksum
      `${good}${good}`,
      good.replace('v1', 'v2'),
      encodeMark(1).replace(/ [0-9a-f]{8}\n$/, ' 00000000\n'),
    ];
    for (const text of bad) {
      expect(() => decodeMark(text, 'x'), JSON.stringify(text)).toThrow(expect.objectContaining({ code: 'ORACLE_MARK_CORRUPTED' }));
    }
  });
});

describe('FileMarkStore', () => {
  it('starts at 0, persists marks across instances, refuses to go down', async () => {
    const file = path.join(dir, 'sub', 'oracle.mark');
    const a = new FileMarkStore(file);
    expect(await a.load()).toBe(0);
    await a.save(1000);
    await a.save(5000);
    await expect(a.save(4000)).rejects.toMatchObject({ code: 'ORACLE_MARK_IO', details: { upper: 4000, previous: 5000 } });
    expect(readFileSync(file, 'latin1')).toBe(encodeMark(5000));
    await a.close();
    const b = new FileMarkStore(file);
    expect(await b.load()).toBe(5000);
    await b.close();
  });

  it('reports a corrupted mark file (and the oracle refuses to start on it)', async () => {
    const file = path.join(dir, 'oracle.mark');
    writeFileSync(file, encodeMark(987654321).replace('987654321', '987654320'));
    const store = new FileMarkStore(file);
    const err = await store.load().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ORACLE_MARK_CORRUPTED', details: { where: file } });
    await expect(Oracle.open({ markStore: store })).rejects.toMatchObject({ code: 'ORACLE_MARK_CORRUPTED' });
    writeFileSync(file, '');
    await expect(new FileMarkStore(file, { lock: false }).load()).rejects.toMatchObject({ code: 'ORACLE_MARK_CORRUPTED' });
    await store.close();
  });

  it('two live holders of one mark are refused; a dead holder (kill -9) is reclaimed', async () => {
    const file = path.join(dir, 'oracle.mark');
    const a = new FileMarkStore(file);
    await a.load();
    await expect(new FileMarkStore(file).load()).rejects.toMatchObject({ code: 'ORACLE_MARK_LOCKED', details: { pid: process.pid } });
    await a.close();
    const b = new FileMarkStore(file);
    await b.load();
    await b.close();
    // A lock left by a process that no longer exists.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(`${file}.lock`, `${dead.stdout} deadbeef\n`);
    const c = new FileMarkStore(file);
    expect(await c.load()).toBe(0);
    await c.close();
  });
});

describe('StoreMarkStore', () => {
  it('keeps the mark in a table of the store (memory: and file:)', async () => {
    for (const url of ['memory:', `file:${path.join(dir, 'data')}`]) {
      let store = await openStore(url);
      const a = new StoreMarkStore(store);
      expect(await a.load()).toBe(0);
      await a.save(42);
      await a.save(4242);
      const oracle = await Oracle.open({ markStore: new StoreMarkStore(store, { row: 'other' }), clock: () => 0 });
      expect(await oracle.getTimestamp()).toBe(1);
      await oracle.close();
      if (url.startsWith('file:')) {
        await store.close();
        store = await openStore(url);
      }
      const b = new StoreMarkStore(store);
      expect(await b.load()).toBe(4242);
      const o2 = await Oracle.open({ markStore: b, clock: () => 0 });
      expect(await o2.getTimestamp()).toBe(4243);
      await o2.close();
      // Corruption of the cell is reported.
      await store.mutateRow('_percolator_oracle', new TextEncoder().encode('mark'), [
        {
          setCell: {
            familyName: 'm',
            columnQualifier: new TextEncoder().encode('upper'),
            timestampMicros: 0,
            value: new Uint8Array([1, 2, 3]),
          },
        },
      ]);
      await expect(new StoreMarkStore(store).load()).rejects.toMatchObject({ code: 'ORACLE_MARK_CORRUPTED' });
      await store.close();
    }
  });

  it("an oracle that opens the mark later takes it over: the earlier one's saves are refused (ORACLE_MARK_LOCKED), and the mark never goes down", async () => {
    const store = await openStore('memory:');
    const a = new StoreMarkStore(store);
    expect(await a.load()).toBe(0);
    await a.save(10);
    const b = new StoreMarkStore(store);
    expect(await b.load()).toBe(10);
    await expect(a.save(20)).rejects.toMatchObject({ code: 'ORACLE_MARK_LOCKED', details: { mark: 10, refused: 20 } });
    await b.save(15); // below what a tried: unfenced, a's 20 would have been overwritten by it
    expect(await new StoreMarkStore(store).load()).toBe(15);
    await store.close();
  });

  it('two oracles over one store mark never hand out the same timestamp: the earlier stops at what it reserved', async () => {
    const store = await openStore('memory:');
    const clock = () => 0; // timestamps follow the reservations alone
    const first = await Oracle.open({ markStore: new StoreMarkStore(store), clock, reserveMicros: 8 });
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) seen.push(await first.getTimestamp());
    const second = await Oracle.open({ markStore: new StoreMarkStore(store), clock, reserveMicros: 8 });
    let refused: unknown = null;
    for (let i = 0; i < 40 && refused === null; i++) {
      seen.push(await second.getTimestamp());
      try {
        seen.push(await first.getTimestamp());
      } catch (e) {
        refused = e;
      }
    }
    expect(refused).toMatchObject({ code: 'ORACLE_MARK_LOCKED' });
    expect(new Set(seen).size).toBe(seen.length);
    await first.close();
    await second.close();
    await store.close();
  });
});
