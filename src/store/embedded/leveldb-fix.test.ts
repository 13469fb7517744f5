import { expect, it } from 'vitest';
import { levelDbFixStatus } from './leveldb-fix.js';

// npm ci builds it (scripts/prepare.mjs → leveldb-fix.mjs). Without it a read of a row can return
// the row as it was before its last write (LevelDB issue 320), and the next write of the row
// loses what that image lacks: a failure here means the install did not build the fix.
it('the LevelDB the store loads is built with the fix of LevelDB issue 320', () => {
  const s = levelDbFixStatus();
  expect(s.reason).toBeUndefined();
  expect(s.fixed).toBe(true);
  expect(s.binary).toMatch(/classic-level\/build\/Release\/classic_level\.node$/);
});
