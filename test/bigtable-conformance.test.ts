/**
 * The shared Store conformance suite against Google's Bigtable emulator, through the
 * bigtable:// backend with `?emulator=1`. Skips with a clear message where cbtemulator is not
 * installed.
 *
 * Runs with `timestampScale=1000` (the Cloud Bigtable mapping: wire = ours × 1000). With the
 * suite's injected clock in 2023 the wire timestamps then lie far in the emulator's future, so
 * its own wall-clock GC (maxAge) never races the suite's time-based GC tests; our GC-on-read
 * applies the rules by the injected clock. `BIGTABLE_CONFORMANCE_SCALE1=1` also runs the suite
 * with timestampScale=1, where four time-based GC tests are racy on the emulator (it collects
 * maxAge by its wall clock every 0.5–1.5 s once any ModifyColumnFamilies was called):
 * docs/bigtable-backend.md, "Conformance".
 */
import { afterAll, describe } from 'vitest';
import { BigtableStore, type BigtableStoreOptions } from '../src/store/bigtable/bigtable-store.js';
import type { Store, StoreOptions } from '../src/store/store.js';
import { describeStoreConformance } from '../src/store/store-conformance.js';
import { EMULATOR_MISSING, emulatorBinary, type RunningEmulator, startEmulator } from './support/emulator.js';

const binary = emulatorBinary();
if (binary === null) console.warn(EMULATOR_MISSING);

let running: Promise<RunningEmulator> | null = null;
const emulator = (): Promise<RunningEmulator> => (running ??= startEmulator(binary as string));

afterAll(async () => {
  if (running !== null) await (await running).stop();
});

/** Each suite run gets its own instance: the suites name their tables alike. */
function factory(instance: string, query: string) {
  const optionsOf = new WeakMap<Store, StoreOptions | undefined>();
  const open = async (options?: StoreOptions): Promise<Store> => {
    const emu = await emulator();
    const store = await BigtableStore.open(
      `bigtable://${emu.host}:${emu.port}/conformance/${instance}?emulator=1&${query}`,
      options as BigtableStoreOptions,
    );
    optionsOf.set(store, options);
    return store;
  };
  return {
    open,
    // The data lives in the emulator process: a new client sees it all again.
    reopen: async (previous: Store): Promise<Store> => {
      await previous.close();
      return open(optionsOf.get(previous));
    },
  };
}

describe.skipIf(binary === null)('bigtable:// on the emulator', () => {
  describeStoreConformance('bigtable:// emulator, timestampScale=1000', factory('scale1000', 'timestampScale=1000'));
  describe.skipIf(process.env.BIGTABLE_CONFORMANCE_SCALE1 !== '1')('timestampScale=1', () => {
    describeStoreConformance('bigtable:// emulator, timestampScale=1', factory('scale1', 'timestampScale=1'));
  });
});
