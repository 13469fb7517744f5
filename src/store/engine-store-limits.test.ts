import { expect, it } from 'vitest';
import { openStore } from './open-store.js';
import { DEFAULT_LIMITS } from './store.js';

it('an append that would make a value over the limit is VALUE_TOO_LARGE, and writes nothing', async () => {
  const s = await openStore('memory:', { limits: { maxValueBytes: 16 } });
  try {
    await s.createTable('t', { families: { f: {} } });
    const key = Buffer.from('r');
    const append = (v: string) =>
      s.readModifyWriteRow('t', key, [{ familyName: 'f', columnQualifier: Buffer.from('q'), appendValue: Buffer.from(v) }]);
    await append('0123456789');
    await expect(append('0123456789')).rejects.toMatchObject({ code: 'VALUE_TOO_LARGE', details: { size: 20, limit: 16 } });
    const row = await s.readRow('t', key);
    expect(Buffer.from(row?.cells[0]?.value ?? []).toString()).toBe('0123456789');
    await append('012345'); // up to the limit is fine
    expect((await s.readRow('t', key))?.cells[0]?.value.byteLength).toBe(16);
  } finally {
    await s.close();
  }
});

it.each(['memory:', 'bigtable://127.0.0.1:1'])(
  '%s exposes the limits it enforces: the configured ones over the defaults (Cloud Bigtable’s)',
  async (url) => {
    const s = await openStore(url, { limits: { maxMutationsPerRow: 7 } });
    try {
      expect(s.limits).toEqual({ ...DEFAULT_LIMITS, maxMutationsPerRow: 7 });
      expect(Object.isFrozen(s.limits)).toBe(true);
      // The defaults are Cloud Bigtable's limits.
      expect(DEFAULT_LIMITS).toEqual({
        maxRowKeyBytes: 4096,
        maxQualifierBytes: 16 * 1024,
        maxValueBytes: 10 * 1024 * 1024,
        maxMutationsPerRow: 100_000,
      });
    } finally {
      await s.close();
    }
  },
);

it('refuses a row mutation over the limit it exposes, and takes one at it', async () => {
  const s = await openStore('memory:', { limits: { maxMutationsPerRow: 3 } });
  try {
    await s.createTable('t', { families: { f: {} } });
    const set = (i: number) => ({
      setCell: { familyName: 'f', columnQualifier: Buffer.from(`q${i}`), timestampMicros: 1, value: Buffer.from('v') },
    });
    const key = Buffer.from('r');
    const n = s.limits.maxMutationsPerRow;
    await expect(
      s.mutateRow(
        't',
        key,
        Array.from({ length: n + 1 }, (_, i) => set(i)),
      ),
    ).rejects.toMatchObject({ code: 'TOO_MANY_MUTATIONS' });
    await s.mutateRow(
      't',
      key,
      Array.from({ length: n }, (_, i) => set(i)),
    );
    expect((await s.readRow('t', key))?.cells.length).toBe(n);
  } finally {
    await s.close();
  }
});
