/**
 * Whether classic-level loads the LevelDB that scripts/leveldb-fix.mjs built with the fix of
 * LevelDB issue 320 (google/leveldb#320; that script says what the bug does to this store). The
 * prebuilt binaries classic-level 3.0.0 ships lack it: an install that skipped the build
 * (`npm ci --ignore-scripts`, a machine without a C++ compiler) runs on them, and reads of a row
 * may then return an image from before its last write. `openLevelEngine` warns once per process.
 *
 * Checked: the binary classic-level loads is the one built from its sources (not a prebuild), the
 * marker the script wrote names the fix, and the sources still hash as they did when it built.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export interface LevelDbFixStatus {
  readonly fixed: boolean;
  /** The native binary classic-level loads (null if it cannot be found). */
  readonly binary: string | null;
  /** Why it is not fixed. */
  readonly reason?: string;
}

let cached: LevelDbFixStatus | null = null;

export function levelDbFixStatus(): LevelDbFixStatus {
  cached ??= check();
  return cached;
}

function check(): LevelDbFixStatus {
  const require = createRequire(import.meta.url);
  let dir: string;
  let binary: string | null;
  try {
    dir = dirname(require.resolve('classic-level/package.json'));
    // classic-level's own loader, as classic-level finds it.
    const gypBuild = createRequire(join(dir, 'package.json'))('node-gyp-build') as { path(dir: string): string };
    binary = gypBuild.path(dir);
  } catch (e) {
    return { fixed: false, binary: null, reason: `classic-level's binary cannot be found: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (binary !== join(dir, 'build', 'Release', 'classic_level.node')) {
    return { fixed: false, binary, reason: 'classic-level loads a prebuilt binary, not one built with the fix' };
  }
  const marker = join(dir, 'build', 'percolator-leveldb-fix.json');
  const source = join(dir, 'deps', 'leveldb', 'leveldb-1.20', 'db', 'version_set.cc');
  if (!existsSync(marker) || !existsSync(source))
    return { fixed: false, binary, reason: 'the build was not made by scripts/leveldb-fix.mjs' };
  const built = (JSON.parse(readFileSync(marker, 'utf8')) as { sourceSha256?: string }).sourceSha256;
  const now = createHash('sha256').update(readFileSync(source)).digest('hex');
  if (built !== now) return { fixed: false, binary, reason: "classic-level's sources changed since the fix was built" };
  return { fixed: true, binary };
}

let warned = false;

/** Emits a process warning (once) when the fix is not in the LevelDB this process loads. */
export function warnIfLevelDbUnfixed(): void {
  if (warned) return;
  const s = levelDbFixStatus();
  if (s.fixed) return;
  warned = true;
  process.emitWarning(
    `LevelDB runs without the fix of its issue 320 (${s.reason ?? 'unknown'}): a read of a row may return it as it was before its last write. Run \`node scripts/leveldb-fix.mjs\` in the percolator checkout (needs a C++ compiler, make and python3).`,
    { code: 'PERCOLATOR_LEVELDB_UNFIXED' },
  );
}
