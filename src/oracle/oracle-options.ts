/**
 * The arguments of the oracle's public constructors (`Oracle.open`, `startOracleServer`,
 * `new OracleClient`, the mark stores), checked before anything is opened, bound or connected.
 * Taken as they came, a JavaScript caller's mistakes were TypeErrors or RangeErrors from deep
 * inside (`new OracleClient()`, `Oracle.open(null)`, `new FileMarkStore(5)` from path.resolve, a
 * host of 5 or a port of 70000 from the socket, a `StoreMarkStore(null)` at its first load) or
 * taken: a NaN `maxBatch` refused every batch, a string port or reserve was coerced, a
 * `reportIntervalMs` of 0 sent a report every millisecond, a misspelt option took the default, and
 * `oracle` beside `markStore` ignored the mark store. Every failure is an OracleError ORACLE_INVALID_OPTION
 * naming the option in `details` (and its value when it is a number, a string or a boolean).
 */
import { describeValue } from '../util/describe-type.js';
import { hasMethods, unknownOption } from '../util/options.js';
import { isTimerMs } from '../util/timer-ms.js';
import { OracleError } from './errors.js';

/** The largest batch a request can carry: its count is a u32 on the wire. */
const MAX_WIRE_BATCH = 0xffff_ffff;

const ORACLE_OPTIONS = ['markStore', 'clock', 'millis', 'reserveMicros', 'maxBatch', 'leaseMs', 'holdbackMs'] as const;
const ORACLE_KNOWN: ReadonlySet<string> = new Set(ORACLE_OPTIONS);
/** The options of an oracle to open: ignored when `startOracleServer` is given an open one. */
const OPENING: readonly string[] = ORACLE_OPTIONS;
const SERVER_KNOWN: ReadonlySet<string> = new Set([...ORACLE_OPTIONS, 'host', 'port', 'oracle', 'maxConnections']);
const CLIENT_KNOWN: ReadonlySet<string> = new Set([
  'host',
  'port',
  'timeoutMs',
  'connectTimeoutMs',
  'backoffInitialMs',
  'backoffMaxMs',
  'maxBatch',
  'reportIntervalMs',
  'leaseMs',
  'clientId',
  'millis',
  'addressSource',
]);
const FILE_MARK_KNOWN: ReadonlySet<string> = new Set(['lock']);
const STORE_MARK_KNOWN: ReadonlySet<string> = new Set(['table', 'row']);

