/** The `bigtable://` backend (docs/bigtable-backend.md). `openStore('bigtable://…')` loads it on demand. */
export {
  BigtableStore,
  type BigtableStoreOptions,
  LOCALITY_GROUPS_METADATA,
  MAX_MUTATIONS_PER_REQUEST,
  MAX_REQUEST_BYTES,
} from './bigtable-store.js';
export { type BigtableUrl, parseBigtableUrl } from './url.js';
