/**
 * LevelDB's failures as StoreErrors: what classic-level throws (walking its `cause` chain) mapped
 * to STORE_LOCKED, DATA_CORRUPTED, STORE_CLOSED or IO_ERROR, with the engine's code and message in
 * `details`. Shared by the engine, the verifier and the removal of a store's files.
 */
import { StoreError } from '../errors.js';

/** An IO_ERROR about `dir`, carrying the cause's message. */
export function ioError(message: string, dir: string, cause: unknown): StoreError {
  const m = cause instanceof Error ? cause.message : String(cause);
  return new StoreError('IO_ERROR', `${message}: ${m}`, { dir, engineMessage: m }, { cause });
}

/** Maps a classic-level / LevelDB error (walking its `cause` chain) to a StoreError. */
export function mapError(err: unknown, dir: string, op: string, closed: boolean): StoreError {
  if (err instanceof StoreError) return err;
  const codes: string[] = [];
  const messages: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    if (typeof e === 'object') {
      const code = (e as { code?: unknown }).code;
      if (typeof code === 'string') codes.push(code);
      const msg = (e as { message?: unknown }).message;
      if (typeof msg === 'string') messages.push(msg);
      e = (e as { cause?: unknown }).cause;
    } else {
      messages.push(String(e));
      break;
    }
  }
  const engineMessage = messages[messages.length - 1] ?? String(err);
  const details = { dir, op, engineCode: codes[codes.length - 1], engineMessage };
  if (codes.includes('LEVEL_LOCKED')) {
    return new StoreError('STORE_LOCKED', `the store at ${dir} is open in another process or engine (${engineMessage})`, details, {
      cause: err,
    });
  }
  if (codes.includes('LEVEL_CORRUPTION') || messages.some((m) => m.includes('Corruption'))) {
    return new StoreError('DATA_CORRUPTED', `LevelDB reports corruption in ${dir} during ${op}: ${engineMessage}`, details, { cause: err });
  }
  if (closed && codes.some((c) => c.endsWith('_NOT_OPEN') || c === 'LEVEL_DATABASE_NOT_OPEN')) {
    return new StoreError('STORE_CLOSED', `the store at ${dir} is closed`, details, { cause: err });
  }
  return new StoreError('IO_ERROR', `LevelDB ${op} failed in ${dir}: ${engineMessage}`, details, { cause: err });
}
