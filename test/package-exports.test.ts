/**
 * What an installed package offers: the main entry (`percolator`), the server as a library
 * (`percolator/server`: startServer, NetworkLockService) and the bigtable:// backend
 * (`percolator/bigtable`: BigtableStore), as a user's project imports them — resolved by Node
 * through package.json's `exports` (the package imports itself by name), from the built dist/.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The names `specifier` exports, as Node resolves it from the package root. */
function exportsOf(specifier: string): string[] {
  const out = execFileSync(
    process.execPath,
    ['--input-type=module', '-e', `console.log(JSON.stringify(Object.keys(await import(${JSON.stringify(specifier)}))))`],
    {
      cwd: root,
      encoding: 'utf8',
    },
  );
  return JSON.parse(out) as string[];
}

it.each([
  ['percolator', ['Percolator', 'Worker', 'openStore', 'TxnError', 'StoreError', 'ObserverAbandoned', 'ObserverFailure']],
  ['percolator/server', ['startServer', 'NetworkLockService', 'LockServiceError']],
  ['percolator/bigtable', ['BigtableStore', 'parseBigtableUrl']],
])('%s exports what the docs use', (specifier, names) => {
  expect(exportsOf(specifier)).toEqual(expect.arrayContaining(names));
});

it('a path the package does not export is refused, not reached into', () => {
  expect(() => exportsOf('percolator/dist/txn/gc.js')).toThrow(/ERR_PACKAGE_PATH_NOT_EXPORTED/);
});
