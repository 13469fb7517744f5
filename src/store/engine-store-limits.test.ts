import { expect, it } from 'vitest';
import { openStore } from './open-store.js';

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