function invalidOption(what: string, option: string, needs: string, value: unknown): OracleError {
  const shown = describeValue(value);
  return new OracleError('ORACLE_INVALID_OPTION', `${what}: ${option} must be ${needs}, not ${shown}`, {
    option,
    ...(typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean' ? { value } : {}),
  });
}

/** `options` as an object of `known` names, or ORACLE_INVALID_OPTION (`option: 'options'` or the unknown name). */
function checkObject(what: string, options: unknown, known: ReadonlySet<string>): Record<string, unknown> {
  if (options === null || typeof options !== 'object') throw invalidOption(what, 'options', 'an object', options);
  const unknown = unknownOption(what, options, known);
  if (unknown !== undefined) throw new OracleError('ORACLE_INVALID_OPTION', unknown.message, { option: unknown.option });
  return options as Record<string, unknown>;
}

function isIntegerIn(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max;
}

function fn(what: string, o: Record<string, unknown>, name: string): void {
  if (o[name] !== undefined && typeof o[name] !== 'function') throw invalidOption(what, name, 'a function', o[name]);
}

function integer(what: string, o: Record<string, unknown>, name: string, min: number, max: number): void {
  if (o[name] !== undefined && !isIntegerIn(o[name], min, max))
    throw invalidOption(what, name, `an integer from ${min} to ${max}`, o[name]);
}

function duration(what: string, o: Record<string, unknown>, name: string, min: number): void {
  if (o[name] !== undefined && !isTimerMs(o[name], min)) throw invalidOption(what, name, `a number of ms from ${min} to 2^31 - 1`, o[name]);
}

function host(what: string, o: Record<string, unknown>): void {
  if (o.host !== undefined && (typeof o.host !== 'string' || o.host === ''))
    throw invalidOption(what, 'host', 'a non-empty host name or address', o.host);
}

function isMarkStore(v: unknown): boolean {
  return hasMethods(v, ['load', 'save']);
}

/** The options of the oracle itself (`Oracle.open`, and `startOracleServer` when it opens one). */
function checkOracleFields(what: string, o: Record<string, unknown>, markStoreRequired: boolean): void {
  if ((o.markStore !== undefined || markStoreRequired) && !isMarkStore(o.markStore))
    throw invalidOption(what, 'markStore', 'a MarkStore (FileMarkStore, StoreMarkStore, MemoryMarkStore)', o.markStore);
  fn(what, o, 'clock');
  fn(what, o, 'millis');
  integer(what, o, 'reserveMicros', 1, Number.MAX_SAFE_INTEGER);
  integer(what, o, 'maxBatch', 1, MAX_WIRE_BATCH);
  duration(what, o, 'leaseMs', 1);
  duration(what, o, 'holdbackMs', 0);
}

export function checkOracleOptions(options: unknown): void {
  checkOracleFields('Oracle.open', checkObject('Oracle.open', options, ORACLE_KNOWN), true);
}

export function checkServerOptions(options: unknown): void {
  const what = 'startOracleServer';
  const o = checkObject(what, options, SERVER_KNOWN);
  host(what, o);
  integer(what, o, 'port', 0, 65535);
  integer(what, o, 'maxConnections', 1, Number.MAX_SAFE_INTEGER);
  if (o.oracle === undefined) {
    if (o.markStore === undefined)
      throw new OracleError('ORACLE_INVALID_OPTION', `${what} needs a markStore (or an open oracle)`, { option: 'markStore' });
    checkOracleFields(what, o, true);
    return;
  }
  const oracle = o.oracle as { tryAllocate?: unknown; enableRemoteClients?: unknown } | null;
  if (
    oracle === null ||
    typeof oracle !== 'object' ||
    typeof oracle.tryAllocate !== 'function' ||
    typeof oracle.enableRemoteClients !== 'function'
  )
    throw invalidOption(what, 'oracle', 'an open Oracle', o.oracle);
  // The open oracle's own options were set when it was opened: these would be ignored.
  const ignored = OPENING.find((name) => o[name] !== undefined);
  if (ignored !== undefined) {
    throw new OracleError(
      'ORACLE_INVALID_OPTION',
      `${what} serves the open oracle given as oracle, or opens one with ${ignored}: not both`,
      {
        option: ignored,
      },
    );
  }
}

export function checkClientOptions(options: unknown): void {
  const what = 'new OracleClient';
  const o = checkObject(what, options, CLIENT_KNOWN);
  host(what, o);
  if (!isIntegerIn(o.port, 1, 65535)) throw invalidOption(what, 'port', 'an integer from 1 to 65535', o.port);
  duration(what, o, 'timeoutMs', 1);
  duration(what, o, 'connectTimeoutMs', 1);
  duration(what, o, 'backoffInitialMs', 0);
  duration(what, o, 'backoffMaxMs', 0);
  integer(what, o, 'maxBatch', 1, MAX_WIRE_BATCH);
  duration(what, o, 'reportIntervalMs', 1);
  duration(what, o, 'leaseMs', 1);
  integer(what, o, 'clientId', 1, Number.MAX_SAFE_INTEGER);
  fn(what, o, 'millis');
  if (o.addressSource !== undefined && typeof o.addressSource !== 'string')
    throw invalidOption(what, 'addressSource', 'a string', o.addressSource);
}

export function checkFileMarkStore(file: unknown, options: unknown): void {
  const what = 'new FileMarkStore';
  if (typeof file !== 'string' || file === '') throw invalidOption(what, 'file', 'a non-empty path', file);
  const o = checkObject(what, options, FILE_MARK_KNOWN);
  if (o.lock !== undefined && typeof o.lock !== 'boolean') throw invalidOption(what, 'lock', 'a boolean', o.lock);
}

export function checkStoreMarkStore(store: unknown, options: unknown): void {
  const what = 'new StoreMarkStore';
  if (!hasMethods(store, ['createTable', 'mutateRow', 'readRow', 'checkAndMutateRow']))
    throw invalidOption(what, 'store', 'an open Store', store);
  const o = checkObject(what, options, STORE_MARK_KNOWN);
  for (const name of ['table', 'row']) {
    if (o[name] !== undefined && (typeof o[name] !== 'string' || o[name] === ''))
      throw invalidOption(what, name, 'a non-empty string', o[name]);
  }
}

export function checkMemoryMark(mark: unknown): void {
  if (!isIntegerIn(mark, 0, Number.MAX_SAFE_INTEGER))
    throw invalidOption('new MemoryMarkStore', 'mark', 'an integer from 0 to 2^53 - 1', mark);
}
