#!/usr/bin/env node
/**
 * Builds classic-level's LevelDB with the fix for LevelDB issue 320 (google/leveldb#320, fixed
 * upstream in 1.21 by pull request 339), which classic-level 3.0.0 still bundles without (its
 * LevelDB is 1.20). Run by `prepare.mjs` after `npm ci`; idempotent; `--check` only reports.
 *
 * The bug: while a snapshot is open, compactions keep several versions of a key, and a level's
 * files can split them — file b1 ends with the newer, file b2 starts with the older. A compaction
 * that takes b1 down a level and leaves b2 makes `Get` return the older version (it searches level
 * by level), while iterators, which merge every level, see the newer. classic-level backs every
 * iterator with a snapshot, and the store scans while it rewrites rows, so it met this: reads of a
 * row returned an image from before its last write, and the next write of the row, made from that
 * image, lost what it lacked (docs/durability.md › *LevelDB's issue 320*). The fix
 * (AddBoundaryInputs, written here after upstream's) takes such boundary files into the compaction
 * with b1.
 *
 * Steps: patch deps/leveldb/leveldb-1.20/db/version_set.cc in place (anchors checked: a
 * classic-level whose source differs fails here, loudly), then `node-gyp rebuild` against this
 * Node's own headers (no download), which puts build/Release/classic_level.node where
 * node-gyp-build looks before the prebuilt binaries; last, a marker with the patched source's
 * hash, which `src/store/embedded/leveldb-fix.ts` checks.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const classicLevel = dirname(require.resolve('classic-level/package.json'));
const source = join(classicLevel, 'deps', 'leveldb', 'leveldb-1.20', 'db', 'version_set.cc');
const marker = join(classicLevel, 'build', 'percolator-leveldb-fix.json');
const binary = join(classicLevel, 'build', 'Release', 'classic_level.node');

const HELPERS = `
// --- Percolator for TypeScript: the fix of LevelDB issue 320 (upstream 1.21, pull request 339) ---
// The largest key of \`files\` into *largest_key; false if there are none.
static bool PercolatorFindLargestKey(const InternalKeyComparator& icmp,
                                     const std::vector<FileMetaData*>& files,
                                     InternalKey* largest_key) {
  if (files.empty()) return false;
  *largest_key = files[0]->largest;
  for (size_t i = 1; i < files.size(); ++i) {
    if (icmp.Compare(files[i]->largest, *largest_key) > 0) *largest_key = files[i]->largest;
  }
  return true;
}

// The file of \`level_files\` with the smallest first key above \`largest_key\` that starts with
// the same user key (older versions of it), or NULL.
static FileMetaData* PercolatorFindSmallestBoundaryFile(const InternalKeyComparator& icmp,
                                                        const std::vector<FileMetaData*>& level_files,
                                                        const InternalKey& largest_key) {
  const Comparator* user_cmp = icmp.user_comparator();
  FileMetaData* found = NULL;
  for (size_t i = 0; i < level_files.size(); ++i) {
    FileMetaData* f = level_files[i];
    if (icmp.Compare(f->smallest, largest_key) > 0 &&
        user_cmp->Compare(f->smallest.user_key(), largest_key.user_key()) == 0) {
      if (found == NULL || icmp.Compare(f->smallest, found->smallest) < 0) found = f;
    }
  }
  return found;
}

// Adds to \`compaction_files\` every file of its level that holds older versions of the user key
// its largest file ends with, transitively: compacting one without the other would leave the
// older version above the newer, and Get would return it.
static void PercolatorAddBoundaryInputs(const InternalKeyComparator& icmp,
                                        const std::vector<FileMetaData*>& level_files,
                                        std::vector<FileMetaData*>* compaction_files) {
  InternalKey largest_key;
  if (!PercolatorFindLargestKey(icmp, *compaction_files, &largest_key)) return;
  for (;;) {
    FileMetaData* b = PercolatorFindSmallestBoundaryFile(icmp, level_files, largest_key);
    if (b == NULL) return;
    compaction_files->push_back(b);
    largest_key = b->largest;
  }
}
// --- end of the fix's helpers ---

`;

const EDITS = [
  // The helpers, before their one user.
  { anchor: 'void VersionSet::SetupOtherInputs(Compaction* c) {\n', insert: 'before', text: HELPERS },
  // The compaction's own level: boundary files join its inputs before its range is taken.
  {
    anchor: '  InternalKey smallest, largest;\n  GetRange(c->inputs_[0], &smallest, &largest);\n',
    insert: 'replace',
    text: '  InternalKey smallest, largest;\n  PercolatorAddBoundaryInputs(icmp_, current_->files_[level], &c->inputs_[0]);\n  GetRange(c->inputs_[0], &smallest, &largest);\n',
  },
  // And the inputs it grows to without more files of the next level.
  {
    anchor: '    current_->GetOverlappingInputs(level, &all_start, &all_limit, &expanded0);\n',
    insert: 'after',
    text: '    PercolatorAddBoundaryInputs(icmp_, current_->files_[level], &expanded0);\n',
  },
];

function patchSource() {
  let text = readFileSync(source, 'utf8');
  if (text.includes('PercolatorAddBoundaryInputs')) return text;
  if (text.includes('AddBoundaryInputs')) return text; // a classic-level that has upstream's fix
  for (const e of EDITS) {
    const at = text.indexOf(e.anchor);
    if (at < 0 || text.indexOf(e.anchor, at + 1) >= 0) {
      throw new Error(
        `leveldb-fix: ${source} does not read as expected (anchor ${JSON.stringify(e.anchor.trim())}); classic-level changed?`,
      );
    }
    if (e.insert === 'before') text = text.slice(0, at) + e.text + text.slice(at);
    else if (e.insert === 'after') text = text.slice(0, at + e.anchor.length) + e.text + text.slice(at + e.anchor.length);
    else text = text.slice(0, at) + e.text + text.slice(at + e.anchor.length);
  }
  writeFileSync(source, text);
  return text;
}

const hashOf = (text) => createHash('sha256').update(text).digest('hex');

function markerOk(hash) {
  if (!existsSync(marker) || !existsSync(binary)) return false;
  try {
    return JSON.parse(readFileSync(marker, 'utf8')).sourceSha256 === hash;
  } catch {
    return false;
  }
}

const checkOnly = process.argv.includes('--check');
const text = checkOnly ? readFileSync(source, 'utf8') : patchSource();
const hash = hashOf(text);
if (checkOnly) {
  process.stdout.write(markerOk(hash) ? 'leveldb-fix: built\n' : 'leveldb-fix: not built\n');
  process.exit(markerOk(hash) ? 0 : 1);
}
if (!markerOk(hash)) {
  const nodeGyp = require.resolve('node-gyp/bin/node-gyp.js');
  // This Node's own headers (its prefix has include/node): nothing is downloaded.
  const nodedir = dirname(dirname(process.execPath));
  process.stderr.write('leveldb-fix: building classic-level with the fix of LevelDB issue 320 (a minute or two)\n');
  // The compiler's warnings about classic-level's own code are not ours to show; a failure's are.
  const r = spawnSync(process.execPath, [nodeGyp, 'rebuild', `--nodedir=${nodedir}`, '--jobs=max'], {
    cwd: classicLevel,
    stdio: ['ignore', 'ignore', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) {
    process.stderr.write(`${String(r.stderr).split('\n').slice(-40).join('\n')}\n`);
    process.stderr.write('leveldb-fix: the build failed (a C++ compiler, make and python3 are needed)\n');
    process.exit(r.status ?? 1);
  }
  writeFileSync(marker, `${JSON.stringify({ sourceSha256: hash, fix: 'google/leveldb#320' })}\n`);
}
