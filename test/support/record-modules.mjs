/**
 * `node --import <this file's URL> …` with RECORD_MODULES=FILE: the program run appends the URL of
 * every module it imports to FILE, one a line, as Node resolves it — ours (dist/…), a package's
 * entry point (node_modules/…) and built-ins (node:…). What a test of lazy loading reads to say
 * what a command line loaded.
 *
 * Through Node's module customization hooks (record-modules-hooks.mjs), which see every ESM
 * `import` and `import()`; not the `require` calls inside a CommonJS package, so a package counts
 * as loaded by its entry point, which our ESM imports.
 */
import { register } from 'node:module';

register('./record-modules-hooks.mjs', import.meta.url, { data: { file: process.env.RECORD_MODULES } });
