/**
 * `?oracle=HOST:PORT` and `?lockService=HOST:PORT`: where a `bigtable://` deployment's oracle and
 * lock service are, for a server whose ports are not the defaults (`serve --port 0`,
 * `--oracle-port P`), the emulator or Cloud Bigtable. (The other URL forms: test/bigtable-unit.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { parseBigtableUrl, parseHostPort } from './url.js';

describe('bigtable:// URL service options', () => {
  it('names the oracle and the lock service, as given', () => {
    expect(parseBigtableUrl('bigtable://127.0.0.1:35505?oracle=127.0.0.1:41589')).toMatchObject({
      host: '127.0.0.1:35505',
      oracle: '127.0.0.1:41589',
    });
    expect(parseBigtableUrl('bigtable://h:1/p/i?oracle=[::1]:8088&lockService=locks.internal:8086&emulator=1')).toMatchObject({
      oracle: '[::1]:8088',
      lockService: 'locks.internal:8086',
      emulator: true,
    });
    // Cloud Bigtable hosts no oracle: the URL can name one (a `percolator oracle`).
    expect(parseBigtableUrl('bigtable://my-project/my-instance?oracle=10.0.0.5:8088').oracle).toBe('10.0.0.5:8088');
    const plain = parseBigtableUrl('bigtable://127.0.0.1:8086');
    expect(plain.oracle).toBeUndefined();
    expect(plain.lockService).toBeUndefined();
  });

  it.each([
    'bigtable://127.0.0.1:8086?oracle=',
    'bigtable://127.0.0.1:8086?oracle=8088',
    'bigtable://127.0.0.1:8086?oracle=host',
    'bigtable://127.0.0.1:8086?oracle=host:0',
    'bigtable://127.0.0.1:8086?oracle=host:65536',
    'bigtable://127.0.0.1:8086?oracle=host:80a',
    'bigtable://127.0.0.1:8086?oracle=::1:8088',
    'bigtable://127.0.0.1:8086?oracle=http://host:8088',
    'bigtable://127.0.0.1:8086?lockService=',
    'bigtable://127.0.0.1:8086?lockService=host:-1',
    'bigtable://127.0.0.1:8086?lockService=a b:80',
  ])('rejects %s with INVALID_STORE_URL naming the option', (url) => {
    const name = url.includes('lockService') ? 'lockService' : 'oracle';
    expect(() => parseBigtableUrl(url)).toThrow(
      expect.objectContaining({ code: 'INVALID_STORE_URL', message: expect.stringContaining(`${name} must be HOST:PORT`) }),
    );
  });

  it('lists the service options among the known ones', () => {
    expect(() => parseBigtableUrl('bigtable://127.0.0.1:8086?orcale=127.0.0.1:8088')).toThrow(
      expect.objectContaining({ code: 'INVALID_STORE_URL', message: expect.stringContaining('oracle, lockService') }),
    );
  });

  it('parseHostPort splits HOST:PORT, unbracketing IPv6', () => {
    expect(parseHostPort('127.0.0.1:8088')).toEqual({ host: '127.0.0.1', port: 8088 });
    expect(parseHostPort('[::1]:65535')).toEqual({ host: '::1', port: 65535 });
    expect(parseHostPort('host:0')).toBeNull();
    expect(parseHostPort('host')).toBeNull();
  });
});

describe('?oracleTimeoutMs=N', () => {
  it('is the oracle client timeout, in ms, where the URL has an oracle', () => {
    expect(parseBigtableUrl('bigtable://127.0.0.1:8086?oracleTimeoutMs=300').oracleTimeoutMs).toBe(300);
    expect(parseBigtableUrl('bigtable://127.0.0.1:8086?oracleTimeoutMs=2147483647').oracleTimeoutMs).toBe(2_147_483_647);
    expect(parseBigtableUrl('bigtable://h:1/p/i?emulator=1&oracle=127.0.0.1:8088&oracleTimeoutMs=1').oracleTimeoutMs).toBe(1);
    expect(parseBigtableUrl('bigtable://my-project/my-instance?oracleTimeoutMs=20000&oracle=10.0.0.5:8088').oracleTimeoutMs).toBe(20_000);
    expect(parseBigtableUrl('bigtable://127.0.0.1:8086').oracleTimeoutMs).toBeUndefined();
  });

  it.each(['0', '-1', '1.5', 'abc', '', '2147483648', '1e3', '+5', ' 5', '9007199254740993'])(
    'rejects oracleTimeoutMs=%j with INVALID_STORE_URL naming the option and the value',
    (v) => {
      const url = `bigtable://127.0.0.1:8086?oracleTimeoutMs=${encodeURIComponent(v)}`;
      expect(() => parseBigtableUrl(url)).toThrow(
        expect.objectContaining({
          code: 'INVALID_STORE_URL',
          message: expect.stringContaining(`oracleTimeoutMs must be an integer of ms from 1 to 2147483647, got ${JSON.stringify(v)}`),
        }),
      );
    },
  );

  it.each(['bigtable://127.0.0.1:8086?emulator=1&oracleTimeoutMs=300', 'bigtable://my-project/my-instance?oracleTimeoutMs=300'])(
    'is refused where the URL has no oracle (%s): it would be ignored',
    (url) => {
      expect(() => parseBigtableUrl(url)).toThrow(
        expect.objectContaining({ code: 'INVALID_STORE_URL', message: expect.stringContaining('oracleTimeoutMs needs an oracle') }),
      );
    },
  );

  it('is among the known options', () => {
    expect(() => parseBigtableUrl('bigtable://127.0.0.1:8086?oracleTimeout=300')).toThrow(
      expect.objectContaining({ code: 'INVALID_STORE_URL', message: expect.stringContaining('oracle, lockService, oracleTimeoutMs') }),
    );
  });
});
