/**
 * What an installed package offers: the main entry (`percolator`), the server as a library
 * (`percolator/server`: startServer, NetworkLockService) and the bigtable:// backend
 * (`percolator/bigtable`: BigtableStore), as a user's project imports them — resolved by Node
 * through package.json's `exports` (the package imports itself by name), from the built dist/.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { MemoryMarkStore, Oracle, Percolator } from '../src/index.js';
import { isTxnError, type TxnError } from '../src/index.js';
import type { ActiveRegistration, GcResult, OracleTimestampRange, PendingEvidence, TimestampSource } from '../src/index.js';

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

it("a TimestampSource of the user's own can be written with the type docs/oracle.md names (ActiveRegistration)", async () => {
  // A wrapper counting the start timestamps it hands out, as a user might write one: the type its
  // methods return must be importable from the package, not only TimestampSource (a typecheck fails
  // without them). The package's TimestampRange is the store's filter range: the oracle's is
  // OracleTimestampRange.
  const oracle = await Oracle.open({ markStore: new MemoryMarkStore(0) });
  let starts = 0;
  const counting: TimestampSource = {
    getTimestamp: () => oracle.getTimestamp(),
    getTimestamps: (count: number): Promise<OracleTimestampRange> => oracle.getTimestamps(count),
    getStartTimestamp: (): Promise<ActiveRegistration> => {
      starts++;
      return oracle.getStartTimestamp();
    },
    registerActive: (ts: number): ActiveRegistration => oracle.registerActive(ts),
    getWatermark: () => oracle.getWatermark(),
    close: () => oracle.close(),
  };
  const db = await Percolator.open({ store: 'memory:', oracle: counting });
  try {
    await db.createTable('t');
    await db.transaction(async (tx) => tx.set('t', 'r', 'c:x', 'v'));
    expect(await db.getString('t', 'r', 'c:x')).toBe('v');
    expect(starts).toBeGreaterThan(0);
  } finally {
    await db.close();
    await oracle.close();
  }
});

it('the results and evidence the API hands out have types a user can name (GcResult, PendingEvidence)', async () => {
  // A user's helpers over them: the typecheck fails if either is not exported.
  const removed = (r: GcResult): number => r.versionsRemoved + r.locksResolved;
  const worst = (e: PendingEvidence): string => e.byColumn[0]?.column ?? '';
  const db = await Percolator.open({ store: 'memory:' });
  try {
    await db.createTable('t');
    expect(removed(await db.collectGarbage())).toBeGreaterThanOrEqual(0);
    const w = db.worker();
    w.observe('c:x', 'never', async () => {
      await new Promise<never>(() => {}); // never done: the change stays pending
    });
    await w.start();
    await db.transaction(async (tx) => tx.set('t', 'r', 'c:x', 'v')); // observed: a notification
    const e = await db.waitForQuiescence({ timeoutMs: 1 }).catch((x: unknown) => x);
    expect(isTxnError(e, 'QUIESCENCE_TIMEOUT')).toBe(true);
    expect(worst((e as TxnError).details as unknown as PendingEvidence)).toBe('c:x');
    await w.stop({ graceMs: 0 });
  } finally {
    await db.close();
  }
});
