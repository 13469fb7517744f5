/** The `memory:` backend against the shared Store conformance suite. */
import { openStore } from '../open-store.js';
import { describeStoreConformance } from '../store-conformance.js';

describeStoreConformance('memory:', {
  open: (options) => openStore('memory:', options),
});
