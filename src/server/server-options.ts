/**
 * `startServer`'s options, checked before anything is opened or bound. Taken as they came, a
 * JavaScript caller's mistakes were silent or late: a store of `null` served a store created in
 * the working directory (`?? openStore(default)`), an oraclePort of "x" was ignored, an authToken
 * of 5 was a TypeError from the digest, an empty one served without the warning of an open
 * server, a misspelt option (`prot`) was the default. Every failure is a StoreError
 * INVALID_ARGUMENT (what the server serves is a store) naming the option in `details`.
 */
import { StoreError } from '../store/errors.js';
import { describeSecret, describeValue } from '../util/describe-type.js';
import { hasMethods, unknownOption } from '../util/options.js';
import { isTimerMs } from '../util/timer-ms.js';

const SERVER_OPTIONS: ReadonlySet<string> = new Set([
  'store',
  'storeUrl',
  'storeOptions',
  'host',
  'port',
  'httpPort',
  'oraclePort',
  'authToken',
  'maxMessageBytes',
  'maxChunkValueBytes',
  'shutdownGraceMs',
  'httpExtraRoutes',
  'log',
  'lockService',
]);

export function checkServerOptions(options: unknown): void {
  if (options === null || typeof options !== 'object') throw invalid('options', 'an object', options);
  const unknown = unknownOption('startServer', options, SERVER_OPTIONS);
  if (unknown !== undefined) throw new StoreError('INVALID_ARGUMENT', unknown.message, { option: unknown.option });
  const o = options as Record<string, unknown>;
  if (o.store !== undefined && !hasMethods(o.store, ['readRows', 'mutateRow', 'close'])) throw invalid('store', 'an open Store', o.store);
  if (o.store !== undefined && (o.storeUrl !== undefined || o.storeOptions !== undefined))
    throw new StoreError('INVALID_ARGUMENT', 'startServer serves store, or opens storeUrl with storeOptions: not both', {
      option: 'store',
    });
  if (o.host !== undefined && (typeof o.host !== 'string' || o.host === ''))
    throw invalid('host', 'a non-empty host name or address', o.host);
  if (o.port !== undefined && !isPort(o.port)) throw invalid('port', 'an integer from 0 to 65535', o.port);
  for (const name of ['httpPort', 'oraclePort']) {
    if (o[name] !== undefined && o[name] !== null && !isPort(o[name])) throw invalid(name, 'an integer from 0 to 65535, or null', o[name]);
  }
  if (o.authToken !== undefined && (typeof o.authToken !== 'string' || o.authToken === ''))
    throw invalid('authToken', 'a non-empty string', o.authToken);
  for (const name of ['maxMessageBytes', 'maxChunkValueBytes']) {
    if (o[name] !== undefined && !(Number.isSafeInteger(o[name]) && (o[name] as number) > 0))
      throw invalid(name, 'a positive integer', o[name]);
  }
  if (o.shutdownGraceMs !== undefined && !isTimerMs(o.shutdownGraceMs))
    throw invalid('shutdownGraceMs', 'a number of ms from 0', o.shutdownGraceMs);
  if (o.httpExtraRoutes !== undefined && !Array.isArray(o.httpExtraRoutes)) throw invalid('httpExtraRoutes', 'an array', o.httpExtraRoutes);
  if (o.log !== undefined && typeof o.log !== 'function') throw invalid('log', 'a function (line) => void', o.log);
  if (o.lockService !== undefined && !hasMethods(o.lockService, ['tryLock', 'unlock', 'close']))
    throw invalid('lockService', 'an InProcessLockService', o.lockService);
}

function isPort(v: unknown): boolean {
  return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 65535;
}

function invalid(option: string, needs: string, value: unknown): StoreError {
  const shown = describeValue(value);
  // The value itself is kept out of details for authToken: a secret does not belong in logs.
  const evidence = option !== 'authToken' && (typeof value === 'number' || typeof value === 'string') ? { value } : {};
  return new StoreError(
    'INVALID_ARGUMENT',
    `startServer's ${option} must be ${needs}, not ${option === 'authToken' ? describeSecret(value) : shown}`,
    {
      option,
      ...evidence,
    },
  );
}
