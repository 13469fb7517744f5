import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isStoreError, type StoreError } from '../errors.js';
import { type LevelEngine, openLevelEngine } from './level-engine.js';

const dirs: string[] = [];
const engines: LevelEngine[] = [];

async function opened(): Promise<{ dir: string; engine: LevelEngine }> {
  const parent = mkdtempSync(join(tmpdir(), 'dir-identity-'));
  dirs.push(parent);
  const dir = join(parent, 'store');
  const engine = await openLevelEngine(dir, { mmapBallast: false });
  engines.push(engine);
  return { dir, engine };
}

afterEach(async () => {
  for (const e of engines.splice(0)) await e.close().catch(() => undefined);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const put = (key: string, value: string) => ({ type: 'put' as const, key: Buffer.from(key), value: Buffer.from(value) });

async function refusal(p: Promise<unknown>): Promise<StoreError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  if (!isStoreError(e)) throw new Error(`expected a StoreError, got ${String(e)}`);
  return e;
}

describe('a store whose directory goes away under it', () => {
  it('refuses the first write after `rm -rf` instead of acknowledging it into files no path reaches, and every write after', async () => {
    const { dir, engine } = await opened();
    await engine.write([put('a', '1')]);
    rmSync(dir, { recursive: true, force: true });

    const e = await refusal(engine.write([put('b', '2')]));
    expect(e.code).toBe('IO_ERROR');
    expect(e.details).toMatchObject({ dir, removed: true });
    expect(e.message).toMatch(/is gone: the directory was removed or moved/);
    expect(e.message).toMatch(/stop the process \(what was in the directory went with it/);
    expect(engine.writeFailure()?.cause).toBe(e);
    // Refused before anything reaches LevelDB now, for good; reads of what is in memory go on.
    expect((await refusal(engine.write([put('c', '3')]))).details).toMatchObject({ removed: true, refused: true, resumable: false });
    expect(Buffer.from(engine.get(Buffer.from('a')) ?? []).toString()).toBe('1');
  });

  it('says so to a health check before any write: writeFailure() looks', async () => {
    const { dir, engine } = await opened();
    expect(engine.writeFailure()).toBeNull();
    renameSync(dir, `${dir}.moved`);
    const e = engine.writeFailure();
    expect(e?.code).toBe('IO_ERROR');
    expect(e?.details.removed).toBe(true);
    expect((await refusal(engine.write([put('a', '1')]))).details.removed).toBe(true);
  });

  it('a directory replaced by another at the same path is not the one opened, even with a LOCK of its own', async () => {
    const { dir, engine } = await opened();
    renameSync(dir, `${dir}.old`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'LOCK'), '');
    const e = await refusal(engine.write([put('a', '1')]));
    expect(e.message).toMatch(/is another file: the directory was replaced/);
  });

  it('a close leaves no seal in a directory that replaced the store, with no write to find out first', async () => {
    const { dir, engine } = await opened();
    await engine.write([put('a', '1')]);
    // Another store takes the path. A seal is trusted when its sequence is the store's newest:
    // written there, this store's seal (its key filter, in EngineStore) would be taken for the
    // other store's at its next open.
    const other = await openLevelEngine(`${dir}.other`, { mmapBallast: false });
    await other.write([put('b', '2')]);
    await other.close();
    renameSync(dir, `${dir}.old`);
    renameSync(`${dir}.other`, dir);
    await engine.close(Buffer.from('seal'));
    expect(readdirSync(dir)).not.toContain('PERCOLATOR-SEAL');
    const again = await openLevelEngine(dir, { mmapBallast: false });
    engines.push(again);
    expect(again.takeSealed()).toBeNull();
  });

  it('a directory left in place keeps taking writes, across many groups', async () => {
    const { dir, engine } = await opened();
    for (let i = 0; i < 20; i++) await Promise.all([engine.write([put(`k${i}`, 'x')]), engine.write([put(`j${i}`, 'y')])]);
    expect(engine.writeFailure()).toBeNull();
    await engine.close();
    const again = await openLevelEngine(dir, { mmapBallast: false });
    engines.push(again);
    expect(Buffer.from(again.get(Buffer.from('k19')) ?? []).toString()).toBe('x');
  });
});
