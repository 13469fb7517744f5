/** The live status page (mounted by `percolator demo --serve` and `percolator serve`). */
export { startStatusServer, defaultCharts, prometheusText, type StatusServer, type StatusServerOptions } from './server.js';
export {
  percolatorSampler,
  percolatorCharts,
  PERCOLATOR_CHARTS,
  PERCOLATOR_HEADLINE,
  type PercolatorSourceOptions,
} from './percolator-sources.js';
export type * from './types.js';
