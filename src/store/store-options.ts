/**
 * The options a store is opened with (`openStore`, `BigtableStore.open`), checked before anything
 * is opened or created. Taken as they came, a JavaScript caller's mistakes were silent: `null` was
 * a TypeError deep in the constructor, a number or a misspelt name (`{ cacheByte: 0 }`,
 * `level: { creat: false }`) was ignored and the defaults used — a `create: 'no'` even created
 * the database it was meant to refuse — and NaN or negative sizes reached the row cache and
 * LevelDB. Every failure is a StoreError INVALID_ARGUMENT naming the option in `details`.
 */
import { StoreError } from './errors.js';
import { describeValue } from '../util/describe-type.js';
import { unknownOption } from '../util/options.js';
import { isTimerMs } from '../util/timer-ms.js';

const STORE_OPTIONS: ReadonlySet<string> = new Set([
  'limits',
  'tabletSplitBytes',
  'gcIntervalMs',
  'nowMicros',
  // EngineStoreOptions (memory:, file:)
  'cacheBytes',
  'encodedCacheBytes',
  // file: only; ignored by the other backends, as documented
  'level',
  // BigtableStoreOptions
  'maxMutationsPerRequest',
  'maxRequestBytes',
]);
const LIMITS: ReadonlySet<string> = new Set(['maxRowKeyBytes', 'maxQualifierBytes', 'maxValueBytes', 'maxMutationsPerRow']);
/** LevelDB's options classic-level passes as 32-bit unsigned integers. */
const UINT32_LEVEL_OPTIONS = ['writeBufferSize', 'cacheSize', 'maxOpenFiles', 'maxFileSize', 'blockSize'] as const;
const UINT32_MAX = 0xffff_ffff;
const LEVEL_OPTIONS: ReadonlySet<string> = new Set([
  'writeBufferSize',
  'cacheSize',
  'maxOpenFiles',
  'mmapBallast',
  'maxFileSize',
  'blockSize',
  'compression',
  'create',
  'verify',
  'recheckBytes',
  'maxGroupOps',
  'maxGroupBytes',
]);

/** Options of a store to open: undefined, or an object whose every option is valid. */
export function validateStoreOptions(options: unknown, url: string): void {
  if (options === undefined) return;
  const o = checkObject(options, 'store options', STORE_OPTIONS, url);
  if (o.limits !== undefined) {
    const limits = checkObject(o.limits, 'limits', LIMITS, url);
    for (const name of LIMITS) positive(limits[name], `limits.${name}`, url);
  }
  for (const name of ['tabletSplitBytes', 'maxMutationsPerRequest', 'maxRequestBytes']) positive(o[name], name, url);
  for (const name of ['cacheBytes', 'encodedCacheBytes']) {
    const v = o[name];
    if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) >= 0)) throw invalid(name, 'an integer of bytes from 0', v, url);
  }
  if (o.gcIntervalMs !== undefined && !isTimerMs(o.gcIntervalMs))
    throw invalid('gcIntervalMs', 'a number of ms from 0', o.gcIntervalMs, url);
  if (o.nowMicros !== undefined && typeof o.nowMicros !== 'function') throw invalid('nowMicros', 'a function', o.nowMicros, url);
  if (o.level !== undefined) {
    const level = checkObject(o.level, 'level', LEVEL_OPTIONS, url);
    for (const name of ['writeBufferSize', 'maxOpenFiles', 'maxFileSize', 'blockSize', 'maxGroupOps', 'maxGroupBytes'])
      positive(level[name], `level.${name}`, url);
    for (const name of ['cacheSize', 'recheckBytes']) {
      const v = level[name];
      if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) >= 0))
        throw invalid(`level.${name}`, 'an integer of bytes from 0', v, url);
    }
    // classic-level reads these as uint32 and keeps the low 32 bits: a 4 GiB cache was none.
    for (const name of UINT32_LEVEL_OPTIONS) {
      const v = level[name];
      if (typeof v === 'number' && v > UINT32_MAX) throw invalid(`level.${name}`, `at most ${UINT32_MAX}`, v, url);
    }
    for (const name of ['mmapBallast', 'compression']) {
      if (level[name] !== undefined && typeof level[name] !== 'boolean') throw invalid(`level.${name}`, 'a boolean', level[name], url);
    }
    const { create, verify } = level;
    if (create !== undefined && typeof create !== 'boolean' && create !== 'if-empty')
      throw invalid('level.create', "true, false or 'if-empty'", create, url);
    if (verify !== undefined && verify !== 'incremental' && verify !== 'full' && verify !== 'logs' && verify !== 'none')
      throw invalid('level.verify', "'incremental', 'full', 'logs' or 'none'", verify, url);
  }
}

function checkObject(v: unknown, what: string, known: ReadonlySet<string>, url: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object') throw invalid(what, 'an object', v, url);
  const unknown = unknownOption(what, v, known);
  if (unknown !== undefined) throw new StoreError('INVALID_ARGUMENT', unknown.message, { url, option: unknown.option });
  return v as Record<string, unknown>;
}

function positive(v: unknown, option: string, url: string): void {
  if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) > 0)) throw invalid(option, 'a positive integer', v, url);
}

function invalid(option: string, needs: string, value: unknown, url: string): StoreError {
  const shown = describeValue(value);
  return new StoreError('INVALID_ARGUMENT', `${option} must be ${needs}, not ${shown}`, {
    url,
    option,
    ...(typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean' ? { value } : {}),
  });
}
