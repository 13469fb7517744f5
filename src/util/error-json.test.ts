import { describe, expect, it } from 'vitest';
import { bytesText, errorJson } from './error-json.js';
import { TxnError } from '../txn/errors.js';
import { StoreError } from '../store/errors.js';
import { OracleError } from '../oracle/errors.js';
import { LockServiceError } from '../server/lock-client.js';
import { ObserverAbandoned, ObserverFailure } from '../notify/run-observer.js';

const enc = (s: string) => new TextEncoder().encode(s);
const parsed = (e: Error): Record<string, unknown> => JSON.parse(JSON.stringify(e)) as Record<string, unknown>;

describe('bytesText', () => {
  it('keeps printable keys, spells the rest and anything starting with 0x as hex', () => {
    expect(bytesText(enc('row-1'))).toBe('row-1');
    expect(bytesText(new Uint8Array([0, 255, 10]))).toBe('0x00ff0a');
    expect(bytesText(enc('0xab'))).toBe('0x30786162'); // text that reads as hex is not passed off as it
    expect(bytesText(enc('a\nb'))).toBe('0x610a62');
    expect(bytesText(new Uint8Array())).toBe('');
  });
});

describe('JSON of the typed errors', () => {
  it('a TxnError carries its message, code, retryable and the row as text', () => {
    const e = new TxnError('WRITE_CONFLICT', 'conflict on t/r1/f:c', {
      table: 't',
      row: enc('r1'),
      startTs: 7n,
      at: [new Uint8Array([1, 2])],
    });
    expect(parsed(e)).toEqual({
      name: 'TxnError',
      code: 'WRITE_CONFLICT',
      message: 'conflict on t/r1/f:c',
      retryable: true,
      details: { table: 't', row: 'r1', startTs: '7', at: ['0x0102'] },
    });
  });

  it('every typed error of the public API has the same form', () => {
    const errors: Error[] = [
      new StoreError('TABLE_NOT_FOUND', 'no table t', { table: 't' }),
      new OracleError('ORACLE_UNAVAILABLE', 'no oracle at 127.0.0.1:1', { host: '127.0.0.1', port: 1 }),
      new LockServiceError('LOCK_SERVICE_CLOSED', 'closed', { address: 'x' }),
      new ObserverAbandoned('o', 't', new Uint8Array([0xff]), 'f:c'),
    ];
    for (const e of errors) {
      const j = parsed(e);
      expect(j.message).toBe(e.message);
      expect(j.code).toBe((e as Error & { code: string }).code);
      expect(j.name).toBe(e.name);
    }
    expect(parsed(errors[3]!).details).toEqual({ observer: 'o', table: 't', row: '0xff', column: 'f:c' });
  });

  it('a cause is rendered by the same rules, an ordinary one by name and message', () => {
    const inner = new TxnError('KEY_LOCKED', 'locked', { row: enc('k') });
    const failure = new ObserverFailure('indexer', 'docs', enc('d1'), 'raw:html', inner);
    const j = parsed(failure);
    expect(j.details).toEqual({ observer: 'indexer', table: 'docs', row: 'd1', column: 'raw:html', threw: 'KEY_LOCKED' });
    expect(j.cause).toEqual({ name: 'TxnError', code: 'KEY_LOCKED', message: 'locked', retryable: true, details: { row: 'k' } });
    expect(parsed(new ObserverFailure('o', 't', enc('r'), 'f:c', new RangeError('bad'))).cause).toEqual({
      name: 'RangeError',
      message: 'bad',
    });
  });

  it('never throws: cycles, deep evidence and throwing getters are cut, dates keep their form', () => {
    const loop: Record<string, unknown> = { n: 1 };
    loop.self = loop;
    let deep: Record<string, unknown> = { end: true };
    for (let i = 0; i < 20; i++) deep = { deep };
    const bad = Object.defineProperty({}, 'x', {
      enumerable: true,
      get() {
        throw new Error('no');
      },
    });
    const when = new Date(0);
    const e = new StoreError('IO_ERROR', 'disk', { loop, deep, bad, when, f: () => 1 });
    const j = errorJson(e) as { details: Record<string, unknown> };
    expect((j.details.loop as Record<string, unknown>).self).toBe('[cycle]');
    expect(JSON.stringify(j.details.deep)).toContain('[…]');
    expect(j.details.bad).toBe('[unreadable]');
    expect(j.details.when).toBe(when.toJSON());
    expect(typeof j.details.f).toBe('string');
    // An error that is its own cause.
    const self = new TxnError('TXN_ABORTED', 'x');
    Object.defineProperty(self, 'cause', { value: self });
    expect(parsed(self).cause).toBe('[cycle]');
  });

  it('an object met twice that is not a cycle is written out both times', () => {
    const shared = { row: enc('r') };
    expect(parsed(new StoreError('INVALID_ARGUMENT', 'x', { a: shared, b: shared })).details).toEqual({ a: { row: 'r' }, b: { row: 'r' } });
  });
});
