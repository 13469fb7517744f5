/**
 * The bigtable:// client's gapic options (src/store/bigtable/clients.ts computes them without
 * loading the package's entry point) are exactly what `new Bigtable(options).options` gives for
 * the same options — for a local server, for Cloud Bigtable, with an app profile, with the
 * emulator and universe-domain environment variables — so that an upgrade of
 * @google-cloud/bigtable that changes how its constructor configures the clients fails here.
 * And opening a bigtable:// store does not load that entry point (~0.45 s of every client's open);
 * checked on the compiled store (dist/: `npm test` builds first) in a process of its own.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { bigtableOptions, gapicOptions } from '../src/store/bigtable/clients.js';
import { parseBigtableUrl } from '../src/store/bigtable/url.js';

const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: the official client is untyped JS here
const { Bigtable } = require('@google-cloud/bigtable') as { Bigtable: new (o: object) => { options: Record<string, any> } };

const saved = { emulator: process.env.BIGTABLE_EMULATOR_HOST, universe: process.env.GOOGLE_CLOUD_UNIVERSE_DOMAIN };
/**
 * grpc-gcp makes its channel-pool hooks per grpc-js it is given, so the class's and ours are two
 * closures of one source: compared by their source text. The rest is compared as it is, classes included.
 */
function comparable(value: unknown): unknown {
  if (typeof value === 'function') return `function ${value.toString()}`;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(comparable);
  const out = Object.create(Object.getPrototypeOf(value)) as Record<string, unknown>;
  for (const [k, v] of Object.entries(value)) out[k] = comparable(v);
  return out;
}

afterEach(() => {
  for (const [name, value] of [
    ['BIGTABLE_EMULATOR_HOST', saved.emulator],
    ['GOOGLE_CLOUD_UNIVERSE_DOMAIN', saved.universe],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

it.each([
  ['a local server', 'bigtable://127.0.0.1:8086', {}],
  ['a local server, an app profile', 'bigtable://127.0.0.1:8086/p/i?appProfile=batch', {}],
  ['Cloud Bigtable', 'bigtable://p/i', {}],
  ['Cloud Bigtable, BIGTABLE_EMULATOR_HOST set', 'bigtable://p/i', { BIGTABLE_EMULATOR_HOST: 'localhost:9035' }],
  ['Cloud Bigtable, GOOGLE_CLOUD_UNIVERSE_DOMAIN set', 'bigtable://p/i', { GOOGLE_CLOUD_UNIVERSE_DOMAIN: 'example.com' }],
])('%s: the options the Bigtable class would give its data and table admin clients', (_, url, env) => {
  delete process.env.BIGTABLE_EMULATOR_HOST;
  delete process.env.GOOGLE_CLOUD_UNIVERSE_DOMAIN;
  Object.assign(process.env, env);
  const options = bigtableOptions(parseBigtableUrl(url));
  const ours = gapicOptions(options);
  const theirs = new Bigtable(options).options;
  expect(comparable(ours.data)).toStrictEqual(comparable(theirs.BigtableClient));
  expect(comparable(ours.admin)).toStrictEqual(comparable(theirs.BigtableTableAdminClient));
  // Not vacuous: the two differ where the options do.
  expect(comparable(ours.data)).not.toStrictEqual(comparable(ours.admin));
});

it("opening a bigtable:// store loads the gapic clients, not the package's entry point", () => {
  const openStore = new URL('../dist/store/open-store.js', import.meta.url).href;
  const script = `
    import { createRequire } from 'node:module';
    const require = createRequire(import.meta.url);
    const { openStore } = await import(${JSON.stringify(openStore)});
    const store = await openStore('bigtable://127.0.0.1:1');
    const loaded = Object.keys(require.cache).filter((f) => f.includes('@google-cloud/bigtable/build/src/'));
    await store.close();
    console.log(JSON.stringify(loaded.map((f) => f.slice(f.indexOf('build/src/')))));
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(r.status, r.stderr).toBe(0);
  const loaded = JSON.parse(r.stdout.trim().split('\n').pop() as string) as string[];
  expect(loaded).toContain('build/src/v2/bigtable_client.js');
  expect(loaded).not.toContain('build/src/index.js');
});
